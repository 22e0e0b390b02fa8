"""Small components go where the text mentions them: with the community of the names in their
text unit (votes weighted against names mentioned everywhere), else of the text next to it,
else with the other leftovers of their document; never into a pool of unrelated names."""

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import CommunitiesConfig, load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.graph.communities import build_graph, hierarchical_leiden
from graphrag_ray.index.graph.provenance import Provenance, _votes_all, _votes_each
from graphrag_ray.index.graph.unit_rows import with_unit_rows
from graphrag_ray.storage import IndexStore

# Four 5-cliques (0-4, 5-9, 10-14, 15-19) in a chain; 20.. are stray names.
CLIQUES = [range(0, 5), range(5, 10), range(10, 15), range(15, 20)]
# text unit -> (document, the nodes it mentions); units are in corpus order.
UNITS = {
    "u0": ("a", [0, 1, 20]),        # 20 is mentioned with clique 0
    "u1": ("a", [5, 6, 21]),        # the pair 21-22 with clique 1 ...
    "u2": ("b", [22]),              # ... 22 alone elsewhere
    "u3": ("c", [23]),              # 23 alone, but the text right after it names clique 2
    "u4": ("c", [10, 11]),
    "u5": ("d", [24, 25]),          # 24 and 25 share a document with no clustered name
    "u6": ("e", [26]),              # 26 shares nothing with anyone
    "u7": ("f", [0, 15, 27]),       # 27: with 0 (mentioned everywhere) and 15 (only here)
    **{f"h{k}": (f"h{k}", [0]) for k in range(8)},
}
STRAYS = 28


def _graph():
    edges = [(a, b) for clique in CLIQUES for a in clique for b in clique if a < b]
    edges += [(4, 5), (9, 10), (14, 15), (21, 22)]
    sources, targets = map(np.array, zip(*edges))
    return build_graph(STRAYS, sources, targets, np.ones(len(edges)))


def _provenance():
    mentions = {n: [u for u, (_, nodes) in UNITS.items() if n in nodes] for n in range(STRAYS)}
    entities = pa.table({"text_unit_ids": [mentions[n] for n in range(STRAYS)]})
    chunks = pa.table({"text_unit_id": list(UNITS),
                       "document_id": [d for d, _ in UNITS.values()],
                       "seq": list(range(len(UNITS)))})
    return Provenance.from_tables(with_unit_rows(entities, chunks.column("text_unit_id")),
                                  chunks)


def _community_of(communities, node, level):
    return next(c for c in communities if c.level == level and node in c.members)


def test_stray_names_join_the_community_they_are_mentioned_with_at_every_level():
    config = CommunitiesConfig(max_cluster_size=6, min_component_size=3)
    communities = hierarchical_leiden(_graph(), config, provenance=_provenance())
    levels = sorted({c.level for c in communities})
    for level in levels:
        def together(a, b):
            return b in _community_of(communities, a, level).members
        assert together(0, 20) and together(5, 21) and together(5, 22)  # the pair stays whole
        assert together(10, 23)  # the text next to it
        assert together(15, 27) and not together(0, 27)  # a rare name outvotes a common one
        loose = [c for c in communities if c.level == level and c.loose]
        assert sorted(c.members.tolist() for c in loose) == [[24, 25], [26]]


def test_the_vectorized_vote_chooses_as_the_loop_does():
    # Many components are placed in one vectorized pass, a few in a loop: the same labels,
    # ties and fallbacks to the neighbouring text included, on random graphs.
    rng = np.random.default_rng(7)
    for _ in range(200):
        n_nodes, n_units = int(rng.integers(5, 120)), int(rng.integers(3, 80))
        per_node = [np.unique(rng.integers(0, n_units, int(rng.integers(1, 5))))
                    for _ in range(n_nodes)]
        provenance = Provenance(
            np.cumsum([0] + [len(u) for u in per_node]).astype(np.int64),
            np.concatenate(per_node).astype(np.int64),
            rng.integers(0, 6, n_units).astype(np.int64), rng.permutation(n_units).astype(np.int64))
        order = rng.permutation(n_nodes)
        stray = int(rng.integers(1, n_nodes // 2 + 2))
        components = [np.sort(c) for c in np.array_split(order[:stray], max(1, stray // 2))
                      if len(c)]
        labels = np.full(n_nodes, -1, np.int64)
        labels[order[stray:]] = np.where(rng.random(n_nodes - stray) < 0.6,
                                         rng.integers(0, 5, n_nodes - stray), -1)
        assert _votes_all(components, labels, provenance) == \
            _votes_each(components, labels, provenance)


def test_without_provenance_each_small_component_is_its_own_community():
    config = CommunitiesConfig(max_cluster_size=6, min_component_size=3)
    first = hierarchical_leiden(_graph(), config)
    level0 = [c.members.tolist() for c in first if c.level == 0 and c.loose]
    assert level0 == [[20], [21, 22], [23], [24], [25], [26], [27]]
    second = hierarchical_leiden(_graph(), config)
    assert [(c.level, c.members.tolist()) for c in first] == \
        [(c.level, c.members.tolist()) for c in second]


def test_in_a_build_every_entity_shares_a_relationship_or_a_passage_with_its_community(
        carol_excerpt, tmp_path):
    """No community of the offline Carol index holds a name that has neither an edge to
    another member nor a text unit (or the one next to it) in common with one."""
    out = tmp_path / "index"
    build_index(str(carol_excerpt), str(out), load_config(None, ["runtime.engine=local"]),
                progress=lambda _: None)
    version = IndexStore(str(out)).open()
    entities = version.read_table(schema.ENTITIES, ["id", "title", "text_unit_ids"]).to_pylist()
    units = version.read_table(schema.TEXT_UNITS, ["id"]).column("id").to_pylist()
    place = {u: k for k, u in enumerate(units)}  # text units are stored in corpus order
    near = {e["id"]: {place[u] + d for u in e["text_unit_ids"] for d in (-1, 0, 1)}
            for e in entities}
    mentioned = {e["id"]: {place[u] for u in e["text_unit_ids"]} for e in entities}
    by_title = {e["title"]: e["id"] for e in entities}
    linked: dict[str, set[str]] = {}
    for r in version.read_table(schema.RELATIONSHIPS, ["source", "target"]).to_pylist():
        a, b = by_title[r["source"]], by_title[r["target"]]
        linked.setdefault(a, set()).add(b)
        linked.setdefault(b, set()).add(a)
    strays = 0
    for community in version.read_table(schema.COMMUNITIES, ["entity_ids"]).to_pylist():
        members = set(community["entity_ids"])
        if len(members) == 1:
            continue
        for entity in members:
            if linked.get(entity, set()) & members:
                continue
            strays += 1
            assert any(near[entity] & mentioned[other] for other in members - {entity}), entity
    assert strays  # the excerpt does have names outside every cluster
