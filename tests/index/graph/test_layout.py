"""The entity graph's layout: seeded (the same positions every run), pulling related entities
together, and skipped when off or past `max_nodes`."""

import numpy as np

from graphrag_ray.config import LayoutConfig
from graphrag_ray.index.graph.communities import build_graph
from graphrag_ray.index.graph.layout import layout_positions


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
