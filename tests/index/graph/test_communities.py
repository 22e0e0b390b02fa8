import subprocess
import sys

import numpy as np
import pytest

from graphrag_ray.config import CommunitiesConfig
from graphrag_ray.index.graph.communities import build_graph, hierarchical_leiden, membership_by_level


def _clustered_graph(seed=3):
    """Four dense clusters of 30 nodes, sparsely linked, plus isolated nodes and one pair."""
    rng = np.random.default_rng(seed)
    edges = set()
    for cluster in range(4):
        base = cluster * 30
        for _ in range(150):
            a, b = rng.integers(0, 30, size=2)
            if a != b:
                edges.add((base + min(a, b), base + max(a, b)))
    edges |= {(0, 30), (30, 60), (60, 90)}
    edges.add((121, 122))  # a pair; 120 and 123 are isolated
    src, tgt = map(np.array, zip(*sorted(edges)))
    return build_graph(124, src, tgt, np.ones(len(src)))


def test_every_node_in_exactly_one_community_per_level():
    graph = _clustered_graph()
    communities = hierarchical_leiden(graph, CommunitiesConfig(max_cluster_size=10))
    levels = membership_by_level(communities, graph.vcount())
    assert len(levels) >= 2
    for level, labels in levels.items():
        assert (labels >= 0).all(), f"level {level} misses nodes"
        members = np.concatenate([c.members for c in communities if c.level == level])
        assert sorted(members.tolist()) == list(range(graph.vcount()))


def test_children_partition_their_parent_and_large_ones_split():
    communities = hierarchical_leiden(_clustered_graph(), CommunitiesConfig(max_cluster_size=10))
    by_id = {c.id: c for c in communities}
    for community in communities:
        if community.children:
            union = np.sort(np.concatenate([by_id[i].members for i in community.children]))
            assert union.tolist() == community.members.tolist()
        if community.parent >= 0:
            assert by_id[community.parent].level == community.level - 1
    roots = [c for c in communities if c.level == 0 and not c.loose]
    assert any(len(c.children) > 1 for c in roots)


def test_graph_without_edges():
    graph = build_graph(3, np.array([], dtype=int), np.array([], dtype=int), np.array([]))
    communities = hierarchical_leiden(graph, CommunitiesConfig())
    assert [c.members.tolist() for c in communities] == [[0], [1], [2]]
    assert all(c.loose for c in communities)


def test_a_loose_community_is_split_into_bins_of_components_in_corpus_order():
    """Lone pairs that share a document with no clustered name form one loose community,
    split into bins of the components mentioned near each other."""
    import pyarrow as pa

    from graphrag_ray.index.graph.provenance import Provenance
    from graphrag_ray.index.graph.unit_rows import with_unit_rows

    # Six lone pairs (nodes 2k, 2k+1) of one document; pairs 0, 2, 4 are mentioned in chunks
    # 0..2, pairs 1, 3, 5 in chunks 10..12: by node number they interleave.
    sources, targets = np.arange(0, 12, 2), np.arange(1, 12, 2)
    graph = build_graph(12, sources, targets, np.ones(6))
    chunk_of_pair = [0, 10, 1, 11, 2, 12]
    chunks = pa.table({"text_unit_id": [f"c{k}" for k in range(13)],
                       "document_id": ["d"] * 13, "seq": list(range(13))})
    provenance = Provenance.from_tables(with_unit_rows(
        pa.table({"text_unit_ids": [[f"c{chunk_of_pair[n // 2]}"] for n in range(12)]}),
        chunks.column("text_unit_id")), chunks)
    config = CommunitiesConfig(max_cluster_size=6, min_component_size=3)
    communities = hierarchical_leiden(graph, config, provenance=provenance)
    assert [c.members.tolist() for c in communities if c.level == 0] == [list(range(12))]
    bins = sorted(sorted(c.members.tolist()) for c in communities if c.level == 1)
    assert bins == [[0, 1, 4, 5, 8, 9], [2, 3, 6, 7, 10, 11]]


@pytest.mark.slow
def test_the_graph_libraries_load_without_matplotlib_which_stays_importable():
    """igraph imports matplotlib's pyplot for plotting of its own (most of its import time);
    `graph_libraries` hides it then, and `stats`/`eval` can still import it after (a fresh
    interpreter: the test process may hold igraph already)."""
    code = ("import sys\n"
            "from graphrag_ray.index.graph.communities import graph_libraries\n"
            "ig, la = graph_libraries()\n"
            "assert 'matplotlib' not in sys.modules, 'pyplot came with igraph'\n"
            "g = ig.Graph.Famous('Zachary')\n"
            "assert len(la.find_partition(g, la.ModularityVertexPartition, seed=1)) > 1\n"
            "import matplotlib.pyplot\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
