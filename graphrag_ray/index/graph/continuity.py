"""Communities that survive an update: Leiden warm-started from the previous version's
partition, and the previous ids given back to the communities that are still there.

A partition this project's Leiden did not find (an index adopted from Microsoft GraphRAG,
and every update of it since) is kept rather than refined: the entities it had keep their
communities at every level, the entities it left out of every community (it clusters only
the largest connected component) stay out, and only new entities move, joining a community
or forming new ones; a community that grew past `max_cluster_size` with no split before is
split. Our own Leiden, started from its own optimum, moves little; started from another
tool's partition, it would move most entities and every report would be written again.

An update that knows which entities it touched (new, changed, or at an end of a changed
relationship: `Graph.touched`) moves only those: every other entity keeps its community at
every level, and a community with nothing touched keeps its whole subtree, so Leiden's cost
is the change's, not the graph's. Without a touched set (entity resolution on, or a previous
version that kept no merged shards) a warm-started Leiden over the whole graph keeps what did
not change (it starts from it and finds nothing better to move to). A new community takes
the id of the previous one it shares a majority of members with, both ways (at most one such
pair exists); the rest get fresh ids. With the same id and the same context, a community's
report prompt is the same, so its report comes from the cache instead of a call.

Per level the manifest then says how many communities were kept (same members), changed (same
id, members moved), new and gone, and how similar the level-0 partitions are on the entities
in both (adjusted Rand index).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.index.graph.communities import Community, groups_of


@dataclass
class PreviousPartition:
    """The previous version's communities, over the current graph's nodes."""
    labels: dict[int, np.ndarray]  # level -> previous community of each node (-1: none, new)
    sizes: dict[int, int]  # previous community -> its number of entities then
    levels: dict[int, list[int]]  # level -> its previous communities
    # Kept, not refined: the nodes the previous version had in no community (else None).
    out: np.ndarray | None = None
    # An update that merged only what it touched: the nodes it touched (`Graph.touched`).
    touched: np.ndarray | None = None

    @classmethod
    def from_tables(cls, communities: pa.Table, entity_ids: list[str],
                    kept_of: set[str] | None = None, touched: np.ndarray | None = None
                    ) -> "PreviousPartition":
        """`communities`: the previous version's communities table (community, level,
        entity_ids); `entity_ids`: the current graph's entity ids, by node; `kept_of`: the
        previous version's entity ids, when its partition is kept rather than refined;
        `touched`: the nodes an update touched, when it knows (`settled`)."""
        # In Arrow and numpy, not a Python lookup per member.
        lists = communities.column("entity_ids").combine_chunks()
        owner = pc.list_parent_indices(lists).to_numpy()
        node = pc.index_in(pc.list_flatten(lists), value_set=pa.array(entity_ids, pa.string())
                           ).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        ids = np.asarray(communities.column("community").to_numpy(), dtype=np.int64)
        at = np.asarray(communities.column("level").to_numpy(), dtype=np.int64)
        labels: dict[int, np.ndarray] = {}
        for level in np.unique(at).tolist():
            labels[level] = np.full(len(entity_ids), -1, dtype=np.int64)
            mine = (at[owner] == level) & (node >= 0)
            labels[level][node[mine]] = ids[owner[mine]]
        sizes = dict(zip(ids.tolist(), pc.list_value_length(lists).fill_null(0).to_pylist()))
        levels: dict[int, list[int]] = {}
        for community, level in zip(ids.tolist(), at.tolist()):
            levels.setdefault(level, []).append(community)
        out = None
        if kept_of is not None:
            known = np.fromiter((e in kept_of for e in entity_ids), bool, len(entity_ids))
            out = known & (labels[0] < 0) if 0 in labels else known
        return cls(labels, sizes, levels, out, touched)

    def fixed_membership(self, level: int, nodes: np.ndarray) -> list[bool] | None:
        """Kept: the nodes that had a community at `level` stay in it."""
        if self.out is None or level not in self.labels:
            return None
        return (self.labels[level][nodes] >= 0).tolist()

    def left_out(self) -> np.ndarray | None:
        return self.out

    def settled(self, level: int, nodes: np.ndarray) -> np.ndarray | None:
        """Each of `nodes` (the clustered members of a community being split into `level`)
        that the update did not touch keeps its previous community there; the touched ones
        (-1: new, changed, or at an end of a changed relationship) are for Leiden, which
        may move them into one of those communities or into new ones. An untouched node's
        relationships are all as they were (a touched relationship touches both its ends),
        so the move it would weigh is the one it made before; re-clustering the whole of
        every community an update touched instead cost several times as much for the
        same modularity. None: nothing untouched, or no touched set
        (a build, entity resolution, a partition kept rather than refined: `fixed_membership`)."""
        if self.touched is None or self.out is not None or level not in self.labels:
            return None
        labels = self.labels[level][nodes].copy()
        labels[self.touched[nodes]] = -1
        return labels if (labels >= 0).any() else None

    def unchanged_parts(self, level: int, members: np.ndarray, small: np.ndarray
                        ) -> list[tuple[np.ndarray, bool]] | None:
        """A community of `members` split into `level` that is a previous community one
        level up, whole and untouched, splits as it did: into its previous communities at
        `level`, each loose when it holds only small components (`small`: per node). Leiden
        would only find them again, and the provenance votes placing its small components
        again (an untouched node's text units and its voters' are as they were). None: the
        community is not such a one."""
        if self.touched is None or self.out is not None or level not in self.labels or \
                level - 1 not in self.labels or self.touched[members].any():
            return None
        below_of = self.labels[level]
        above, below = self.labels[level - 1][members], below_of[members]
        if above[0] < 0 or (above != above[0]).any() or \
                self.sizes[int(above[0])] != len(members) or (below < 0).any():
            return None
        # In the order of their previous ids, which is the order the previous version's
        # tables hold them in: rows an update copies from them are then taken in order.
        parts = sorted(groups_of(members, below), key=lambda part: int(below_of[part[0]]))
        return [(part, bool(small[part].all())) for part in parts]

    def split_again(self, level: int, nodes: np.ndarray) -> bool | None:
        if self.out is None:
            return None
        below = self.labels.get(level)
        if below is not None and len(np.unique(below[nodes][below[nodes] >= 0])) > 1:
            return True
        above = self.labels.get(level - 1)
        return False if above is not None and (above[nodes] >= 0).all() else None

    def initial_membership(self, level: int, nodes: np.ndarray) -> list[int] | None:
        """Leiden's starting partition of `nodes` (an induced subgraph's vertices, in order):
        each node's previous community at `level`, a new node on its own. None when there
        is no previous level to start from."""
        if level not in self.labels:
            return None
        previous = self.labels[level][nodes]
        start = np.empty(len(nodes), dtype=np.int64)
        known = previous >= 0
        _, start[known] = np.unique(previous[known], return_inverse=True)
        first_new = int(start[known].max()) + 1 if known.any() else 0
        start[~known] = np.arange(first_new, first_new + int((~known).sum()))
        return start.tolist()


def carry_ids(communities: list[Community], previous: PreviousPartition) -> dict:
    """Renumbers `communities` in place: previous ids for the communities matched to a
    previous one (a majority of members both ways), fresh ids above every previous id for the
    others. Returns, per level, how many were kept / changed / new / gone."""
    next_id = max(previous.sizes, default=-1) + 1
    new_id: dict[int, int] = {}
    figures: dict[str, dict[str, int]] = {}
    for level in sorted({c.level for c in communities} | set(previous.levels)):
        counts = {"kept": 0, "changed": 0, "new": 0, "gone": 0}
        labels = previous.labels.get(level)
        matched: set[int] = set()
        for community in (c for c in communities if c.level == level):
            match = None
            if labels is not None:
                found = Counter(labels[community.members].tolist())
                found.pop(-1, None)
                if found:
                    candidate, shared = found.most_common(1)[0]
                    if 2 * shared > len(community.members) and \
                            2 * shared > previous.sizes[candidate]:
                        match = candidate
                        same = shared == len(community.members) == previous.sizes[candidate]
                        counts["kept" if same else "changed"] += 1
            if match is None:
                match, next_id = next_id, next_id + 1
                counts["new"] += 1
            matched.add(match)
            new_id[community.id] = match
        counts["gone"] = sum(1 for c in previous.levels.get(level, []) if c not in matched)
        figures[str(level)] = counts
    for community in communities:
        community.id = new_id[community.id]
        community.parent = new_id.get(community.parent, -1)
        community.children = [new_id[c] for c in community.children]
    return figures


def adjusted_rand_index(first: np.ndarray, second: np.ndarray) -> float:
    """Adjusted Rand index of two labelings of the same items (Hubert and Arabie): 1 for
    identical partitions, about 0 for independent ones."""
    n = len(first)
    if n < 2:
        return 1.0
    _, a = np.unique(first, return_inverse=True)
    _, b = np.unique(second, return_inverse=True)
    pairs = lambda counts: float((counts * (counts - 1) / 2).sum())  # noqa: E731
    together = pairs(np.unique(a * (b.max() + 1) + b, return_counts=True)[1])
    rows, cols = pairs(np.bincount(a)), pairs(np.bincount(b))
    expected = rows * cols / (n * (n - 1) / 2)
    best = (rows + cols) / 2
    return 1.0 if best == expected else (together - expected) / (best - expected)


def level0_similarity(communities: list[Community], previous: PreviousPartition,
                      n_nodes: int) -> float | None:
    """ARI between the previous and the new level-0 partitions, on the entities in both."""
    if 0 not in previous.labels:
        return None
    now = np.full(n_nodes, -1, dtype=np.int64)
    for community in communities:
        if community.level == 0:
            now[community.members] = community.id
    both = (previous.labels[0] >= 0) & (now >= 0)
    return round(adjusted_rand_index(previous.labels[0][both], now[both]), 4)
