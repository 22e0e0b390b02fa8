"""Parquet tables and a JSON manifest under one fsspec URL (local path, memory://, s3://...).

The manifest is written last: a folder without one is not an index a reader may open.
"""

from __future__ import annotations

import json
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from graphrag_ray import schema
from graphrag_ray.errors import IndexNotFoundError


class IndexStore:
    def __init__(self, url: str, **storage_options):
        filesystem, root = fsspec.core.url_to_fs(url, **storage_options)
        self.url = url
        self.fs = filesystem
        self.root = root.rstrip("/")

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def write_table(self, name: str, table: pa.Table) -> None:
        self.fs.makedirs(self.root, exist_ok=True)
        with self.fs.open(self._path(f"{name}.parquet"), "wb") as handle:
            pq.write_table(table, handle, compression="zstd")

    def has_table(self, name: str) -> bool:
        return self.fs.exists(self._path(f"{name}.parquet"))

    def read_table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        path = self._path(f"{name}.parquet")
        if not self.fs.exists(path):
            raise IndexNotFoundError(f"table {name!r} is missing from the index at {self.url}")
        with self.fs.open(path, "rb") as handle:
            return pq.read_table(handle, columns=columns)

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.fs.makedirs(self.root, exist_ok=True)
        with self.fs.open(self._path(schema.MANIFEST), "w") as handle:
            json.dump(manifest, handle, indent=2, sort_keys=True, default=str)

    def read_manifest(self) -> dict[str, Any]:
        path = self._path(schema.MANIFEST)
        if not self.fs.exists(path):
            raise IndexNotFoundError(
                f"no index at {self.url}: {schema.MANIFEST} is missing "
                "(run `graphrag-ray index` first, or the build did not finish)"
            )
        with self.fs.open(path, "r") as handle:
            return json.load(handle)

    def remove_manifest(self) -> None:
        """Unpublish before overwriting, so a reader never sees new tables under an old manifest."""
        path = self._path(schema.MANIFEST)
        if self.fs.exists(path):
            self.fs.rm(path)
