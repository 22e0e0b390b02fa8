"""A resolution folded into the merged graph by renaming mentions: an alias merged whole
goes, its relationships move to the canonical entity (joining one that already exists, or
vanishing as a self-loop); a short name resolved in some text units keeps the others, and
each description, text unit and relationship follows its mention."""

import pyarrow as pa

from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import combine_shards, merge_shard
from graphrag_ray.index.elements import partition_instances
from graphrag_ray.index.resolve.fold import merge_renamed, renamed_keys, renamed_pieces, swap_rows
from graphrag_ray.index.elements import Renames


def instances():
    entities = pa.table({
        "title": ["SHERLOCK HOLMES", "HOLMES", "WATSON", "HUDSON", "HOLMES", "MYCROFT HOLMES"],
        "type": ["PERSON", "OTHER", "PERSON", "PERSON", "PERSON", "PERSON"],
        "description": ["the detective", "smokes a pipe", "a doctor", "the landlady",
                        "the elder brother", "works for the government"],
        "text_unit_id": ["t1", "t2", "t1", "t3", "t4", "t4"], "seq": [1, 2, 1, 3, 4, 4]})
    relationships = pa.table({
        "source": ["SHERLOCK HOLMES", "HOLMES", "HOLMES", "HOLMES", "HOLMES"],
        "target": ["WATSON", "WATSON", "HUDSON", "SHERLOCK HOLMES", "WATSON"],
        "description": ["friends", "shares rooms", "tenant", "one and the same", "met once"],
        "text_unit_id": ["t1", "t2", "t3", "t2", "t4"], "strength": [1.0] * 5,
        "seq": [1, 2, 3, 2, 4]})
    return partition_instances(entities, relationships, 2)


def fold(renames):
    shards = instances()
    merged = []
    for number, pieces in enumerate(shards):
        e, r, stats = merge_shard(pieces)
        e, r, block = split_descriptions(e, r, number, "cl100k_base")
        merged.append(((e, r, stats), block))
    entities, relationships, _ = combine_shards([m for m, _ in merged])
    titles, pairs = renamed_keys(relationships, renames)
    renamed = [renamed_pieces(pieces, renames, titles, pairs) for pieces in shards]
    new_entities, new_relationships, stats, block = merge_renamed(renamed, 2, "cl100k_base")
    entities, relationships, fold_stats = swap_rows(
        entities, relationships, new_entities, new_relationships, titles, pairs, renames)
    blocks = [b for _, b in merged] + [block]
    return ({e["title"]: e for e in entities.to_pylist()},
            {(r["source"], r["target"]): r for r in relationships.to_pylist()},
            blocks, fold_stats, stats)


def descriptions(blocks, row):
    return blocks[row["description_shard"]].column("descriptions")[
        row["description_row"]].as_py()


def test_an_alias_merged_whole_folds_into_its_canonical_entity():
    entities, edges, blocks, stats, merge_stats = fold(
        Renames(everywhere={"HOLMES": "SHERLOCK HOLMES"}))
    assert set(entities) == {"SHERLOCK HOLMES", "WATSON", "HUDSON", "MYCROFT HOLMES"}
    holmes = entities["SHERLOCK HOLMES"]
    assert holmes["aliases"] == ["HOLMES"] and holmes["type"] == "PERSON"
    assert sorted(holmes["text_unit_ids"]) == ["t1", "t2", "t3", "t4"]
    assert holmes["frequency"] == 4
    assert descriptions(blocks, holmes) == ["the detective", "smokes a pipe",
                                            "the elder brother"]  # in chunk order
    assert entities["WATSON"]["aliases"] == []

    assert set(edges) == {("HUDSON", "SHERLOCK HOLMES"), ("SHERLOCK HOLMES", "WATSON")}
    both = edges[("SHERLOCK HOLMES", "WATSON")]
    assert both["instance_count"] == 3 and both["weight"] == 1.0
    assert descriptions(blocks, both) == ["friends", "shares rooms", "met once"]
    assert edges[("HUDSON", "SHERLOCK HOLMES")]["weight"] == 1 / 3
    assert (stats.entities_merged, stats.relationships_merged) == (1, 2)
    assert merge_stats.self_loops_dropped == 1


def test_a_short_name_resolved_in_some_units_keeps_the_others():
    # HOLMES in t4 is Mycroft (that text unit names him); elsewhere it is Sherlock.
    entities, edges, blocks, stats, _ = fold(Renames(in_units={"HOLMES": {
        "t2": "SHERLOCK HOLMES", "t3": "SHERLOCK HOLMES", "t4": "MYCROFT HOLMES"}}))
    assert "HOLMES" not in entities and stats.entities_merged == 1
    assert entities["MYCROFT HOLMES"]["text_unit_ids"] == ["t4"]
    assert descriptions(blocks, entities["MYCROFT HOLMES"]) == [
        "the elder brother", "works for the government"]
    assert sorted(entities["SHERLOCK HOLMES"]["text_unit_ids"]) == ["t1", "t2", "t3"]
    assert entities["SHERLOCK HOLMES"]["aliases"] == entities["MYCROFT HOLMES"]["aliases"] \
        == ["HOLMES"]
    assert edges[("MYCROFT HOLMES", "WATSON")]["text_unit_ids"] == ["t4"]
    assert edges[("SHERLOCK HOLMES", "WATSON")]["instance_count"] == 2

    entities, edges, blocks, _, _ = fold(Renames(in_units={"HOLMES": {"t4": "MYCROFT HOLMES"}}))
    assert sorted(entities["HOLMES"]["text_unit_ids"]) == ["t2", "t3"]  # not resolved
    assert descriptions(blocks, entities["HOLMES"]) == ["smokes a pipe"]
    # Its one PERSON mention went to Mycroft: what is left has no type of its own and takes
    # the type of the full name it was resolved to.
    assert entities["HOLMES"]["type"] == "PERSON"
    assert ("HOLMES", "SHERLOCK HOLMES") in edges and ("HOLMES", "WATSON") in edges


def test_a_split_name_gives_its_mentions_in_another_context_a_name_of_their_own():
    # WATSON in t4 is another Watson: split after HOLMES is merged into SHERLOCK HOLMES.
    renames = Renames(everywhere={"HOLMES": "SHERLOCK HOLMES"},
                      split={"WATSON": {"t4": "WATSON (2)"}})
    assert renames.rename(["WATSON", "WATSON", "HOLMES"], ["t1", "t4", "t4"]) == [
        "WATSON", "WATSON (2)", "SHERLOCK HOLMES"]
    assert renames.names_of("WATSON") == {"WATSON", "WATSON (2)"}
    entities, edges, blocks, stats, _ = fold(renames)
    assert stats.entities_merged == 1  # HOLMES; WATSON keeps its other mentions
    assert entities["WATSON"]["text_unit_ids"] == ["t1", "t2"]  # (t2: a relationship's)
    assert entities["WATSON (2)"]["text_unit_ids"] == ["t4"]
    assert entities["WATSON (2)"]["aliases"] == ["WATSON"]
    assert descriptions(blocks, entities["WATSON"]) == ["a doctor"]
    assert edges[("SHERLOCK HOLMES", "WATSON (2)")]["text_unit_ids"] == ["t4"]
    assert edges[("SHERLOCK HOLMES", "WATSON")]["text_unit_ids"] == ["t1", "t2"]


def test_an_alias_merged_into_a_short_name_follows_it_unit_by_unit():
    # MR HOLMES-like: HUDSON merged whole into HOLMES (a mechanical stand-in), and HOLMES
    # resolved in t3 to Sherlock and in t4 to Mycroft: HUDSON's mention in t3 goes to
    # Sherlock with it.
    renames = Renames(everywhere={"HUDSON": "HOLMES"},
                      in_units={"HOLMES": {"t3": "SHERLOCK HOLMES", "t4": "MYCROFT HOLMES"}})
    assert renames.rename(["HUDSON", "HOLMES", "HOLMES"], ["t3", "t2", "t4"]) == [
        "SHERLOCK HOLMES", "HOLMES", "MYCROFT HOLMES"]
    assert renames.names_of("HUDSON") == {"HOLMES", "SHERLOCK HOLMES", "MYCROFT HOLMES"}
    entities, edges, blocks, stats, _ = fold(renames)
    assert "HUDSON" not in entities
    assert sorted(entities["SHERLOCK HOLMES"]["text_unit_ids"]) == ["t1", "t2", "t3"]
    assert "the landlady" in descriptions(blocks, entities["SHERLOCK HOLMES"])
    assert entities["HOLMES"]["text_unit_ids"] == ["t2"]
