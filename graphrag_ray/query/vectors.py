"""Similarity search over an index's embeddings tables, behind one seam (`VectorIndex`):
every query method asks `OpenedIndex.vectors(name)` and gets one, made by `open_vectors`.

A table the build gave an approximate index (past `vector_index.ann_min_rows` rows: the
manifest's `vector_stores`) is searched there, on disk or object storage, at the Lance
version this index version was built with (`storage/lance_vectors.LanceVectors`). Any other
is searched brute force (`VectorTable`): exact, one matrix product a question, the vectors
held in memory.
"""

from __future__ import annotations

import warnings
from typing import Callable, Protocol

import numpy as np
import pyarrow as pa

from graphrag_ray.config import VectorIndexConfig
from graphrag_ray.errors import GraphRagError
from graphrag_ray.storage.lance_vectors import vector_matrix
from graphrag_ray.storage.vector_stores import store_of
from graphrag_ray.storage.row_reader import RowReader


class VectorIndex(Protocol):
    def __len__(self) -> int:
        """Vectors searched."""

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The `k` ids most similar to `query` (a unit vector), best first, with scores."""


def open_vectors(name: str, stored: Callable[[str], RowReader],
                 vector_stores: dict[str, dict], index_url: str, storage_options: dict,
                 config: VectorIndexConfig) -> VectorIndex:
    """The search over embeddings table `name` of an open index: its approximate index where
    the build made one, else brute force over the table (`stored(name)`: its rows). An
    approximate index that cannot be opened (pylance missing, its files gone) is said, and
    the table is searched brute force: the question is still answered."""
    entry = vector_stores.get(name)
    if entry:
        try:
            store = store_of(entry)
            if store.reaches(index_url):
                return store.open(index_url, storage_options, name, entry, config)
        except (GraphRagError, OSError, ValueError) as exc:
            warnings.warn(f"{name}: its approximate index ({entry.get('store', 'lance')}, "
                          f"version {entry.get('version')}) cannot be opened ({exc}); "
                          "searching its table brute force", stacklevel=2)
    return VectorTable.from_groups(stored(name))


class VectorTable:
    """Brute-force cosine search over vectors held in memory."""

    def __init__(self, ids: list[str], matrix: np.ndarray):
        self.ids = ids
        self.matrix = matrix

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_table(cls, table: pa.Table) -> "VectorTable":
        return cls(table.column("id").to_pylist(), vector_matrix(table.column("vector")))

    @classmethod
    def from_groups(cls, stored: RowReader) -> "VectorTable":
        """Read a row group at a time into one matrix: the vectors are held once, never
        also as the table they came from."""
        ids, matrix, start = [], None, 0
        for group in stored.groups(["id", "vector"]):
            vectors = vector_matrix(group.column("vector"))
            if not len(vectors):
                continue
            if matrix is None:
                matrix = np.empty((len(stored), vectors.shape[1]), np.float32)
            matrix[start:start + len(vectors)] = vectors
            ids += group.column("id").to_pylist()
            start += len(vectors)
        return cls(ids, np.zeros((0, 0), np.float32) if matrix is None else matrix[:start])

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
