"""An out-of-tree vector store (`vector_index.store: graphrag_testkit.numpy_store:store`): each
table's vectors as one NumPy file per store version beside the index, searched exactly. It
shows the seam (`graphrag_ray.storage.vector_stores`) with nothing of Lance's."""

from __future__ import annotations

import io

import fsspec
import numpy as np

FOLDER = "numpy_vectors"


class NumpyStore:
    def __init__(self):
        self.searches = 0  # questions answered through it, in this process

    def reaches(self, index_url: str) -> bool:
        return True

    def _path(self, index_url: str, table: str, version: int) -> str:
        return f"{index_url.rstrip('/')}/{FOLDER}/{table}-{version}.npz"

    def _versions(self, fs, root: str, table: str) -> list[int]:
        if not fs.exists(root):
            return []
        names = [p.rsplit("/", 1)[-1] for p in fs.ls(root, detail=False)]
        return sorted(int(n[len(table) + 1:-4]) for n in names
                      if n.startswith(f"{table}-") and n.endswith(".npz"))

    def sync(self, index_url, storage_options, table, parts, config, kept_ids, previous):
        fs, root = fsspec.core.url_to_fs(f"{index_url.rstrip('/')}/{FOLDER}",
                                         **(storage_options or {}))
        fs.makedirs(root, exist_ok=True)
        ids, vectors = [], []
        for part in parts(None):
            ids += part.column("id").to_pylist()
            vectors += part.column("vector").to_pylist()
        version = max(self._versions(fs, root, table), default=0) + 1
        buffer = io.BytesIO()
        np.savez(buffer, ids=np.array(ids, dtype=object),
                 vectors=np.asarray(vectors, dtype=np.float32))
        with fs.open(f"{root}/{table}-{version}.npz", "wb") as out:
            out.write(buffer.getvalue())
        return {"version": version, "rows": len(ids)}

    def open(self, index_url, storage_options, table, entry, config):
        with fsspec.open(self._path(index_url, table, int(entry["version"])), "rb",
                         **(storage_options or {})) as file:
            loaded = np.load(io.BytesIO(file.read()), allow_pickle=True)
        return _Search(self, list(loaded["ids"]), loaded["vectors"])

    def forget_before(self, index_url, storage_options, table, oldest_kept, config=None):
        fs, root = fsspec.core.url_to_fs(f"{index_url.rstrip('/')}/{FOLDER}",
                                         **(storage_options or {}))
        old = [v for v in self._versions(fs, root, table) if v < oldest_kept]
        for version in old:
            fs.rm(f"{root}/{table}-{version}.npz")
        return len(old)


class _Search:
    def __init__(self, store: NumpyStore, ids: list[str], matrix: np.ndarray):
        self.store, self.ids, self.matrix = store, ids, matrix

    def __len__(self) -> int:
        return len(self.ids)

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        self.store.searches += 1
        scores = self.matrix @ np.asarray(query, np.float32).reshape(-1)
        best = np.argsort(-scores, kind="stable")[:k]
        return [(self.ids[i], float(scores[i])) for i in best]


store = NumpyStore()
