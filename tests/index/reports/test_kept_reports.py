"""Which reports an update keeps: communities whose elements kept their descriptions, with
every sub-community kept; and the digests an adopted index's tables give are those our merge
gives for the same elements."""

import numpy as np
import pyarrow as pa

from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import edge_endpoints, merge_elements
from graphrag_ray import schema
from graphrag_ray.index.reports.kept_reports import (
    KeptReports, claim_digest, community_digests, digests_of_tables, kept_communities,
    read_kept_reports)
from graphrag_ray.storage import IndexStore
from graphrag_ray.index.reports.schedule import _reports_table, report_id

ENTITIES = [("SCROOGE", "PERSON", "A miser."), ("MARLEY", "PERSON", "His late partner."),
            ("LONDON", "GEO", "The city."), ("FRED", "PERSON", "His nephew.")]
RELATIONSHIPS = [("MARLEY", "SCROOGE", "Partners."), ("LONDON", "SCROOGE", "Lives there."),
                 ("FRED", "SCROOGE", "Uncle and nephew.")]


def _merged(entities=ENTITIES, relationships=RELATIONSHIPS):
    """The build's structure for these elements, one instance each (as our merge makes it)."""
    entity_instances = pa.table({
        "title": [t for t, _, _ in entities], "type": [k for _, k, _ in entities],
        "description": [d for _, _, d in entities],
        "text_unit_id": ["u1"] * len(entities)})
    relationship_instances = pa.table({
        "source": [s for s, _, _ in relationships], "target": [t for _, t, _ in relationships],
        "description": [d for _, _, d in relationships],
        "strength": [1.0] * len(relationships), "text_unit_id": ["u1"] * len(relationships)})
    merged_entities, merged_relationships, _ = merge_elements(entity_instances,
                                                              relationship_instances)
    entities_out, relationships_out, _ = split_descriptions(merged_entities,
                                                            merged_relationships, 0,
                                                            "cl100k_base")
    return entities_out, relationships_out


def _digests(entities, relationships, communities, claims_of=None):
    return community_digests(communities, entities.column("description_digest").to_numpy(),
                             relationships.column("description_digest").to_numpy(),
                             edge_endpoints(entities, relationships), claims_of)


def _rows(entities, *titles):
    names = entities.column("title").to_pylist()
    return np.array(sorted(names.index(t) for t in titles))


def _hierarchy(entities):
    """Level 0: everyone (id 0); level 1: Scrooge and Marley (1), London and Fred (2)."""
    top = Community(0, 0, -1, np.arange(entities.num_rows), children=[1, 2])
    return [top, Community(1, 1, 0, _rows(entities, "SCROOGE", "MARLEY")),
            Community(2, 1, 0, _rows(entities, "LONDON", "FRED"))]


def test_a_changed_description_changes_its_communities_and_their_parents_only():
    entities, relationships = _merged()
    before = _digests(entities, relationships, _hierarchy(entities))
    changed = [e if e[0] != "FRED" else ("FRED", "PERSON", "His cheerful nephew.")
               for e in ENTITIES]
    entities2, relationships2 = _merged(changed)
    communities = _hierarchy(entities2)
    after = _digests(entities2, relationships2, communities)
    assert after.column("digest").to_pylist()[1] == before.column("digest").to_pylist()[1]
    assert after.column("digest").to_pylist()[2] != before.column("digest").to_pylist()[2]
    # Scrooge and Marley keep theirs; Fred's community, and the top that may read its
    # report, write theirs again.
    assert kept_communities(communities, after, before) == {1: 1}
    assert kept_communities(communities, before, before) == {0: 0, 1: 1, 2: 2}


def test_a_relationship_or_a_claim_inside_counts_an_entity_degree_outside_does_not():
    entities, relationships = _merged()
    communities = _hierarchy(entities)
    before = _digests(entities, relationships, communities)
    linked = RELATIONSHIPS + [("FRED", "LONDON", "Fred lives in London.")]
    entities2, relationships2 = _merged(relationships=linked)
    after = _digests(entities2, relationships2, _hierarchy(entities2))
    assert kept_communities(_hierarchy(entities2), after, before) == {1: 1}
    # A claim about Fred: his community changes.
    fred = entities.column("title").to_pylist().index("FRED")
    with_claim = _digests(entities, relationships, communities,
                          {fred: [claim_digest("0a1b2c3d-0000-0000-0000-000000000000-7")]})
    assert kept_communities(communities, with_claim, before) == {1: 1}
    # The same claim found at another row of the corpus is the same content.
    assert claim_digest("0a1b2c3d-0000-0000-0000-000000000000-7") == \
        claim_digest("0a1b2c3d-0000-0000-0000-000000000000-12")


def test_a_community_with_new_id_and_old_content_keeps_the_report_of_that_content():
    """A community carried one level down gets a new id: the report of the community with
    its content serves it; one of the same id is preferred."""
    entities, relationships = _merged()
    before = _digests(entities, relationships, _hierarchy(entities))
    communities = _hierarchy(entities) + [
        Community(7, 2, 1, _rows(entities, "SCROOGE", "MARLEY"))]
    communities[1].children = [7]
    after = _digests(entities, relationships, communities)
    assert kept_communities(communities, after, before) == {7: 1, 1: 1, 2: 2, 0: 0}


def test_an_adopted_index_tables_give_the_digests_our_merge_gives():
    entities, relationships = _merged()
    ours = _digests(entities, relationships, _hierarchy(entities))
    ids = {title: f"ms-{n}" for n, (title, _, _) in enumerate(ENTITIES)}
    # Its tables in its own order, under its own ids, relationships in its direction.
    tables = {
        "entities": pa.table({"id": [ids[t] for t, _, _ in reversed(ENTITIES)],
                              "title": [t for t, _, _ in reversed(ENTITIES)],
                              "type": [k for _, k, _ in reversed(ENTITIES)],
                              "description": [d + " " for _, _, d in reversed(ENTITIES)]}),
        "relationships": pa.table({"source": [t for _, t, _ in RELATIONSHIPS],
                                   "target": [s for s, _, _ in RELATIONSHIPS],
                                   "description": [d for _, _, d in RELATIONSHIPS]}),
        "communities": pa.table({
            "community": [0, 1, 2], "level": [0, 1, 1], "parent": [-1, 0, 0],
            "entity_ids": [[ids[t] for t, _, _ in ENTITIES], [ids["SCROOGE"], ids["MARLEY"]],
                           [ids["FRED"], ids["LONDON"]]]})}
    theirs = digests_of_tables(tables["entities"], tables["relationships"],
                               tables["communities"])
    assert theirs.equals(ours)


def test_kept_reports_stay_rows_and_come_back_as_they_were_in_the_communities_order():
    """A kept report is copied from its row (text, rank, findings, JSON, date, generation as
    they were) under its community's new id and place; reports written now from their dicts;
    the table in the communities' order. A changed parent's context takes a kept child's
    report as a dict (`KeptReports.reports`)."""
    previous = pa.table({
        "community": [7, 9], "title": ["Old A", "Old B"], "summary": ["sa", "sb"],
        "full_content": ["# Old A", "# Old B"], "rank": [7.0, 3.5],
        "rating_explanation": ["ra", "rb"],
        "findings": [[{"summary": "f", "explanation": "e"}], None],
        "full_content_json": ['{"rating": 7}', '{"rating": 3.5}'],
        "period": ["2026-01-02", "2026-01-03"], "generation": ["llm", "extractive"]})
    kept = KeptReports(previous, {2: 0, 1: 1})  # community 2 keeps old 7, 1 keeps old 9
    assert 1 in kept and 0 not in kept and len(kept) == 2
    # What a context reads of a sub-community's report (`context.context_spec`) is there.
    assert kept.reports([0], [2])[0] == {"community": 2, "title": "Old A", "summary": "sa",
                                         "rank": 7.0, "rating": 7.0,
                                         "findings": [{"summary": "f", "explanation": "e"}]}
    assert kept.reports([1], [1])[0]["findings"] == []
    communities = [Community(0, 0, -1, np.arange(4), children=[1, 2]),
                   Community(1, 1, 0, np.array([0, 1])), Community(2, 1, 0, np.array([2, 3]))]
    written = {0: {"title": "New top", "summary": "s0", "rating": 5, "rating_explanation": "r0",
                   "findings": [], "period": "2026-12-03"}}
    table = _reports_table(communities, written, {0: "llm", 1: "extractive", 2: "llm"},
                           kept, {1: 1, 2: 0})
    assert table.column_names == schema.COMMUNITY_REPORT_COLUMNS
    rows = table.to_pylist()
    assert [r["community"] for r in rows] == [0, 1, 2]
    assert [r["human_readable_id"] for r in rows] == [0, 1, 2]
    assert rows[0]["title"] == "New top" and rows[0]["rank"] == 5.0
    assert rows[1]["title"] == "Old B" and rows[1]["id"] == report_id(1, "Old B")
    assert (rows[2]["full_content_json"], rows[2]["period"], rows[2]["rank"]) == (
        '{"rating": 7}', "2026-01-02", 7.0)
    assert rows[2]["level"] == 1 and rows[2]["parent"] == 0 and rows[2]["size"] == 2
    assert rows[1]["findings"] is None or rows[1]["findings"] == []


def test_kept_reports_read_in_part_are_completed_when_asked_for(tmp_path):
    """Only the kept rows named whole are read whole; the others hold their title and
    generation, and come back whole, as stored, when a context or the table asks."""
    n = 5
    stored = pa.table({
        "id": [f"r{i}" for i in range(n)], "community": list(range(10, 10 + n)),
        "title": [f"T{i}" for i in range(n)], "summary": [f"s{i}" for i in range(n)],
        "full_content": [f"# T{i}" for i in range(n)], "rank": [float(i) for i in range(n)],
        "rating_explanation": ["r"] * n,
        "findings": [[{"summary": f"f{i}", "explanation": "e"}] for i in range(n)],
        "full_content_json": ["{}"] * n, "period": ["2026-01-02"] * n,
        "generation": ["llm"] * n})
    version = IndexStore(str(tmp_path / "index")).stage()
    version.write_table(schema.COMMUNITY_REPORTS, stored, rows_per_part=2)
    kept = read_kept_reports(version, {0: 10, 1: 12, 2: 13}, whole={12})
    assert kept.rows.column("title").to_pylist().count(None) == 0
    assert kept.rows.column("full_content").to_pylist().count(None) == 2
    rows = [kept.row_of[c] for c in (2, 0, 1)]
    assert kept.whole_rows(rows).column("full_content").to_pylist() == ["# T3", "# T0", "# T2"]
    assert kept.reports([kept.row_of[0]], [0])[0]["findings"] == [{"summary": "f0", "explanation": "e"}]
    every = read_kept_reports(version, {0: 10, 1: 12, 2: 13})
    assert every.rows.column("full_content").to_pylist().count(None) == 0
