"""Hierarchical Leiden on the entity graph (igraph + leidenalg), seeded and deterministic.

Level 0 partitions the whole graph. Each deeper level splits the communities of the level above
that exceed `max_cluster_size`; a community that is small enough, or that Leiden will not split,
is carried down unchanged, so every entity belongs to exactly one community at every level.
The hierarchy ends at the first level where nothing splits (or at `max_levels`).

Connected components smaller than `min_component_size` (isolated entities, lone pairs) are not
clustered: each joins the community of the names the text mentions it with, at every level
(`provenance.py`), which yields no near-empty report per stray name. Those mentioned with no
clustered name form "loose" communities of the components that share documents; deeper levels
split a loose community into bins of whole components of at most `max_cluster_size` entities,
in the order the corpus mentions them.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from graphrag_ray.config import CommunitiesConfig
from graphrag_ray.index.graph.provenance import Provenance, place_small_components

if TYPE_CHECKING:
    import igraph as ig

_HIDING_MATPLOTLIB = threading.Lock()  # the import thread and the stage's thread


def graph_libraries():
    """igraph and leidenalg, imported when first needed (a build with an LLM imports them
    in the background while it waits on extraction: `warm_graph_libraries`). igraph imports
    matplotlib's pyplot at import when it is installed, for plotting of its own that we
    never use: most of its import time. So it is imported with matplotlib
    hidden (its plotting falls back to a stub saying matplotlib is missing); `stats` and
    `eval`, which plot, import matplotlib themselves, after."""
    with _HIDING_MATPLOTLIB:
        if "igraph" not in sys.modules and "matplotlib" not in sys.modules:
            sys.modules["matplotlib"] = None  # `import matplotlib` raises ImportError
            try:
                import igraph  # noqa: F401
            finally:
                if "matplotlib" in sys.modules and sys.modules["matplotlib"] is None:
                    del sys.modules["matplotlib"]
    import igraph
    import leidenalg

    return igraph, leidenalg


def warm_graph_libraries() -> None:
    """Import them in a background thread: the build's first stages wait on the endpoint,
    so the imports cost it nothing there."""
    threading.Thread(target=graph_libraries, name="import-igraph", daemon=True).start()


class WarmStart(Protocol):
    """Where Leiden starts at each level instead of singletons: an update's previous
    partition (`continuity.PreviousPartition`); and, when that partition is kept rather
    than refined, which nodes may not move and which stay out of every community."""

    def initial_membership(self, level: int, nodes: np.ndarray) -> list[int] | None:
        """Each of `nodes`' starting community at `level`; None: start from singletons."""

    def fixed_membership(self, level: int, nodes: np.ndarray) -> list[bool] | None:
        """Which of `nodes` keep their starting community; None: every node may move."""

    def left_out(self) -> np.ndarray | None:
        """A mask of the nodes that are in no community; None: every node is in one."""

    def settled(self, level: int, nodes: np.ndarray) -> np.ndarray | None:
        """Per node of `nodes` (the clustered members of a community being split into
        `level`), the previous community it
        keeps there, untouched by the update, or -1 where Leiden places it; None: Leiden
        places every node."""

    def unchanged_parts(self, level: int, members: np.ndarray, small: np.ndarray
                        ) -> list[tuple[np.ndarray, bool]] | None:
        """The parts (members, loose) a community of `members` splits into at `level` when
        the update left it as it was (`small`: the graph's nodes in small components),
        without Leiden or the votes; None: work them out."""

    def split_again(self, level: int, nodes: np.ndarray) -> bool | None:
        """Kept: whether a community of `nodes` is split into `level` as before (True: they
        were in several communities there; False: they were in one community above and
        none is new); None: as its size says."""


@dataclass
class Community:
    id: int
    level: int
    parent: int
    members: np.ndarray  # node indices, sorted
    loose: bool = False  # only small components that share documents, nothing clustered
    splittable: bool = True
    children: list[int] = field(default_factory=list)


def build_graph(n_nodes: int, sources: np.ndarray, targets: np.ndarray,
                weights: np.ndarray) -> ig.Graph:
    """From edge columns: one (m, 2) integer array handed to igraph whole, no Python loop
    per edge."""
    ig, _ = graph_libraries()
    graph = ig.Graph(n=n_nodes, directed=False)
    graph.add_edges(np.ascontiguousarray(np.column_stack([sources, targets]), dtype=np.int64))
    graph.es["weight"] = np.asarray(weights, dtype=np.float64)
    return graph


def _leiden(graph: ig.Graph, config: CommunitiesConfig, level: int,
            initial: list[int] | None = None, fixed: list[bool] | None = None) -> np.ndarray:
    """`initial`: a starting partition (an update's previous communities); `fixed`: the
    nodes that keep their starting community (the others join one or form new ones)."""
    kept = fixed is not None and any(fixed)
    if graph.ecount() == 0:
        return np.asarray(initial) if kept else np.arange(graph.vcount())
    _, leidenalg = graph_libraries()
    if not kept:
        partition = leidenalg.find_partition(
            graph, leidenalg.RBConfigurationVertexPartition, weights="weight",
            initial_membership=initial, resolution_parameter=config.resolution,
            n_iterations=config.leiden_iterations, seed=config.seed + level)
        return np.asarray(partition.membership)
    partition = leidenalg.RBConfigurationVertexPartition(
        graph, weights="weight", initial_membership=initial,
        resolution_parameter=config.resolution)
    optimiser = leidenalg.Optimiser()
    optimiser.set_rng_seed(config.seed + level)
    optimiser.optimise_partition(partition, n_iterations=config.leiden_iterations,
                                 is_membership_fixed=fixed)
    return np.asarray(partition.membership)


def _leiden_around(graph: ig.Graph, settled: np.ndarray, initial: list[int],
                   config: CommunitiesConfig, level: int) -> np.ndarray:
    """Leiden for the nodes an update touched (`settled` -1), around the communities it did
    not (`settled` their label), each of which is one vertex that keeps its community: the
    touched nodes may join one, or form communities of their own. A settled community as one
    vertex (its inner edges a loop of their summed weight) counts in modularity as its nodes
    do, so this finds what Leiden on the whole graph with those nodes fixed would, at the
    cost of the touched part. (Leiden on the touched nodes alone would split them more
    finely with every update: a subgraph taken out of its graph is always worth splitting.)
    `initial`: the touched nodes' starting communities."""
    groups, group_of = np.unique(settled[settled >= 0], return_inverse=True)
    moving = np.flatnonzero(settled < 0)
    vertex = np.empty(len(settled), dtype=np.int64)
    vertex[settled >= 0] = group_of
    vertex[moving] = len(groups) + np.arange(len(moving))
    contracted = graph.copy()
    contracted.contract_vertices(vertex.tolist())
    contracted.simplify(multiple=True, loops=False, combine_edges={"weight": "sum"})
    start = list(range(len(groups))) + [len(groups) + k for k in initial]
    fixed = [True] * len(groups) + [False] * len(moving)
    found = _leiden(contracted, config, level, start, fixed)
    return found[vertex]


def groups_of(members: np.ndarray, labels: np.ndarray) -> list[np.ndarray]:
    """Members grouped by label, groups ordered by their smallest member (deterministic).
    One sort by (label, member), not a mask over the members per label (labels x members)."""
    if not len(members):
        return []
    members, labels = np.asarray(members), np.asarray(labels)
    order = np.lexsort((members, labels))
    groups = np.split(members[order], np.flatnonzero(np.diff(labels[order])) + 1)
    return sorted(groups, key=lambda g: int(g[0]))


def _bins_of_components(components: list[np.ndarray], capacity: int) -> list[np.ndarray]:
    bins, current, size = [], [], 0
    for component in components:
        if current and size + len(component) > capacity:
            bins.append(np.sort(np.concatenate(current)))
            current, size = [], 0
        current.append(component)
        size += len(component)
    if current:
        bins.append(np.sort(np.concatenate(current)))
    return bins


def hierarchical_leiden(graph: ig.Graph, config: CommunitiesConfig,
                        previous: WarmStart | None = None,
                        provenance: Provenance | None = None) -> list[Community]:
    """All communities of all levels; ids are assigned level by level, from 0. `previous`
    (an update): each Leiden run starts from the previous version's communities of its
    nodes at its level (`continuity`), and keeps them where the partition is kept; ids are
    carried over afterwards. `provenance`: where
    each node is mentioned, which places the small components; without it each small
    component is a community of its own."""
    n = graph.vcount()
    if n == 0:
        return []
    component_labels = np.asarray(graph.connected_components().membership)
    sizes = np.bincount(component_labels)
    small = sizes[component_labels] < config.min_component_size
    communities: list[Community] = []

    def add(level: int, parent: int, members: np.ndarray, loose: bool = False,
            splittable: bool = True) -> Community:
        community = Community(len(communities), level, parent, members, loose, splittable)
        communities.append(community)
        if parent >= 0:
            communities[parent].children.append(community.id)
        return community

    out = previous.left_out() if previous is not None else None
    everything = Community(-1, -1, -1, np.arange(n) if out is None else np.flatnonzero(~out))
    for part, loose in _clustered(graph, everything, small, component_labels, provenance,
                                  config, 0, previous):
        add(0, -1, part, loose=loose)
    level = 0
    while level + 1 < config.max_levels:
        current = [c for c in communities if c.level == level]
        next_level: list[tuple[Community, list[tuple[np.ndarray, bool]], bool]] = []
        any_split = False
        for community in current:
            parts = [(community.members, community.loose)]
            again = previous.split_again(level + 1, community.members) if previous else None
            if community.splittable and (
                    len(community.members) > config.max_cluster_size if again is None
                    else again):
                parts = _clustered(graph, community, small, component_labels, provenance,
                                   config, level + 1, previous)
            split = len(parts) > 1
            any_split |= split
            next_level.append((community, parts, split))
        if not any_split:
            break
        for community, parts, split in next_level:
            for part, loose in parts:
                # Leiden is deterministic: a community it would not split stays whole below.
                add(level + 1, community.id, part, loose=loose, splittable=split)
        level += 1
    return communities


def _clustered(graph: ig.Graph, community: Community, small: np.ndarray,
               component_labels: np.ndarray, provenance: Provenance | None,
               config: CommunitiesConfig, level: int,
               previous: WarmStart | None) -> list[tuple[np.ndarray, bool]]:
    """A community's members split one level down, each part with whether it is loose:
    Leiden over its clustered members, its small components placed by their provenance, and
    the unplaced in loose parts; a loose community in bins of components."""
    members = community.members
    unchanged = previous.unchanged_parts(level, members, small) if previous else None
    if unchanged is not None:
        return unchanged
    components = groups_of(members[small[members]], component_labels[members[small[members]]])
    if community.loose:
        if provenance is not None:  # mentioned in the same place, binned together
            components.sort(key=lambda c: (provenance.first_mention(c), int(c[0])))
        return [(part, True) for part in _bins_of_components(components,
                                                              config.max_cluster_size)]
    clustered = members[~small[members]]
    parts: list[np.ndarray] = []
    if len(clustered):
        labels = previous.settled(level, clustered) if previous is not None else None
        if labels is None:
            labels = _leiden(graph.induced_subgraph(clustered.tolist()), config, level,
                             *((previous.initial_membership(level, clustered),
                                previous.fixed_membership(level, clustered)) if previous
                               else (None, None)))
        elif (labels < 0).any():
            labels = _leiden_around(graph.induced_subgraph(clustered.tolist()), labels,
                                    previous.initial_membership(level, clustered[labels < 0]),
                                    config, level)
        parts = groups_of(clustered, labels)
    part_of = np.full(graph.vcount(), -1, dtype=np.int64)
    for k, part in enumerate(parts):
        part_of[part] = k
    chosen, unclaimed = place_small_components(components, part_of, provenance)
    placed = [[part] for part in parts]  # each part, then the components it took, in order
    for component, label in zip(components, chosen):
        if label >= 0:
            placed[label].append(component)
    return [(np.sort(np.concatenate(p)), False) for p in placed] + \
        [(group, True) for group in unclaimed]


def carried_down(community: Community, by_id: dict[int, Community]) -> bool:
    """A community whose only child has the same members: the same community one level down,
    so it shares that child's report."""
    return len(community.children) == 1 and \
        len(by_id[community.children[0]].members) == len(community.members)


def membership_by_level(communities: list[Community], n_nodes: int) -> dict[int, np.ndarray]:
    """level -> array mapping node index to its community id at that level."""
    result: dict[int, np.ndarray] = {}
    for community in communities:
        if community.level not in result:  # (not `setdefault`: it built an array per call)
            result[community.level] = np.full(n_nodes, -1, dtype=np.int64)
        result[community.level][community.members] = community.id
    return result


def edges_by_community(communities: list[Community], sources: np.ndarray, targets: np.ndarray,
                       n_nodes: int) -> dict[int, np.ndarray]:
    """community id -> the edges with both ends in it, ascending. One pass over the edges per
    level (both ends carry the same label), not one per community."""
    inside: dict[int, np.ndarray] = {}
    for labels in membership_by_level(communities, n_nodes).values():
        same = np.flatnonzero((labels[sources] == labels[targets]) & (labels[sources] >= 0))
        owners = labels[sources[same]]
        order = np.argsort(owners, kind="stable")
        grouped, starts = np.unique(owners[order], return_index=True)
        for community_id, part in zip(grouped, np.split(same[order], starts[1:])):
            inside[int(community_id)] = part
    return inside
