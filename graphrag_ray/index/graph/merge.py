"""Element instances -> merged elements.

Entities match by normalized name. When instances disagree on the type, the most frequent type
wins (ties: alphabetical; OTHER only when no instance says more) and every instance's
description is kept in `descriptions`.
Relationships match by their unordered endpoint pair (the graph is undirected); self-loops are
dropped and counted; an endpoint no entity record named becomes an entity of type UNKNOWN.
Edge weight = instance count / largest instance count (the paper's normalized count).
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.arrow_rows import group_offsets, one_array, sorted_rows
from graphrag_ray.index.elements import (
    EITHER, GUESSED_TYPE, Pieces, element_id, partition_instances)
from graphrag_ray.index.graph.unit_rows import UNIT_IDS, UNIT_ROWS


def description_digest(key: tuple[str, ...], descriptions: list[str]) -> int:
    """What a report reads of one element, as a signed 64-bit number: its key (an entity's
    title and type, a relationship's ordered ends, a claim's id) and its description list.
    Equal digests across versions: the element did not change (`reports/kept_reports`)."""
    text = "\x00".join(key) + "\x01" + "\x1f".join(descriptions)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(),
                          "big", signed=True)


@dataclass
class MergeStats:
    entity_instances: int = 0
    relationship_instances: int = 0
    self_loops_dropped: int = 0
    entities_added_from_relationships: int = 0
    type_conflicts: int = 0
    shards: int = 0  # hash partitions merged (set by the merge functions, not summed)


def unique_texts(values: list[str]) -> list[str]:
    return [v for v in dict.fromkeys(v.strip() for v in values if v and v.strip())]


# A guess counts, less than evidence: weighed equal, guesses outvote evidence; never
# counted, one strong cue outvotes many guesses (a PERSON cue made CHINA a person against
# its many "in China"). Chosen on the labelled types (`tests/data/resolution_labels`).
GUESS_WEIGHT = Fraction(1, 3)  # exact: ties between weights are decided as counted
# Guesses count only where at least this share of a name's instances make one: a stray "in
# Bitcoin", or a transcribed e-mail address "at BehindTheTech", says nothing of a name
# mentioned in a hundred chunks that say nothing more of it; too high a share, and places
# mentioned a few times with "in" lose their one clue.
MIN_GUESS_SHARE = 0.1


def majority_type(types: list[str]) -> str:
    """The type with the most weight over the instances, a guess weighing `GUESS_WEIGHT`
    (ties: alphabetical); OTHER and UNKNOWN only when no instance gave a type of its own."""
    return _majority_of(Counter(types))


def _majority_of(counts: Counter) -> str:
    """`majority_type` of instances given as each type's count, the types in the order they
    first appear (an undecided type goes to whichever of its options weighs more so far)."""
    weights: Counter = Counter()
    undecided: Counter = Counter()  # "GEO|ORGANIZATION" -> weight
    said = {kind: n for kind, n in counts.items() if kind}
    guesses = sum(n for kind, n in said.items() if kind.endswith(GUESSED_TYPE))
    heeded = guesses >= MIN_GUESS_SHARE * sum(said.values())
    for kind, n in said.items():
        if kind not in ("OTHER", "UNKNOWN"):
            guessed = kind.endswith(GUESSED_TYPE)
            if guessed and not heeded:
                continue
            kind = kind[:-1] if guessed else kind
            (undecided if EITHER in kind else weights)[kind] += \
                n * GUESS_WEIGHT if guessed else n
    for kinds, weight in undecided.items():
        options = kinds.split(EITHER)
        weights[max(options, key=lambda k: (weights[k], -options.index(k)))] += weight
    totals = weights or Counter(said)
    if not totals:
        return "UNKNOWN"
    best = max(totals.values())
    return min(t for t, c in totals.items() if c == best)


# A merge's state (`merge_entities(state=True)`): what merging an element again needs besides
# its instances' keys, so that an update that only adds instances to it merges its previous
# row with the new instances (`added_merge`) instead of reading all its instances again.
# Places are text unit rows (`UNIT_ROW`, each instance's chunk as a row of the build's status
# table, which is in corpus order): where each description, and each type, first appears.
# A merge with state lists the elements' text units as those rows too (`unit_rows.UNIT_ROWS`),
# not as ids to be looked up again.
UNIT_ROW = "unit_row"
ENTITY_STATE = ("description_units", "type_counts", "record_units")
RELATIONSHIP_STATE = ("description_units",)


def merge_elements(entity_instances: pa.Table, relationship_instances: pa.Table
                   ) -> tuple[pa.Table, pa.Table, MergeStats]:
    """Returns (entities, relationships) with description lists, before summarization."""
    return merge_sharded(entity_instances, relationship_instances, 1)


def merge_shard(pieces: Pieces, state: bool = False) -> tuple[pa.Table, pa.Table, MergeStats]:
    entity_instances, mentions, relationship_instances = pieces
    entities, entity_stats = merge_entities(entity_instances, mentions, state)
    relationships, relationship_stats = merge_relationships(relationship_instances, state)
    return entities, relationships, _sum_stats([entity_stats, relationship_stats])


BY_TITLE = [("title", "ascending")]
BY_ENDS = [("source", "ascending"), ("target", "ascending")]


def combine_shards(merged: list[tuple[pa.Table, pa.Table, MergeStats]]
                   ) -> tuple[pa.Table, pa.Table, MergeStats]:
    """The shards' results as one graph: one order however many shards (by title, and by
    endpoint pair), and weights normalized by the global largest instance count."""
    entities = sorted_rows(pa.concat_tables([e for e, _, _ in merged]), BY_TITLE)
    relationships = sorted_rows(pa.concat_tables([r for _, r, _ in merged]), BY_ENDS)
    stats = _sum_stats([s for _, _, s in merged])
    stats.shards = len(merged)
    return entities, with_weights(relationships), stats


def merge_sharded(entity_instances: pa.Table, relationship_instances: pa.Table, n_shards: int,
                  map_shards: Callable[[Callable, list], list] = lambda fn, items: list(map(fn, items))
                  ) -> tuple[pa.Table, pa.Table, MergeStats]:
    """The same result as `merge_elements`, merged in `n_shards` independent pieces;
    `map_shards(fn, shards)` runs them (in parallel on Ray)."""
    return combine_shards(map_shards(merge_shard, partition_instances(
        entity_instances, relationship_instances, n_shards)))


def pair_keys(relationships: pa.Table) -> pa.ChunkedArray | pa.Array:
    """Each relationship's unordered endpoint pair as one string, `pair_key` in Arrow (UTF-8
    bytes order as code points do; titles hold no NUL, so keys sort as their pairs do)."""
    source, target = relationships.column("source"), relationships.column("target")
    first = pc.less_equal(source, target)
    return pc.binary_join_element_wise(pc.if_else(first, source, target),
                                       pc.if_else(first, target, source), "\x00")


def _sum_stats(parts: list[MergeStats]) -> MergeStats:
    total = MergeStats()
    for part in parts:
        for name, value in asdict(part).items():
            setattr(total, name, getattr(total, name) + value)
    return total


def merge_entities(entity_instances: pa.Table, mentions: pa.Table, state: bool = False
                   ) -> tuple[pa.Table, MergeStats]:
    """Entities by title (in title order): the majority type, the distinct descriptions and
    text units in instance order (the records' units, then the mentions'). Grouped in Arrow,
    not a row at a time: an update merges again every title its changes touch, with all its
    instances, and the most mentioned titles hold most instances. `state`: the instances are numbered (`UNIT_ROW`),
    and each entity keeps what merging it again from its row needs (`ENTITY_STATE`)."""
    stats = MergeStats(entity_instances=entity_instances.num_rows)
    named = entity_instances.column("title")
    titles = _sorted_distinct(pa.chunked_array(named.chunks + mentions.column("title").chunks,
                                               type=pa.string()))
    stats.entities_added_from_relationships = len(titles) - len(pc.unique(named))
    of_record = _group_of(named, titles)
    counted = type_counts(of_record, entity_instances.column("type"),
                          np.ones(len(of_record), np.int64),
                          np.arange(len(of_record), dtype=np.int64))
    types, stats.type_conflicts = majorities(counted, len(titles))
    descriptions, description_firsts = _distinct_lists(
        of_record, entity_instances.column("description"), len(titles))
    unit = UNIT_ROW if state else "text_unit_id"
    units, unit_firsts = _distinct_lists(
        np.concatenate([of_record, _group_of(mentions.column("title"), titles)]),
        pa.chunked_array(entity_instances.column(unit).chunks + mentions.column(unit).chunks,
                         type=entity_instances.schema.field(unit).type),
        len(titles))
    columns = {
        "id": pa.array([element_id("entity", t) for t in titles.to_pylist()], pa.string()),
        "title": titles, "type": pa.array(types, pa.string()),
        "descriptions": descriptions, (UNIT_ROWS if state else UNIT_IDS): units,
        "frequency": pc.cast(pc.list_value_length(units), pa.int64()),
    }
    if state:
        rows = one_array(entity_instances.column(UNIT_ROW)).to_numpy()
        columns["description_units"] = pa.ListArray.from_arrays(
            descriptions.offsets, pa.array(rows[description_firsts], pa.int32()))
        columns["type_counts"] = type_count_lists(counted, rows, len(titles))
        unit_groups = np.repeat(np.arange(len(titles)), np.diff(units.offsets.to_numpy()))
        columns["record_units"] = pa.array(np.bincount(
            unit_groups, weights=unit_firsts < len(of_record), minlength=len(titles)
        ).astype(np.int32), pa.int32())
    return pa.table(columns), stats


def merge_relationships(relationship_instances: pa.Table, state: bool = False
                        ) -> tuple[pa.Table, MergeStats]:
    """Merged by unordered endpoint pair (in pair order), with instance counts and the
    distinct descriptions and text units in instance order; `with_weights` adds weights.
    Grouped in Arrow, as `merge_entities`; `state` as there (`RELATIONSHIP_STATE`)."""
    stats = MergeStats(relationship_instances=relationship_instances.num_rows)
    source, target = (relationship_instances.column("source"),
                      relationship_instances.column("target"))
    loops = pc.equal(source, target)
    stats.self_loops_dropped = pc.sum(loops).as_py() or 0
    instances = relationship_instances.filter(pc.invert(loops))
    keys = pair_keys(instances)
    pairs = _sorted_distinct(keys)  # (a pair's key sorts as the pair does)
    group = _group_of(keys, pairs)
    ends = pc.split_pattern(pairs, "\x00")
    sources, targets = pc.list_element(ends, 0), pc.list_element(ends, 1)
    descriptions, firsts = _distinct_lists(group, instances.column("description"), len(pairs))
    merged = pa.table({
        "id": pa.array([element_id("relationship", s, t) for s, t in zip(
            sources.to_pylist(), targets.to_pylist())], pa.string()),
        "source": sources, "target": targets, "descriptions": descriptions,
        UNIT_IDS: _distinct_lists(group, instances.column(UNIT_ROW if state else "text_unit_id"),
                                  len(pairs))[0],
        "instance_count": pa.array(np.bincount(group, minlength=len(pairs)), pa.int64()),
    }, schema=_RELATIONSHIPS_SCHEMA if not state else None)
    if state:
        merged = merged.rename_columns([UNIT_ROWS if name == UNIT_IDS else name
                                        for name in merged.column_names])
        rows = one_array(instances.column(UNIT_ROW)).to_numpy()
        merged = merged.append_column("description_units", pa.ListArray.from_arrays(
            descriptions.offsets, pa.array(rows[firsts], pa.int32())))
    return merged, stats


_RELATIONSHIPS_SCHEMA = pa.schema([
    ("id", pa.string()), ("source", pa.string()), ("target", pa.string()),
    ("descriptions", pa.list_(pa.string())), ("text_unit_ids", pa.list_(pa.string())),
    ("instance_count", pa.int64())])
# What Python's `str.strip()` strips (Arrow's own whitespace set differs: U+001C-U+001F).
_WHITESPACE = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())


def _sorted_distinct(values: pa.ChunkedArray) -> pa.Array:
    """Distinct strings in code point order (UTF-8 bytes sort as code points do)."""
    distinct = pc.unique(values)
    return distinct.take(pc.sort_indices(distinct))


def _group_of(keys: pa.Array | pa.ChunkedArray, distinct: pa.Array) -> np.ndarray:
    """Each key's row in `distinct` (which holds them all)."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    return np.asarray(pc.index_in(keys, value_set=distinct).to_numpy(), dtype=np.int64)


def _distinct_lists(groups: np.ndarray, values: pa.Array | pa.ChunkedArray, n_groups: int
                    ) -> tuple[pa.ListArray, np.ndarray]:
    """Per group 0..n_groups-1 (`groups`: each value's), its values each once at its first
    place, without nulls (and strings stripped, without empty ones): `unique_texts` of each
    group's values in order; and where each list value first came (its row in `values`)."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        values = pc.utf8_trim(values, characters=_WHITESPACE)
        valid = pc.fill_null(pc.greater(pc.utf8_length(values), 0), False)
    else:
        valid = pc.is_valid(values)
    rows = pa.table({"group": pa.array(groups, pa.int64()), "value": values,
                     "row": pa.array(np.arange(len(groups), dtype=np.int64))})
    rows = rows.filter(valid)
    first = rows.group_by(["group", "value"]).aggregate([("row", "min")]).sort_by(
        [("group", "ascending"), ("row_min", "ascending")])
    return (pa.ListArray.from_arrays(group_offsets(first.column("group").to_numpy(), n_groups),
                                     first.column("value").combine_chunks().cast(values.type)),
            first.column("row_min").to_numpy())


def type_counts(groups: np.ndarray, types: pa.Array | pa.ChunkedArray, counts: np.ndarray,
                order: np.ndarray) -> pa.Table:
    """Per group and type: how many instances say it (`counts` each) and the least `order`
    of them (where it first appears), rows by group, then first appearance."""
    return pa.table({
        "group": pa.array(groups, pa.int64()), "type": types,
        "count": pa.array(counts, pa.int64()), "order": pa.array(order, pa.int64())}).group_by(
        ["group", "type"]).aggregate([("count", "sum"), ("order", "min")]).sort_by(
        [("group", "ascending"), ("order_min", "ascending")])


def majorities(counted: pa.Table, n_groups: int) -> tuple[list[str], int]:
    """Per group, `majority_type` of its instances' types (from each type's count, the types in
    the order they first appear, as `majority_type` meets them: `type_counts`), and how many
    groups had more than one type."""
    per_group: list[Counter] = [Counter() for _ in range(n_groups)]
    for group, kind, count in zip(counted.column("group").to_pylist(),
                                  counted.column("type").to_pylist(),
                                  counted.column("count_sum").to_pylist()):
        per_group[group][kind] += count
    conflicts = sum(1 for counts in per_group if sum(1 for kind in counts if kind) > 1)
    return [_majority_of(counts) for counts in per_group], conflicts


TYPE_COUNT = pa.struct([("type", pa.string()), ("count", pa.int64()), ("unit", pa.int32())])


def type_count_lists(counted: pa.Table, unit_of_order: np.ndarray, n_groups: int
                     ) -> pa.ListArray:
    """`type_counts` as each group's list of (type, count, the text unit row it first
    appears in: `unit_of_order` at its least order)."""
    units = unit_of_order[counted.column("order_min").to_numpy()]
    return pa.ListArray.from_arrays(group_offsets(
        counted.column("group").to_numpy(), n_groups), pa.StructArray.from_arrays(
        [counted.column("type").combine_chunks().cast(pa.string()),
         counted.column("count_sum").combine_chunks(), pa.array(units, pa.int32())],
        fields=list(TYPE_COUNT)))


def with_weights(relationships: pa.Table) -> pa.Table:
    """Weight = instance count / the largest instance count in the whole graph."""
    counts = relationships.column("instance_count")
    max_count = (pc.max(counts).as_py() if relationships.num_rows else None) or 1
    return relationships.append_column(
        "weight", pc.divide(pc.cast(counts, pa.float64()), float(max_count)))


def edge_endpoints(entities: pa.Table, relationships: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Each relationship's source and target as row indices into `entities` (titles are
    distinct); a KeyError names an end that is no entity's title."""
    titles = entities.column("title").combine_chunks()
    return tuple(_rows_of(relationships.column(end), titles)
                 for end in ("source", "target"))


def _rows_of(names: pa.ChunkedArray, titles: pa.Array) -> np.ndarray:
    rows = pc.index_in(names, value_set=titles)
    if rows.null_count:
        raise KeyError(names.filter(pc.is_null(rows))[0].as_py())
    return np.asarray(rows.to_numpy(), dtype=np.int64)


def add_degrees(entities: pa.Table, relationships: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Node degree (distinct neighbours: relationships are distinct pairs) and edge combined
    degree (source + target degree), counted in Arrow, not in a Python loop."""
    ends = pa.chunked_array(relationships.column("source").chunks +
                            relationships.column("target").chunks, type=pa.string())
    counted = pc.value_counts(ends)
    names = counted.field("values")
    counts = np.append(counted.field("counts").to_numpy(), 0)  # (the last: no relationship)

    def degree(titles: pa.ChunkedArray) -> np.ndarray:
        rows = pc.fill_null(pc.index_in(titles, value_set=names), len(names))
        return counts[np.asarray(rows.to_numpy(), dtype=np.int64)]

    entities = entities.append_column(
        "degree", pa.array(degree(entities.column("title")), pa.int64()))
    relationships = relationships.append_column("combined_degree", pa.array(
        degree(relationships.column("source")) + degree(relationships.column("target")),
        pa.int64()))
    return entities, relationships
