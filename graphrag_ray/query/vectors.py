"""Similarity search over an index's embeddings tables, behind one seam (`VectorIndex`):
every query method asks `OpenedIndex.vectors(name)` and gets one, made by `open_vectors`.

Today's implementation is brute force over the stored table (`VectorTable`): one matrix
product per query, milliseconds up to ~10^6 vectors; past that an approximate index would
pay off. Another store is a class with `nearest` and a branch in `open_vectors`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.errors import GraphRagError


class VectorIndex(Protocol):
    def nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The `k` ids most similar to `query` (a unit vector), best first, with scores."""


def open_vectors(table: pa.Table) -> VectorIndex:
    """The search over an embeddings table (`id`, `vector`) of an open index."""
    return VectorTable.from_table(table)


class VectorTable:
    """Brute-force cosine search over vectors held in memory."""

    def __init__(self, ids: list[str], matrix: np.ndarray):
        self.ids = ids
        self.matrix = matrix

    @classmethod
    def from_table(cls, table: pa.Table) -> "VectorTable":
        vectors = table.column("vector").combine_chunks()
        if len(vectors) == 0:
            return cls([], np.zeros((0, 0), dtype=np.float32))
        width = len(vectors[0])
        flat = pc.list_flatten(vectors).to_numpy(zero_copy_only=False).astype(np.float32)
        return cls(table.column("id").to_pylist(), flat.reshape(len(vectors), width))

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The `k` ids most similar to `query` (cosine: vectors are unit length), best first."""
        if not self.ids or k <= 0:
            return []
        if query.shape[-1] != self.matrix.shape[1]:
            raise GraphRagError(f"the question's vector has {query.shape[-1]} dimensions and the "
                                f"index's {self.matrix.shape[1]}: query with the embeddings "
                                "settings the index was built with")
        scores = self.matrix @ query.reshape(-1)
        k = min(k, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]
        return [(self.ids[i], float(scores[i])) for i in top]
