"""A 2-D layout of the entity graph (`entities.x`, `entities.y`), like Microsoft GraphRAG's
output, for graph tools and the explorer.

igraph's Fruchterman-Reingold with its grid approximation: each iteration costs about one
pass over the nodes and edges, where DrL is far slower and exact FR is quadratic. Edge weights pull
strongly related entities together. Seeded, so a build lays out the same graph the same way.

An update keeps the previous version's positions and places only the new entities
(`place_new`): each starts among its placed neighbours, and the layout runs over the new
entities and their neighbours, the neighbours held where they are. The explorer's picture
stays the one the user knows, and the cost follows the change, not the graph.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

from graphrag_ray.config import LayoutConfig

if TYPE_CHECKING:
    import igraph as ig


def positions(n_nodes: int, sources: np.ndarray, targets: np.ndarray, weights: np.ndarray,
              config: LayoutConfig, before: tuple[np.ndarray, np.ndarray, np.ndarray] | None
              ) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) per node of the graph of these edges: a whole layout, or (`before`: x, y and
    whether each node was placed, an update's) the new nodes placed (`place_new`). From the
    edges, so that a worker process can make it (`graph.stage.lay_out`)."""
    from graphrag_ray.index.graph.communities import build_graph

    graph = build_graph(n_nodes, sources, targets, weights)
    return place_new(graph, *before, config) if before is not None \
        else layout_positions(graph, config)


def layout_positions(graph: ig.Graph, config: LayoutConfig) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) per node, rounded to 4 decimals (equal across runs and machines' last bits);
    zeros when the layout is off or the graph exceeds `max_nodes`."""
    import igraph as ig  # imported when needed: see communities.graph_libraries

    n = graph.vcount()
    if not config.enabled or n == 0 or n > config.max_nodes:
        return np.zeros(n), np.zeros(n)
    ig.set_random_number_generator(random.Random(config.seed))
    try:
        layout = graph.layout_fruchterman_reingold(
            weights="weight" if graph.ecount() else None, niter=config.iterations, grid=True)
    finally:
        ig.set_random_number_generator(random)
    coords = np.round(np.asarray(layout.coords, dtype=np.float64).reshape(n, 2), 4)
    return coords[:, 0], coords[:, 1]


# New nodes start at their placed neighbours' mean, so they settle in a fraction of a whole
# layout's iterations. Fewer iterations place the new nodes nearly as close to their
# neighbours, in a fraction of the time.
PLACEMENT_SHARE = 5  # a placement runs `layout.iterations // PLACEMENT_SHARE` iterations


def place_new(graph: ig.Graph, x: np.ndarray, y: np.ndarray, placed: np.ndarray,
              config: LayoutConfig) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) per node: the `placed` nodes' positions as given, the others laid out among
    their neighbours (which stay put), each starting at its placed neighbours' mean (the
    graph's centre when it has none) with a seeded jitter."""
    import igraph as ig

    x, y = np.asarray(x, np.float64).copy(), np.asarray(y, np.float64).copy()
    new = np.flatnonzero(~placed)
    if not config.enabled or len(new) == 0 or graph.vcount() > config.max_nodes:
        return x, y
    neighbours = np.unique(np.concatenate([new] + [np.asarray(graph.neighbors(int(v)), np.int64)
                                                   for v in new]))
    local = graph.induced_subgraph(neighbours.tolist())
    fixed = placed[neighbours]
    rng = np.random.default_rng(config.seed)
    centre = (x[placed].mean(), y[placed].mean()) if placed.any() else (0.0, 0.0)
    start = np.column_stack([x[neighbours], y[neighbours]])
    index = {int(v): k for k, v in enumerate(neighbours.tolist())}
    for v in new.tolist():
        around = [u for u in graph.neighbors(v) if placed[u]]
        start[index[v]] = (x[around].mean(), y[around].mean()) if around else centre
    start[~fixed] += rng.normal(scale=1.0, size=(int((~fixed).sum()), 2))
    low_x = np.where(fixed, start[:, 0], -np.inf)
    high_x = np.where(fixed, start[:, 0], np.inf)
    low_y = np.where(fixed, start[:, 1], -np.inf)
    high_y = np.where(fixed, start[:, 1], np.inf)
    ig.set_random_number_generator(random.Random(config.seed))
    try:
        layout = local.layout_fruchterman_reingold(
            weights="weight" if local.ecount() else None,
            niter=max(1, config.iterations // PLACEMENT_SHARE),
            seed=start.tolist(), minx=low_x.tolist(), maxx=high_x.tolist(),
            miny=low_y.tolist(), maxy=high_y.tolist(), grid=True)
    finally:
        ig.set_random_number_generator(random)
    coords = np.round(np.asarray(layout.coords, dtype=np.float64).reshape(-1, 2), 4)
    moved = ~fixed
    x[neighbours[moved]], y[neighbours[moved]] = coords[moved, 0], coords[moved, 1]
    return x, y
