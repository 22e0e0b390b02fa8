"""A resolution folded into the merged graph: the alias's row goes, its relationships move to
the canonical entity (joining one that already exists, or vanishing as a self-loop), and the
joined description lists are built from the merge's blocks."""

import pyarrow as pa

from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import combine_shards, merge_shard, partition_instances
from graphrag_ray.index.resolve.clusters import Alias, Resolution
from graphrag_ray.index.resolve.fold import fold_descriptions, fold_structure, with_folded_counts


def merged_graph():
    entities = pa.table({
        "title": ["SHERLOCK HOLMES", "HOLMES", "WATSON", "HUDSON"],
        "type": ["PERSON", "OTHER", "PERSON", "PERSON"],
        "description": ["the detective", "smokes a pipe", "a doctor", "the landlady"],
        "text_unit_id": ["t1", "t2", "t1", "t3"]})
    relationships = pa.table({
        "source": ["SHERLOCK HOLMES", "HOLMES", "HOLMES", "HOLMES"],
        "target": ["WATSON", "WATSON", "HUDSON", "SHERLOCK HOLMES"],
        "description": ["friends", "shares rooms", "tenant", "one and the same"],
        "text_unit_id": ["t1", "t2", "t3", "t2"], "strength": [1.0] * 4})
    e, r, stats = merge_shard(partition_instances(entities, relationships, 1)[0])
    e, r, block = split_descriptions(e, r, 0, "cl100k_base")
    e, r, _ = combine_shards([(e, r, stats)])
    return e, r, [block]


def test_an_alias_folds_into_its_canonical_entity():
    entities, relationships, blocks = merged_graph()
    titles = entities.column("title").to_pylist()
    resolution = Resolution([Alias(titles.index("HOLMES"), titles.index("SHERLOCK HOLMES"),
                                   0.9, "short_form", "")])
    entities, relationships, work, stats = fold_structure(entities, relationships, resolution, 1)
    figures, block = fold_descriptions(work, "cl100k_base", *blocks)
    entities = with_folded_counts(entities, 1, figures)
    relationships = with_folded_counts(relationships, 1, figures)

    rows = {e["title"]: e for e in entities.to_pylist()}
    assert set(rows) == {"SHERLOCK HOLMES", "WATSON", "HUDSON"}
    holmes = rows["SHERLOCK HOLMES"]
    assert holmes["aliases"] == ["HOLMES"] and holmes["type"] == "PERSON"
    # Its own and its relationships' text units.
    assert holmes["text_unit_ids"] == ["t1", "t2", "t3"] and holmes["frequency"] == 3
    assert holmes["description_count"] == 2
    assert block.column("descriptions")[holmes["description_row"]].as_py() == [
        "the detective", "smokes a pipe"]  # the canonical's own first

    edges = {(r["source"], r["target"]): r for r in relationships.to_pylist()}
    assert set(edges) == {("HUDSON", "SHERLOCK HOLMES"), ("SHERLOCK HOLMES", "WATSON")}
    both = edges[("SHERLOCK HOLMES", "WATSON")]
    assert both["instance_count"] == 2 and both["weight"] == 1.0
    assert block.column("descriptions")[both["description_row"]].as_py() == [
        "friends", "shares rooms"]
    assert edges[("HUDSON", "SHERLOCK HOLMES")]["weight"] == 0.5
    assert (stats.entities_merged, stats.relationships_merged, stats.self_loops_dropped) == \
        (1, 1, 1)
