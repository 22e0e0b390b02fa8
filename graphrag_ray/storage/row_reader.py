"""Rows of a stored table by row number, reading only the Parquet row groups that hold them.

A question needs the text of a few dozen text units or reports; holding every one of them
as Python objects made a local query process several times larger than its work. Tables are written
in row groups of about `ROW_GROUP_BYTES`
(`parquet_io.write_parquet`), so taking a row decodes a quarter of a megabyte. Tables
written before that (one row group) still read, a whole group at a time, kept in the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Sequence

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphrag_ray.storage.parquet_io import open_input

# Decoded row groups kept for the next question (a served index's questions touch the same
# central entities' units): at most this many bytes, and always the last one read.
CACHE_BYTES = 64 * 2 ** 20


class RowReader:
    """`take(rows, columns)`: those rows of the table stored in `paths` (its file, or its
    parts in order; at least one), as one table in the order asked. `left_out`: per path,
    the ids of rows that are not the table's (`IndexVersion.left_out`), which the rows'
    numbers skip. Safe to share between threads."""

    def __init__(self, fs: fsspec.AbstractFileSystem, paths: list[str],
                 cache_bytes: int = CACHE_BYTES, left_out: dict[str, pa.Array] | None = None):
        self.fs = fs
        self.paths = paths
        self.cache_bytes = cache_bytes
        self._metadata = [self._read_metadata(path) for path in paths]
        groups = [(part, group, meta.row_group(group).num_rows)
                  for part, meta in enumerate(self._metadata)
                  for group in range(meta.num_row_groups)]
        self._groups = [(part, group) for part, group, _ in groups]
        counts = np.array([rows for _, _, rows in groups], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(counts)])
        # The stored rows that are the table's (None: all), by row number.
        self._kept = self._kept_rows(left_out) if left_out else None
        # ... and the stored row each of the table's rows is.
        self._stored_rows = None if self._kept is None else np.flatnonzero(self._kept)
        self._cache: OrderedDict[tuple[int, tuple[str, ...]], pa.Table] = OrderedDict()
        self._held = 0  # bytes in the cache
        self._lock = threading.Lock()

    def _kept_rows(self, left_out: dict[str, pa.Array]) -> np.ndarray | None:
        masks = []
        for path, meta in zip(self.paths, self._metadata):
            ids = left_out.get(path)
            if ids is None or not len(ids):
                masks.append(np.ones(meta.num_rows, dtype=bool))
                continue
            with self._open(path) as handle:
                stored = pq.read_table(handle, columns=["id"], use_threads=False)
            masks.append(~pc.is_in(stored.column("id"), value_set=ids).to_numpy(
                zero_copy_only=False))
        kept = np.concatenate(masks) if masks else np.zeros(0, dtype=bool)
        return None if kept.all() else kept

    def __len__(self) -> int:
        return int(self._starts[-1]) if self._stored_rows is None else len(self._stored_rows)

    def take(self, rows: Sequence[int], columns: list[str]) -> pa.Table:
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(rows) and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError(f"row out of range 0..{len(self) - 1}")
        if not len(rows):
            return self._metadata[0].schema.to_arrow_schema().empty_table().select(columns)
        if self._kept is not None:
            rows = self._stored_rows[rows]
        groups = np.searchsorted(self._starts, rows, side="right") - 1
        # Each group's rows taken from it (a take over many groups' chunks at once copied
        # them all), then put in the order asked.
        order = np.argsort(groups, kind="stable")
        needed, starts = np.unique(groups[order], return_index=True)
        pieces = [self._group(int(group), tuple(columns)).take(pa.array(
                      rows[mine] - self._starts[group]))
                  for group, mine in zip(needed, np.split(order, starts[1:]))]
        places = np.empty(len(rows), dtype=np.int64)
        places[order] = np.arange(len(rows))
        return pa.concat_tables(pieces).combine_chunks().take(pa.array(places))

    def groups(self, columns: list[str], min_bytes: int = 0):
        """The whole table, a row group at a time, or consecutive groups together until they
        hold `min_bytes` (for work that costs as much per piece as per row); not kept."""
        pending, held = [], 0
        for group, (part, number) in enumerate(self._groups):
            table = self._read_group(part, number, columns)
            if self._kept is not None:
                table = table.filter(pa.array(
                    self._kept[self._starts[group]:self._starts[group + 1]]))
            pending.append(table)
            held += pending[-1].nbytes
            if held >= min_bytes:
                yield pa.concat_tables(pending).combine_chunks()
                pending, held = [], 0
        if pending:
            yield pa.concat_tables(pending).combine_chunks()

    def _group(self, group: int, columns: tuple[str, ...]) -> pa.Table:
        key = (group, columns)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        part, number = self._groups[group]
        table = self._read_group(part, number, list(columns))
        with self._lock:
            if key not in self._cache:
                self._cache[key] = table
                self._held += table.nbytes
            while self._held > self.cache_bytes and len(self._cache) > 1:
                _, dropped = self._cache.popitem(last=False)
                self._held -= dropped.nbytes
        return table

    def _read_metadata(self, path: str) -> pq.FileMetaData:
        with self._open(path) as handle:
            return pq.read_metadata(handle)

    def _read_group(self, part: int, number: int, columns: list[str]) -> pa.Table:
        # Decoded in this thread: Arrow's threads reading through a Python file object can
        # abort the interpreter at exit (see `parquet_io.read_parquet`).
        with self._open(self.paths[part]) as handle:
            return pq.ParquetFile(handle, metadata=self._metadata[part]).read_row_group(
                number, columns=columns, use_threads=False)

    def _open(self, path: str):
        return open_input(self.fs, path)
