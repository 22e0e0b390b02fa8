"""Which reports an update keeps: communities whose elements kept their descriptions, with
every sub-community kept; and the digests an adopted index's tables give are those our merge
gives for the same elements."""

import numpy as np
import pyarrow as pa

from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import edge_endpoints, merge_elements
from graphrag_ray.index.reports.kept_reports import (
    claim_digest, community_digests, digests_of_tables, kept_communities)

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
