"""An update's merge of a shard (`touched_merge`, `added_merge`): the previous merged shard,
with the elements its changes touch merged again, is the shard a full merge of the new
instances gives, figures and state included."""

import random
from dataclasses import asdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import merge_shard
from graphrag_ray.index.elements import endpoint_mentions
from graphrag_ray.index.graph.added_merge import merge_added
from graphrag_ray.index.graph.merge_state import numbered, renumbered_state, state_stats
from graphrag_ray.index.graph.touched_merge import merge_touched
from graphrag_ray.index.graph.unit_rows import renumbered, rows_now

NAMES = ["ADA", "BOB", "CARL", "DORA", "ÉMILE", "FAY", "GUS", "HAL", "Zoë", "zed"]
TYPES = ["PERSON", "ORGANIZATION", "", "GEO"]


def _instances(rng: random.Random, files: range) -> tuple[pa.Table, pa.Table]:
    """Entity and relationship instances of some files, in chunk (`seq`) order: names and
    descriptions repeat across files, so merged elements hold several of each."""
    entities, relationships = [], []
    for file in files:
        for chunk in range(3):
            seq, unit = file * 100 + chunk, f"u{file}-{chunk}"
            for _ in range(rng.randint(1, 4)):
                entities.append({"title": rng.choice(NAMES), "type": rng.choice(TYPES),
                                 "description": f"d{rng.randint(0, 5)}",
                                 "text_unit_id": unit, "seq": seq})
            for _ in range(rng.randint(0, 3)):
                relationships.append({"source": rng.choice(NAMES + ["ONLY LINKED"]),
                                      "target": rng.choice(NAMES), "strength": 1.0,
                                      "description": f"r{rng.randint(0, 3)}",
                                      "text_unit_id": unit, "seq": seq})
    return (pa.Table.from_pylist(entities), pa.Table.from_pylist(relationships))


def _pieces(entities: pa.Table, relationships: pa.Table):
    return entities, endpoint_mentions(relationships), relationships


def _by_element(structure: pa.Table, block: pa.Table, key: str) -> dict:
    rows = structure.drop_columns(["description_row"]).to_pylist()
    lists = block.take(structure.column("description_row")).to_pylist()
    return {tuple(row[k] for k in key.split(",")): (row, text) for row, text in zip(rows, lists)}


def _keys(table: pa.Table, columns: list[str]) -> pa.Table:
    return table.select(columns)


def _units(*tables: pa.Table) -> pa.Array:
    """The text units of `tables`' instances, in a status table's order (by `seq`)."""
    rows = pa.concat_tables([t.select(["seq", "text_unit_id"]) for t in tables])
    return pc.unique(rows.sort_by("seq").column("text_unit_id"))


def _numbered(pieces, units: pa.Array):
    """`pieces` numbered by the status table whose text units, in `seq` order, are `units`
    (the tests' seq is its chunk's file * 100 + chunk, as `_units` orders them)."""
    seqs = np.array([int(u[1:].split("-")[0]) * 100 + int(u.split("-")[1])
                     for u in units.to_pylist()], dtype=np.int64)
    return numbered(pieces, seqs)


def _merged(pieces, units: pa.Array):
    """A shard as the merge's tasks keep it: structure with state, text units as rows of
    `units`; and block."""
    entities, relationships, stats = merge_shard(_numbered(pieces, units), state=True)
    entities, relationships, block = split_descriptions(entities, relationships, 3,
                                                        "cl100k_base")
    return entities, relationships, block, stats


def _renumbered(previous, units_before: pa.Array, units_now: pa.Array):
    moved = rows_now(units_before, units_now)
    return (*(renumbered_state(renumbered(table, moved), moved) for table in previous[:2]),
            previous[2])


def _same_shard(merged, full) -> None:
    assert merged[0].column("title").to_pylist() == full[0].column("title").to_pylist()
    assert merged[0].column_names == full[0].column_names
    assert merged[1].column_names == full[1].column_names
    assert _by_element(merged[0], merged[2], "title") == _by_element(full[0], full[2], "title")
    assert _by_element(merged[1], merged[2], "source,target") == \
        _by_element(full[1], full[2], "source,target")
    assert asdict(merged[3]) == asdict(full[3])
    # In one chunk per column, as a build's: workers take rows of it per report.
    assert all(column.num_chunks == 1 for column in merged[2].columns)


def _changed_titles(previous, full) -> set:
    """Every entity whose row changed, or whose relationships did."""
    before = _by_element(previous[0], previous[2], "title")
    after = _by_element(full[0], full[2], "title")
    changed = {t for (t,) in before.keys() | after.keys() if before.get((t,)) != after.get((t,))}
    edges_before = {e for e in zip(*(previous[1].column(c).to_pylist() for c in (
        "source", "target", "instance_count")))}
    edges_after = {e for e in zip(*(full[1].column(c).to_pylist() for c in (
        "source", "target", "instance_count")))}
    return changed | {end for e in edges_before ^ edges_after for end in e[:2]}


def test_a_touched_merge_equals_a_full_merge_of_the_new_instances():
    """The kept shard lists its text units, and its state's places, as rows of the previous
    version's status table, renumbered into the one now (`unit_rows`, `merge_state`), as
    the merge's tasks give it."""
    for seed in range(6):
        rng = random.Random(seed)
        entities, relationships = _instances(rng, range(12))
        units_before = _units(entities, relationships)
        previous = _merged(_pieces(entities, relationships), units_before)[:3]
        # Files 4 and 9 changed (their instances dropped, new ones extracted), file 12 added.
        gone = lambda table: pc.is_in(pc.divide(table.column("seq"), 100),  # noqa: E731
                                      value_set=pa.array([4, 9]))
        added_entities, added_relationships = _instances(rng, range(4, 13, 4))
        now_entities = pa.concat_tables([entities.filter(pc.invert(gone(entities))),
                                         added_entities]).sort_by("seq")
        now_relationships = pa.concat_tables([
            relationships.filter(pc.invert(gone(relationships))),
            added_relationships]).sort_by("seq")
        dropped_relationships = relationships.filter(gone(relationships))
        changes = (
            pa.concat_tables([_keys(entities.filter(gone(entities)), ["title"]),
                              _keys(added_entities, ["title"])]),
            _keys(pa.concat_tables([endpoint_mentions(dropped_relationships),
                                    endpoint_mentions(added_relationships)]), ["title"]),
            pa.concat_tables([_keys(dropped_relationships, ["source", "target"]),
                              _keys(added_relationships, ["source", "target"])]))
        pieces = _pieces(now_entities, now_relationships)
        units_now = _units(now_entities, now_relationships)
        full = _merged(pieces, units_now)
        previous = _renumbered(previous, units_before, units_now)
        touched = merge_touched(_numbered(pieces, units_now), changes, previous, 3,
                                "cl100k_base")
        _same_shard(touched, full)
        changed = _changed_titles(previous, full)
        assert changed and changed <= set(touched[4].to_pylist())


def test_a_shard_that_only_gained_instances_merges_without_the_carried_ones():
    """Files added among the kept ones (and at the end), repeating their names,
    descriptions and types: the previous rows with the new instances (`added_merge`) give
    what a full merge gives, state included, so that the next update can do it again."""
    for seed in range(8):
        rng = random.Random(100 + seed)
        entities, relationships = _instances(rng, range(0, 24, 2))
        units_before = _units(entities, relationships)
        previous = _merged(_pieces(entities, relationships), units_before)
        for added in (range(5, 12, 3), range(1, 26, 6)):
            new_entities, new_relationships = _instances(rng, added)
            entities = pa.concat_tables([entities, new_entities]).sort_by("seq")
            relationships = pa.concat_tables([relationships, new_relationships]).sort_by("seq")
            units_now = _units(entities, relationships)
            full = _merged(_pieces(entities, relationships), units_now)
            kept = _renumbered(previous[:3], units_before, units_now)
            added_merge = merge_added(
                _numbered(_pieces(new_entities, new_relationships), units_now), kept,
                previous[3].self_loops_dropped, 3, "cl100k_base")
            _same_shard(added_merge, full)
            changed = _changed_titles(kept, full)
            assert changed and changed <= set(added_merge[4].to_pylist())
            previous, units_before = added_merge, units_now


def test_shard_figures_from_the_state_count_what_the_merge_loop_counts():
    entities, relationships = _instances(random.Random(7), range(20))
    pieces = _pieces(entities, relationships)
    units = _units(entities, relationships)
    merged_entities, merged_relationships, stats = merge_shard(_numbered(pieces, units),
                                                               state=True)
    assert asdict(state_stats(merged_entities, merged_relationships,
                              stats.self_loops_dropped)) == asdict(merge_shard(pieces)[2])
