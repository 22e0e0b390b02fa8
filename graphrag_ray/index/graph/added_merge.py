"""An update's merge of a shard that only gained instances (no file of it changed or went):
each touched element merged from its previous row and the new instances alone.

A full merge keeps, for each distinct description, type and text unit, only its first
appearance (and a type's count). The previous row keeps those places (`merge_state`), so
the previous descriptions and types act as one instance each at the place they first
appeared, and merging them with the new instances, in place order, gives what a merge of
all the instances gives: the new files' chunks are never the carried ones', so two entries
at one place come from one side, in their order. The carried instances are not read: on a
100M-token index they were most of a 1% add's merge (every instance of every shard read,
to merge again the few elements whose names the new files share, which are the most
mentioned ones).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.arrow_rows import group_offsets, list_parts
from graphrag_ray.index.graph.merge import (
    MergeStats, _distinct_lists, _group_of, _sorted_distinct, majorities, merge_entities,
    merge_relationships, pair_keys, type_count_lists, type_counts)
from graphrag_ray.index.elements import Pieces, element_id
from graphrag_ray.index.graph.merge_state import state_stats
from graphrag_ray.index.graph.touched_merge import touched_keys, touched_nodes, with_touched


def merge_added(new: Pieces, previous: tuple[pa.Table, pa.Table, pa.Table],
                previous_loops: int, shard: int, encoding: str
                ) -> tuple[pa.Table, pa.Table, pa.Table, MergeStats, pa.Array]:
    """What `touched_merge.merge_touched` returns, for a shard whose changes are only `new`
    instances (numbered: `merge_state.numbered`): `previous` (structure with state, text
    units as rows of the status table the instances are numbered by; block) and the
    self-loop instances it counted."""
    titles, pairs = touched_keys(new)
    old_entities, old_relationships, old_block = previous
    old_entities = old_entities.filter(pc.is_in(old_entities.column("title"),
                                                value_set=titles))
    old_relationships = old_relationships.filter(pc.is_in(
        pair_keys(old_relationships), value_set=pairs)) if old_relationships.num_rows \
        else old_relationships
    # The new instances merged with state, their text units as rows (`merge.UNIT_ROW`'s).
    new_entities, _ = merge_entities(new[0], new[1], state=True)
    new_relationships, _ = merge_relationships(new[2], state=True)
    merged = with_touched(previous, titles, pairs, combine_entities(
        _with_descriptions(old_entities, old_block), new_entities), combine_relationships(
        _with_descriptions(old_relationships, old_block), new_relationships), shard, encoding)
    loops = pc.sum(pc.equal(new[2].column("source"), new[2].column("target"))).as_py() or 0
    return (*merged, state_stats(merged[0], merged[1], previous_loops + loops),
            touched_nodes(titles, new))


def _with_descriptions(structure: pa.Table, block: pa.Table) -> pa.Table:
    return structure.append_column("descriptions", block.column("descriptions").take(
        structure.column("description_row")))


def combine_entities(previous: pa.Table, new: pa.Table) -> pa.Table:
    """Entities with their state, merged from `previous` rows (with `descriptions`, and
    `unit_rows` numbered as `new`'s) and `new`, the new instances merged with state
    (`merge.merge_entities`, text units as rows): what merging all their instances gives."""
    keys = pa.chunked_array(previous.column("title").chunks + new.column("title").chunks,
                            type=pa.string())
    titles = _sorted_distinct(keys)
    groups = _group_of(keys, titles)
    n = len(titles)
    descriptions, description_units = _first_places(
        groups, [previous, new], "descriptions", "description_units", n)
    counts = _values([previous, new], "type_counts")
    owners = _owners(groups, [previous, new], "type_counts")
    places = counts.field("unit").to_numpy(zero_copy_only=False)
    order = np.argsort(places, kind="stable")
    counted = type_counts(owners[order], counts.field("type").take(order),
                          counts.field("count").to_numpy(zero_copy_only=False)[order],
                          np.arange(len(order), dtype=np.int64))
    types, _ = majorities(counted, n)
    units, record_units = _sorted_units(
        groups, [previous, new], np.concatenate([_leading(t) for t in (previous, new)]), n)
    return pa.table({
        "id": pa.array([element_id("entity", t) for t in titles.to_pylist()], pa.string()),
        "title": titles, "type": pa.array(types, pa.string()),
        "descriptions": descriptions, "unit_rows": units,
        "frequency": pc.cast(pc.list_value_length(units), pa.int64()),
        "description_units": description_units,
        "type_counts": type_count_lists(counted, places[order], n),
        "record_units": record_units})


def combine_relationships(previous: pa.Table, new: pa.Table) -> pa.Table:
    """Relationships with their state, as `combine_entities` (keyed by the endpoint pair;
    text units in place order, instance counts summed)."""
    keys = pa.chunked_array([pair_keys(previous), pair_keys(new)], type=pa.string())
    pairs = _sorted_distinct(keys)
    groups = _group_of(keys, pairs)
    n = len(pairs)
    descriptions, description_units = _first_places(
        groups, [previous, new], "descriptions", "description_units", n)
    units, _ = _sorted_units(groups, [previous, new], None, n)
    ends = pc.split_pattern(pairs, "\x00")
    sources, targets = pc.list_element(ends, 0), pc.list_element(ends, 1)
    counts = np.bincount(groups, weights=np.concatenate([
        t.column("instance_count").to_numpy() for t in (previous, new)]), minlength=n)
    return pa.table({
        "id": pa.array([element_id("relationship", s, t) for s, t in zip(
            sources.to_pylist(), targets.to_pylist())], pa.string()),
        "source": sources, "target": targets, "descriptions": descriptions,
        "unit_rows": units, "instance_count": pa.array(counts.astype(np.int64), pa.int64()),
        "description_units": description_units})


def _values(tables: list[pa.Table], column: str) -> pa.Array:
    """The values of `tables`' lists in `column`, in order."""
    return pa.concat_arrays([list_parts(t.column(column))[1] for t in tables])


def _owners(groups: np.ndarray, tables: list[pa.Table], column: str) -> np.ndarray:
    """Each list value's group, over `tables`' `column` in order (`groups`: each row's)."""
    lengths = np.concatenate([pc.list_value_length(t.column(column)).to_numpy(
        zero_copy_only=False) for t in tables]).astype(np.int64)
    return np.repeat(groups, lengths)


def _first_places(groups: np.ndarray, tables: list[pa.Table], column: str, places: str,
                  n_groups: int) -> tuple[pa.ListArray, pa.ListArray]:
    """Per group, the distinct values of `tables`' lists in `column`, in the order of their
    first place (`places`, a list beside it), with those places."""
    owners = _owners(groups, tables, column)
    values = _values(tables, column)
    at = _values(tables, places).to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.argsort(at, kind="stable")
    lists, firsts = _distinct_lists(owners[order], values.take(order), n_groups)
    return lists, pa.ListArray.from_arrays(lists.offsets,
                                           pa.array(at[order][firsts], pa.int32()))


def _sorted_units(groups: np.ndarray, tables: list[pa.Table], leading: np.ndarray | None,
                  n_groups: int) -> tuple[pa.ListArray, pa.Array]:
    """Per element (group), its distinct text units (`tables`' `unit_rows`), those that
    are `leading` anywhere first, each part ascending (as a merge lists an entity's: its
    records' units, then the units only its mentions name: `merge.merge_entities`; a
    relationship's, none leading: all ascending), and how many lead."""
    owners = _owners(groups, tables, "unit_rows")
    rows = _values(tables, "unit_rows").to_numpy(zero_copy_only=False).astype(np.int64)
    if leading is None:
        leading = np.zeros(len(rows), dtype=bool)
    units = pa.table({"group": owners, "unit": rows, "lead": leading.astype(np.int8)}
                     ).group_by(["group", "unit"]).aggregate([("lead", "max")]).sort_by(
        [("group", "ascending"), ("lead_max", "descending"), ("unit", "ascending")])
    group = units.column("group").to_numpy()
    leads = np.bincount(group, weights=units.column("lead_max").to_numpy(),
                        minlength=n_groups)
    return (pa.ListArray.from_arrays(group_offsets(group, n_groups), pa.array(
        units.column("unit").to_numpy().astype(np.int32), pa.int32())),
        pa.array(leads.astype(np.int32), pa.int32()))


def _leading(table: pa.Table) -> np.ndarray:
    """Per `unit_rows` value, whether it is among its row's first `record_units`."""
    lengths = pc.list_value_length(table.column("unit_rows")).to_numpy(
        zero_copy_only=False).astype(np.int64)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    leading = np.repeat(table.column("record_units").to_numpy().astype(np.int64), lengths)
    return (np.arange(int(lengths.sum())) - starts) < leading
