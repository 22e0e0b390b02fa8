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


@dataclass
class Provenance:
    """Each node's text units (as unit indices, CSR), and each unit's document and place."""
    unit_offsets: np.ndarray  # node i's units: units[unit_offsets[i]:unit_offsets[i + 1]]
    units: np.ndarray
    unit_document: np.ndarray  # per unit, its document (an index)
    unit_seq: np.ndarray  # per unit, its chunk's place in the corpus
    document_ids: list[str] | None = None  # by document index, when built from tables

    def __post_init__(self) -> None:
        owners = np.repeat(np.arange(len(self.unit_offsets) - 1), np.diff(self.unit_offsets))
        order = np.argsort(self.units, kind="stable")
        self._unit_nodes = owners[order]
        self._node_offsets = np.searchsorted(self.units[order],
                                             np.arange(len(self.unit_document) + 1))
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
        """`entities`: with `text_unit_ids`; `chunks`: `text_unit_id`, `document_id`, `seq`
        (the extraction's status rows, one per text unit of the build). Worked out in Arrow:
        as Python lists, a 100M-token graph's units were a gigabyte of the driver."""
        lists = entities.column("text_unit_ids").combine_chunks()
        found = pc.index_in(pc.list_flatten(lists),
                            value_set=chunks.column("text_unit_id").combine_chunks())
        known = pc.is_valid(found)
        owners = pc.list_parent_indices(lists).filter(known).to_numpy()
        documents = pc.dictionary_encode(chunks.column("document_id").combine_chunks())
        return cls(
            unit_offsets=np.searchsorted(owners, np.arange(len(lists) + 1)).astype(np.int64),
            units=found.filter(known).to_numpy().astype(np.int64),
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


def _most_votes(nodes: np.ndarray, labels: np.ndarray, provenance: Provenance) -> int:
    """The label `nodes` vote for, -1 when none of them has one. A node's vote weighs one
    over the number of text units it is mentioned in: a name the whole corpus mentions says
    little about where a stray name belongs, one mentioned twice says much (without the
    weight, the podcast's most mentioned name drew 200 stray names into its community). The
    smallest label wins a tie."""
    nodes = nodes[labels[nodes] >= 0]
    if not len(nodes):
        return -1
    weights = 1.0 / np.maximum(1, provenance.unit_offsets[nodes + 1]
                               - provenance.unit_offsets[nodes])
    values, slots = np.unique(labels[nodes], return_inverse=True)
    return int(values[np.argmax(np.bincount(slots, weights=weights))])


def place_small_components(components: list[np.ndarray], labels: np.ndarray,
                           provenance: Provenance | None) -> tuple[list[int], list[np.ndarray]]:
    """For each component, the label (`labels`: per node, -1 where unset) its text neighbours
    vote for, or -1; and the components no one claimed, grouped by the documents they share
    (each group sorted, groups in the order the corpus first mentions them). Without
    provenance every component is its own group."""
    if provenance is None:
        return [-1] * len(components), [np.sort(c) for c in components]
    chosen = []
    for component in components:
        units = provenance.units_of(component)
        label = _most_votes(provenance.nodes_in(units), labels, provenance)
        if label < 0:
            nearby = np.concatenate([provenance.unit_before[units], provenance.unit_after[units]])
            label = _most_votes(provenance.nodes_in(nearby[nearby >= 0]), labels, provenance)
        chosen.append(label)
    unclaimed = [c for c, label in zip(components, chosen) if label < 0]
    return chosen, _grouped_by_document(unclaimed, provenance)


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
