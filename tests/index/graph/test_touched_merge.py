"""An update's merge of a shard (`touched_merge`): the previous merged shard, with the
elements its changes touch merged again, is the shard a full merge of the new instances
gives, figures included."""

import random
from dataclasses import asdict

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import endpoint_mentions, merge_shard
from graphrag_ray.index.graph.touched_merge import merge_touched, shard_stats
from graphrag_ray.index.graph.unit_rows import renumbered, rows_now, with_unit_rows

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


@pytest.mark.parametrize("as_rows", [False, True], ids=["unit ids", "unit rows"])
def test_a_touched_merge_equals_a_full_merge_of_the_new_instances(as_rows):
    """`as_rows`: the kept shard lists its text units as rows of the previous version's
    status table, renumbered into the one now (`unit_rows`), as the merge's tasks give it."""
    for seed in range(6):
        rng = random.Random(seed)
        entities, relationships = _instances(rng, range(12))
        previous = split_descriptions(*merge_shard(_pieces(entities, relationships))[:2], 3,
                                      "cl100k_base")
        units_before = _units(entities, relationships)
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
        full_entities, full_relationships, full_stats = merge_shard(pieces)
        full = split_descriptions(full_entities, full_relationships, 3, "cl100k_base")
        units_now = None
        if as_rows:
            units_now = _units(now_entities, now_relationships)
            previous = (*(renumbered(with_unit_rows(table, units_before),
                                     rows_now(units_before, units_now))
                          for table in previous[:2]), previous[2])
            full = (*(with_unit_rows(table, units_now) for table in full[:2]), full[2])
        touched = merge_touched(pieces, changes, previous, 3, "cl100k_base", units_now)
        assert touched[0].column("title").to_pylist() == full[0].column("title").to_pylist()
        assert _by_element(touched[0], touched[2], "title") == \
            _by_element(full[0], full[2], "title")
        assert _by_element(touched[1], touched[2], "source,target") == \
            _by_element(full[1], full[2], "source,target")
        assert asdict(touched[3]) == asdict(full_stats)
        # In one chunk per column, as a build's: workers take rows of it per report.
        assert all(column.num_chunks == 1 for column in touched[2].columns)
        # Every entity whose row changed, or whose relationships did, is among the touched.
        before = _by_element(previous[0], previous[2], "title")
        after = _by_element(full[0], full[2], "title")
        changed = {t for (t,) in before.keys() | after.keys()
                   if before.get((t,)) != after.get((t,))}
        edges_before = {e for e in zip(*(previous[1].column(c).to_pylist() for c in (
            "source", "target", "instance_count")))}
        edges_after = {e for e in zip(*(full[1].column(c).to_pylist() for c in (
            "source", "target", "instance_count")))}
        changed |= {end for e in edges_before ^ edges_after for end in e[:2]}
        assert changed and changed <= set(touched[4].to_pylist())


def test_shard_figures_count_what_the_merge_loop_counts():
    entities, relationships = _instances(random.Random(7), range(20))
    pieces = _pieces(entities, relationships)
    assert asdict(shard_stats(pieces)) == asdict(merge_shard(pieces)[2])
