"""Parquet objects on any fsspec filesystem: one table written whole, and the numbered parts
of a table (or the pieces in a work folder) read back in name order."""

from __future__ import annotations

import io

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from graphrag_ray.storage.atomic import write_atomically


# Rows per row group: about this many bytes of data, so that a reader taking a few rows by
# number (`row_reader.RowReader`: a question's text units) decodes little besides them. A
# question reads a thousand groups or so.
ROW_GROUP_BYTES = 256 * 2 ** 10
MIN_ROW_GROUP_ROWS = 32


def row_group_rows(table: pa.Table) -> int:
    if not table.num_rows:
        return 1
    per_row = max(1, table.nbytes // table.num_rows)
    return max(MIN_ROW_GROUP_ROWS, ROW_GROUP_BYTES // per_row)


def write_parquet(fs: fsspec.AbstractFileSystem, path: str, table: pa.Table,
                  read_whole: bool = False) -> None:
    """Written whole (see `write_atomically`): a retried writer replaces it, a reader never
    sees half of it. `read_whole`: a work file no reader takes rows of by number, written in
    Arrow's default row groups (the small ones `row_group_rows` gives are slower to
    encode), without dictionaries: its columns are mostly distinct values (ids, titles,
    descriptions, lists of rows), where a dictionary is built to be dropped."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", use_dictionary=not read_whole,
                   row_group_size=None if read_whole else row_group_rows(table))
    write_atomically(fs, path, buffer.getvalue())


def open_input(fs: fsspec.AbstractFileSystem, path: str):
    """A file opened for reading: a local one by Arrow's own reader (no Python file object
    between Arrow and the disk), any other through the filesystem."""
    if isinstance(fs, LocalFileSystem):
        return pa.OSFile(fs._strip_protocol(path), "rb")
    return fs.open(path, "rb")


def read_parquet(fs: fsspec.AbstractFileSystem, path: str,
                 columns: list[str] | None = None) -> pa.Table:
    """A local file is read by Arrow's own file reader (its threads decode the columns);
    any other through the filesystem's file object, decoded in the calling thread: Arrow's
    threads reading through a Python file object leave the interpreter to abort at exit,
    now and then (`terminate called without an active exception`, exit code 134, after the
    program's work is done: apache/arrow#34314, #50482). A local file
    is read as one Parquet file, not through `pq.read_table`'s dataset, whose setting up
    was most of reading a small file (and an update reads thousands)."""
    if isinstance(fs, LocalFileSystem):
        with pa.OSFile(fs._strip_protocol(path), "rb") as handle:
            return pq.ParquetFile(handle).read(columns=columns)
    with fs.open(path, "rb") as handle:
        return pq.read_table(handle, columns=columns, use_threads=False)


def parquet_bounds(fs: fsspec.AbstractFileSystem, path: str, column: str
                   ) -> tuple[object, object] | None:
    """A column's least and greatest values, from the file's statistics, without decoding
    it (an update carrying 2,600 instance pieces read each one's `seq` to learn that its
    files had not moved); None when a row group holds none."""
    with open_input(fs, path) as handle:
        metadata = pq.ParquetFile(handle).metadata
    index = metadata.schema.to_arrow_schema().get_field_index(column)
    bounds = []
    for group in range(metadata.num_row_groups):
        statistics = metadata.row_group(group).column(index).statistics
        if statistics is None or not statistics.has_min_max:
            return None
        bounds.append((statistics.min, statistics.max))
    if not bounds:
        return None
    return min(low for low, _ in bounds), max(high for _, high in bounds)


def parquet_from_bytes(data: bytes, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file's bytes as a table (decoded in the calling thread: `read_parquet`)."""
    return pq.read_table(pa.BufferReader(data), columns=columns, use_threads=False)


def parquet_parts(fs: fsspec.AbstractFileSystem, folder: str) -> list[str]:
    """The Parquet files in `folder`, in name order; none when it does not exist."""
    try:
        return sorted(p for p in fs.ls(folder, detail=False) if p.endswith(".parquet"))
    except FileNotFoundError:
        return []
