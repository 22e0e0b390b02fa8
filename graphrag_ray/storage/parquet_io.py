"""Parquet objects on any fsspec filesystem: one table written whole, and the numbered parts
of a table (or the pieces in a work folder) read back in name order."""

from __future__ import annotations

import io

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from graphrag_ray.storage.atomic import write_atomically


def write_parquet(fs: fsspec.AbstractFileSystem, path: str, table: pa.Table) -> None:
    """Written whole (see `write_atomically`): a retried writer replaces it, a reader never
    sees half of it."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    write_atomically(fs, path, buffer.getvalue())


def read_parquet(fs: fsspec.AbstractFileSystem, path: str,
                 columns: list[str] | None = None) -> pa.Table:
    with fs.open(path, "rb") as handle:
        return pq.read_table(handle, columns=columns)


def parquet_parts(fs: fsspec.AbstractFileSystem, folder: str) -> list[str]:
    """The Parquet files in `folder`, in name order; none when it does not exist."""
    try:
        return sorted(p for p in fs.ls(folder, detail=False) if p.endswith(".parquet"))
    except FileNotFoundError:
        return []
