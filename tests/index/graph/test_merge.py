import pyarrow as pa
import pytest

from graphrag_ray.index.graph.merge import (
    majority_type, add_degrees, edge_endpoints, merge_elements, pair_keys)


def _entities(rows):
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("title", pa.string()), ("type", pa.string()), ("description", pa.string()),
        ("text_unit_id", pa.string())]))


def _relationships(rows):
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("source", pa.string()), ("target", pa.string()), ("description", pa.string()),
        ("strength", pa.float64()), ("text_unit_id", pa.string())]))


def test_merge_entities_and_undirected_relationships():
    entities = _entities([
        {"title": "A", "type": "PERSON", "description": "a1", "text_unit_id": "t1"},
        {"title": "A", "type": "ORGANIZATION", "description": "a2", "text_unit_id": "t2"},
        {"title": "A", "type": "PERSON", "description": "a1", "text_unit_id": "t3"},
        {"title": "B", "type": "GEO", "description": "b", "text_unit_id": "t1"},
    ])
    relationships = _relationships([
        {"source": "A", "target": "B", "description": "ab", "strength": 1.0, "text_unit_id": "t1"},
        {"source": "B", "target": "A", "description": "ba", "strength": 1.0, "text_unit_id": "t2"},
        {"source": "A", "target": "C", "description": "ac", "strength": 1.0, "text_unit_id": "t3"},
        {"source": "A", "target": "A", "description": "self", "strength": 1.0,
         "text_unit_id": "t3"},
    ])
    ents, rels, stats = merge_elements(entities, relationships)
    by_title = {row["title"]: row for row in ents.to_pylist()}
    assert by_title["A"]["type"] == "PERSON"  # majority of 2 PERSON vs 1 ORGANIZATION
    assert by_title["A"]["descriptions"] == ["a1", "a2"]
    assert by_title["A"]["frequency"] == 3
    assert by_title["C"]["type"] == "UNKNOWN"  # named only by a relationship, kept
    assert stats.entities_added_from_relationships == 1
    assert stats.self_loops_dropped == 1 and stats.type_conflicts == 1
    edges = {(r["source"], r["target"]): r for r in rels.to_pylist()}
    assert set(edges) == {("A", "B"), ("A", "C")}
    assert edges[("A", "B")]["instance_count"] == 2
    assert edges[("A", "B")]["weight"] == pytest.approx(1.0)
    assert edges[("A", "C")]["weight"] == pytest.approx(0.5)
    assert edges[("A", "B")]["descriptions"] == ["ab", "ba"]


def test_degrees():
    ents = pa.table({"title": ["A", "B", "C"]})
    rels = pa.table({"source": ["A", "A"], "target": ["B", "C"]})
    ents, rels = add_degrees(ents, rels)
    assert ents.column("degree").to_pylist() == [2, 1, 1]
    assert rels.column("combined_degree").to_pylist() == [3, 3]


def test_degrees_and_endpoints_from_chunked_columns_and_an_end_no_entity_names():
    ents = pa.table({"title": pa.chunked_array([["A", "B"], ["C", "D", "E"]])})
    rels = pa.table({"source": pa.chunked_array([["A"], ["C", "B"]]),
                     "target": pa.chunked_array([["D", "D"], ["Z"]])})
    degrees, combined = add_degrees(ents, rels)
    assert degrees.column("degree").to_pylist() == [1, 1, 1, 2, 0]
    assert combined.column("combined_degree").to_pylist() == [3, 3, 2]
    sources, targets = edge_endpoints(ents, rels.slice(0, 2))
    assert sources.tolist() == [0, 2] and targets.tolist() == [3, 3]
    with pytest.raises(KeyError, match="Z"):
        edge_endpoints(ents, rels)


@pytest.mark.parametrize("n_shards", [1, 3, 16])
def test_sharded_merge_equals_the_unsharded_merge(carol_instances, n_shards):
    from graphrag_ray.index.graph.merge import merge_sharded

    entity_instances, relationship_instances = carol_instances
    # Conflicting types and self-loops, so every merge rule crosses shard boundaries.
    entity_instances = pa.concat_tables([entity_instances, _entities([
        {"title": entity_instances.column("title")[0].as_py(), "type": "ODD",
         "description": "another view", "text_unit_id": "t-extra"}]).cast(entity_instances.schema)])
    entities, relationships, stats = merge_elements(entity_instances, relationship_instances)
    sharded_entities, sharded_relationships, sharded_stats = merge_sharded(
        entity_instances, relationship_instances, n_shards)
    assert entities.num_rows > 50 and relationships.num_rows > 50
    assert sharded_entities.equals(entities)
    assert sharded_relationships.equals(relationships)  # weights, description lists, units
    assert sharded_stats.shards == n_shards
    sharded_stats.shards = stats.shards
    assert sharded_stats == stats and stats.type_conflicts >= 1


def test_other_loses_to_any_type_an_instance_gave():
    from graphrag_ray.index.graph.merge import majority_type

    assert majority_type(["OTHER", "OTHER", "ORGANIZATION"]) == "ORGANIZATION"
    assert majority_type(["OTHER", "UNKNOWN"]) == "OTHER"
    assert majority_type(["", None]) == "UNKNOWN"


def test_a_type_with_evidence_outweighs_a_few_guesses():
    # Guessed GEO in two chunks ("in Roblox"), said ORGANIZATION in one ("worked at Roblox"):
    # the evidence wins; many more guesses ("in China" against one "China said") win back.
    assert majority_type(["GEO?", "GEO?", "ORGANIZATION"]) == "ORGANIZATION"
    assert majority_type(["GEO?"] * 4 + ["PERSON"]) == "GEO"
    assert majority_type(["GEO?", "GEO?", "PERSON?", "OTHER"]) == "GEO"
    assert majority_type(["OTHER", "OTHER"]) == "OTHER"


def test_a_place_or_an_organization_goes_to_whichever_the_other_mentions_say():
    # "at Pixar" in many chunks and "worked at Pixar" in one: an organization; "at
    # Pemberley" alone: a place; the undecided guesses never make a person of a person.
    either = "GEO|ORGANIZATION?"
    assert majority_type([either] * 6 + ["ORGANIZATION"]) == "ORGANIZATION"
    assert majority_type([either] * 6 + ["OTHER"]) == "GEO"
    assert majority_type([either] * 2 + ["GEO?", "ORGANIZATION?", "ORGANIZATION?"]) == \
        "ORGANIZATION"
    assert majority_type([either] * 15 + ["PERSON"] * 4) == "GEO"
    assert majority_type([either] * 3 + ["PERSON"] * 2) == "PERSON"


def test_a_guess_from_a_sliver_of_the_mentions_types_nothing():
    # One "in Bitcoin" among forty chunks that say nothing of it: no place. The same guess
    # in one chunk of three is heeded, and evidence is always.
    assert majority_type(["GEO?"] + ["OTHER"] * 39) == "OTHER"
    assert majority_type(["GEO?"] + ["OTHER"] * 2) == "GEO"
    assert majority_type(["ORGANIZATION"] + ["OTHER"] * 39) == "ORGANIZATION"


def test_guesses_that_weigh_exactly_as_much_as_evidence_tie_alphabetically():
    # 51 guesses at a third each weigh 17, as 17 records do: a tie, decided by name. Summed
    # as floats, the 51 thirds came to a hair over 17 and made MIARBOUM KOUNPOM (100M-token
    # synthetic corpus) a person in one merge and an organization in another.
    assert majority_type(["PERSON?"] * 51 + ["ORGANIZATION"] * 17) == "ORGANIZATION"
    assert majority_type(["PERSON?"] * 52 + ["ORGANIZATION"] * 17) == "PERSON"


def test_descriptions_and_units_are_stripped_and_kept_once_in_instance_order():
    # What Python's str.strip() strips (U+001C-U+001F included, which Arrow's whitespace
    # set leaves), empty and missing values dropped, the records' units before the mentions'.
    entities = _entities([
        {"title": "A", "type": "PERSON", "description": " a2\x1c", "text_unit_id": "t2"},
        {"title": "A", "type": None, "description": "a1", "text_unit_id": "t1 "},
        {"title": "A", "type": "", "description": "a2", "text_unit_id": "t2"},
        {"title": "A", "type": "PERSON", "description": "\u3000 ", "text_unit_id": ""},
        {"title": "A", "type": "PERSON", "description": None, "text_unit_id": "t3"},
    ])
    relationships = _relationships([
        {"source": "B", "target": "A", "description": "ba\u2028", "strength": 1.0,
         "text_unit_id": "t0"},
        {"source": "A", "target": "B", "description": " ba", "strength": 1.0,
         "text_unit_id": "t9"},
    ])
    ents, rels, stats = merge_elements(entities, relationships)
    a, b = ents.to_pylist()
    assert a["descriptions"] == ["a2", "a1"]
    assert a["text_unit_ids"] == ["t2", "t1", "t3", "t0", "t9"]
    assert a["frequency"] == 5 and a["type"] == "PERSON" and stats.type_conflicts == 0
    assert b["descriptions"] == [] and b["type"] == "UNKNOWN"
    assert b["text_unit_ids"] == ["t0", "t9"]
    (edge,) = rels.to_pylist()
    assert (edge["source"], edge["target"], edge["descriptions"], edge["instance_count"]) == \
        ("A", "B", ["ba"], 2)


def test_pair_keys_are_unordered():
    table = pa.table({"source": ["B", "A", "É"], "target": ["A", "B", "Z"]})
    assert pair_keys(table).to_pylist() == ["A\x00B", "A\x00B", "Z\x00É"]
