"""Where small components belong: with the names the text mentions them with.

A connected component too small to cluster (an isolated name, a lone pair) has no edge to say
where it belongs, but its text units do: the names it was mentioned with in the same text unit
(or, failing that, in the text unit just before or after it in the same document) vote with
their community, and it joins the one with the most votes. Components with no such neighbour
anywhere are grouped with the other leftovers that share a document with them; a group that
shares nothing stays on its own. So no community is a pool of names that have nothing to do
with each other (the podcast's 1,059 names in small components all share a text unit with a
clustered name).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.index.graph.unit_rows import UNIT_ROWS


@dataclass
class Provenance:
    """Each node's text units (as unit indices, CSR), and each unit's document and place."""
    unit_offsets: np.ndarray  # node i's units: units[unit_offsets[i]:unit_offsets[i + 1]]
    units: np.ndarray
    unit_document: np.ndarray  # per unit, its document (an index)
    unit_seq: np.ndarray  # per unit, its chunk's place in the corpus
    document_ids: list[str] | None = None  # by document index, when built from tables

    def __post_init__(self) -> None:
        # Each unit's nodes, ascending: the (unit, node) pairs as one number each, sorted (a
        # node lists a unit once, so the numbers are distinct and the sort need not be
        # stable). An argsort of the units, then gathers, took twice as long.
        n_nodes = len(self.unit_offsets) - 1
        owners = np.repeat(np.arange(n_nodes, dtype=np.int64), np.diff(self.unit_offsets))
        self._unit_nodes = np.sort(self.units * max(1, n_nodes) + owners) % max(1, n_nodes)
        self._node_offsets = np.concatenate([[0], np.cumsum(np.bincount(
            self.units, minlength=len(self.unit_document)))]).astype(np.int64)
        # Each unit's neighbours in its document (the text just before and after it): -1 when
        # the unit opens or closes its document.
        by_place = np.lexsort((self.unit_seq, self.unit_document))
        same = self.unit_document[by_place[1:]] == self.unit_document[by_place[:-1]]
        self.unit_before = np.full(len(self.unit_document), -1, dtype=np.int64)
        self.unit_after = np.full(len(self.unit_document), -1, dtype=np.int64)
        self.unit_before[by_place[1:][same]] = by_place[:-1][same]
        self.unit_after[by_place[:-1][same]] = by_place[1:][same]

    @classmethod
    def from_tables(cls, entities: pa.Table, chunks: pa.Table) -> Provenance:
        """`entities`: with `unit_rows` (`unit_rows.py`: each text unit's row of `chunks`);
        `chunks`: `text_unit_id`, `document_id`, `seq` (the extraction's status rows, one
        per text unit of the build). Worked out in Arrow: as Python lists, a 100M-token
        graph's units were a gigabyte of the driver."""
        lists = entities.column(UNIT_ROWS).combine_chunks()
        owners = pc.list_parent_indices(lists).to_numpy()
        documents = pc.dictionary_encode(chunks.column("document_id").combine_chunks())
        return cls(
            unit_offsets=np.searchsorted(owners, np.arange(len(lists) + 1)).astype(np.int64),
            units=pc.list_flatten(lists).to_numpy().astype(np.int64),
            unit_document=documents.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            unit_seq=chunks.column("seq").to_numpy().astype(np.int64),
            document_ids=documents.dictionary.to_pylist())

    def units_of(self, nodes: np.ndarray) -> np.ndarray:
        return np.unique(np.concatenate([self.units[self.unit_offsets[n]:self.unit_offsets[n + 1]]
                                         for n in nodes]))

    def nodes_in(self, units: np.ndarray) -> np.ndarray:
        return np.concatenate([self._unit_nodes[self._node_offsets[u]:self._node_offsets[u + 1]]
                               for u in units]) if len(units) else np.zeros(0, np.int64)

    def first_mention(self, nodes: np.ndarray) -> int:
        return int(self.unit_seq[self.units_of(nodes)].min(initial=np.iinfo(np.int64).max))


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions starts[i] .. starts[i] + counts[i] - 1 of every i, in order."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64)
    ends = np.cumsum(counts)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)


def _vote(nodes: np.ndarray, labels: np.ndarray, provenance: Provenance) -> int:
    """The label `nodes` (the names mentioned in a component's text units, once per unit)
    vote for, -1 when none of them has one. A node's vote weighs one over the number of text
    units it is mentioned in: a name the whole corpus mentions says little about where a
    stray name belongs, one mentioned twice says much (without the weight, the podcast's
    most mentioned name drew 200 stray names into its community). The smallest label wins a
    tie."""
    nodes = nodes[labels[nodes] >= 0]
    if not len(nodes):
        return -1
    weights = 1.0 / np.maximum(1, provenance.unit_offsets[nodes + 1]
                               - provenance.unit_offsets[nodes])
    values, slots = np.unique(labels[nodes], return_inverse=True)
    return int(values[np.argmax(np.bincount(slots, weights=weights))])


def _votes_by_owner(owners: np.ndarray, units: np.ndarray, n_owners: int, labels: np.ndarray,
                    provenance: Provenance) -> np.ndarray:
    """`_vote` for many owners (components) at once: the pairs `owners`/`units`, grouped by
    owner, in voting order. (One component at a time, this was most of an update's Leiden
    stage at 100M tokens.)"""
    per_unit = provenance._node_offsets[units + 1] - provenance._node_offsets[units]
    voters = provenance._unit_nodes[_ranges(provenance._node_offsets[units], per_unit)]
    voter_owner = np.repeat(owners, per_unit)
    voter_labels = labels[voters]
    keep = voter_labels >= 0
    voters, voter_owner, voter_labels = voters[keep], voter_owner[keep], voter_labels[keep]
    chosen = np.full(n_owners, -1, dtype=np.int64)
    if not len(voters):
        return chosen
    weights = 1.0 / np.maximum(1, provenance.unit_offsets[voters + 1]
                               - provenance.unit_offsets[voters])
    # Each (owner, label) bin sums its weights in voting order, as one owner's bincount did.
    span = int(labels.max()) + 1
    bins, slots = np.unique(voter_owner * span + voter_labels, return_inverse=True)
    totals = np.bincount(slots, weights=weights)
    bin_owner, bin_label = bins // span, bins % span
    # Per owner (its bins are consecutive, by label) the largest total, the smallest label
    # among equals: the first bin equal to its owner's largest. (A sort by owner, total and
    # label took a third of this step's time.)
    starts = np.flatnonzero(np.r_[True, bin_owner[1:] != bin_owner[:-1]])
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(bins)]))
    best = np.flatnonzero(totals == np.maximum.reduceat(totals, starts)[group])
    first = best[np.r_[True, group[best][1:] != group[best][:-1]]]
    chosen[bin_owner[first]] = bin_label[first]
    return chosen


def place_small_components(components: list[np.ndarray], labels: np.ndarray,
                           provenance: Provenance | None) -> tuple[list[int], list[np.ndarray]]:
    """For each component, the label (`labels`: per node, -1 where unset) its text neighbours
    vote for, or -1; and the components no one claimed, grouped by the documents they share
    (each group sorted, groups in the order the corpus first mentions them). Without
    provenance every component is its own group."""
    if provenance is None:
        return [-1] * len(components), [np.sort(c) for c in components]
    chosen = (_votes_all if len(components) >= VECTORIZED_FROM else _votes_each)(
        components, labels, provenance)
    unclaimed = [c for c, label in zip(components, chosen) if label < 0]
    return chosen, _grouped_by_document(unclaimed, provenance)


# Components from which one vectorized pass beats a loop over them. Deeper levels place a few
# components per
# community; level 0 places every small component of the graph.
VECTORIZED_FROM = 8


def _votes_each(components: list[np.ndarray], labels: np.ndarray,
                provenance: Provenance) -> list[int]:
    """Each component's label by its text units' votes, else by its neighbouring units'."""
    chosen = []
    for component in components:
        units = provenance.units_of(component)
        label = _vote(provenance.nodes_in(units), labels, provenance)
        if label < 0:
            nearby = np.concatenate([provenance.unit_before[units], provenance.unit_after[units]])
            label = _vote(provenance.nodes_in(nearby[nearby >= 0]), labels, provenance)
        chosen.append(label)
    return chosen


def _votes_all(components: list[np.ndarray], labels: np.ndarray,
               provenance: Provenance) -> list[int]:
    """`_votes_each` in one vectorized pass (the same sums, in the same order)."""
    nodes = np.concatenate(components)
    owner = np.repeat(np.arange(len(components)), [len(c) for c in components])
    counts = provenance.unit_offsets[nodes + 1] - provenance.unit_offsets[nodes]
    # Each component's text units, once each, in order (`units_of`).
    n_units = len(provenance.unit_document)
    keys = np.unique(np.repeat(owner, counts) * n_units + provenance.units[
        _ranges(provenance.unit_offsets[nodes], counts)])
    unit_owner, units = keys // n_units, keys % n_units
    chosen = _votes_by_owner(unit_owner, units, len(components), labels, provenance)
    # Unclaimed: the text units just before and after (all befores, then all afters).
    again = chosen[unit_owner] < 0
    units = units[again]
    nearby = np.concatenate([provenance.unit_before[units], provenance.unit_after[units]])
    near_owner = np.tile(unit_owner[again], 2)
    side = np.repeat([0, 1], len(units))
    order = np.lexsort((np.arange(len(nearby)), side, near_owner))
    nearby, near_owner = nearby[order], near_owner[order]
    found = nearby >= 0
    fallback = _votes_by_owner(near_owner[found], nearby[found], len(components),
                               labels, provenance)
    return np.where(chosen >= 0, chosen, fallback).tolist()


def _grouped_by_document(components: list[np.ndarray],
                         provenance: Provenance) -> list[np.ndarray]:
    """Components joined when they share a document (union-find over documents)."""
    parent = list(range(len(components)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    first_holder: dict[int, int] = {}
    for k, component in enumerate(components):
        for document in np.unique(provenance.unit_document[provenance.units_of(component)]):
            holder = first_holder.setdefault(int(document), k)
            parent[root(k)] = root(holder)
    groups: dict[int, list[np.ndarray]] = {}
    for k, component in enumerate(components):
        groups.setdefault(root(k), []).append(component)
    merged = [np.sort(np.concatenate(parts)) for parts in groups.values()]
    return sorted(merged, key=lambda g: (provenance.first_mention(g), int(g[0])))
