"""The entity graph's layout: seeded (the same positions every run), pulling related entities
together, skipped when off or past `max_nodes`; an update places only its new entities."""

import numpy as np

from graphrag_ray.config import LayoutConfig
from graphrag_ray.index.graph.communities import build_graph
from graphrag_ray.index.graph.layout import layout_positions, place_new


def two_cliques():
    edges = [(a, b) for group in (range(0, 6), range(6, 12))
             for a in group for b in group if a < b] + [(0, 6)]
    sources, targets = (np.array(column) for column in zip(*edges))
    return build_graph(12, sources, targets, np.ones(len(edges)))


def test_the_layout_is_seeded_and_keeps_clusters_together():
    x, y = layout_positions(two_cliques(), LayoutConfig())
    again = layout_positions(two_cliques(), LayoutConfig())
    assert np.array_equal(x, again[0]) and np.array_equal(y, again[1])
    points = np.column_stack([x, y])
    first, second = points[:6].mean(axis=0), points[6:].mean(axis=0)
    spread = max(np.linalg.norm(points[:6] - first, axis=1).max(),
                 np.linalg.norm(points[6:] - second, axis=1).max())
    assert np.linalg.norm(first - second) > spread  # each clique nearer itself than the other


def test_no_layout_when_off_or_too_large():
    for config in (LayoutConfig(enabled=False), LayoutConfig(max_nodes=11)):
        x, y = layout_positions(two_cliques(), config)
        assert not x.any() and not y.any() and len(x) == 12


def test_an_update_keeps_the_known_positions_and_places_new_nodes_among_their_neighbours():
    rng = np.random.default_rng(0)
    sources, targets = rng.integers(0, 300, 900), rng.integers(0, 300, 900)
    loops = sources == targets
    graph = build_graph(300, sources[~loops], targets[~loops], np.ones(int((~loops).sum())))
    x, y = layout_positions(graph, LayoutConfig())
    placed = np.ones(300, dtype=bool)
    placed[-10:] = False  # ten new entities
    new_x, new_y = place_new(graph, x, y, placed, LayoutConfig())
    assert (new_x[placed] == x[placed]).all() and (new_y[placed] == y[placed]).all()
    assert np.isfinite(new_x).all() and np.isfinite(new_y).all()
    # Each new node lands nearer its neighbours than the layout's spread.
    spread = np.hypot(x - x.mean(), y - y.mean()).mean()
    for node in range(290, 300):
        around = [u for u in graph.neighbors(node) if placed[u]]
        if around:
            gap = np.hypot(new_x[node] - x[around].mean(), new_y[node] - y[around].mean())
            assert gap < spread
    assert place_new(graph, x, y, np.ones(300, dtype=bool), LayoutConfig())[0].tolist() == \
        x.tolist()
