"""Extracted instances on storage, hash-partitioned, so they never pass through the driver.

Each extraction batch partitions its own instances (`merge.partition_instances`) and writes one
piece per shard and kind, named after the chunks in the batch:

    <work>/instances/entities/shard-00003/batch-<hash of its chunk ids>.parquet
    <work>/instances/mentions/shard-00003/...   <work>/instances/relationships/shard-00003/...
    <work>/instances/claims/batch-....parquet

Instances carry `seq`, their chunk's position in the corpus; a shard read back is sorted by it
(stably), which restores chunk order: exactly the shard a whole-table partition gives, hence
the same merge. A retried batch rewrites the same names whole, so nothing is counted twice.
"""

from __future__ import annotations

import hashlib

import fsspec
import pyarrow as pa

from graphrag_ray.index.graph.merge import Pieces
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet

KINDS = ("entities", "mentions", "relationships")


def piece_name(chunk_ids: list[str]) -> str:
    digest = hashlib.blake2b("\x00".join(chunk_ids).encode("utf-8"), digest_size=12).hexdigest()
    return f"batch-{digest}.parquet"


def write_pieces(work_url: str, pieces: list[Pieces], claims: pa.Table, name: str) -> None:
    fs, root = fsspec.core.url_to_fs(work_url)
    for shard, tables in enumerate(pieces):
        for kind, table in zip(KINDS, tables):
            if table.num_rows:
                write_parquet(fs, f"{root}/instances/{kind}/shard-{shard:05d}/{name}", table)
    if claims.num_rows:
        write_parquet(fs, f"{root}/instances/claims/{name}", claims)


def _read_dir(fs: fsspec.AbstractFileSystem, folder: str, schema: pa.Schema) -> pa.Table:
    tables = [read_parquet(fs, part).select(schema.names).cast(schema)
              for part in parquet_parts(fs, folder)]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables).sort_by("seq")  # stable: chunk order, then extraction order


def read_shard(work_url: str, shard: int, schemas: tuple[pa.Schema, pa.Schema, pa.Schema]) -> Pieces:
    fs, root = fsspec.core.url_to_fs(work_url)
    return tuple(_read_dir(fs, f"{root}/instances/{kind}/shard-{shard:05d}", schema)
                 for kind, schema in zip(KINDS, schemas))


def read_claims(work_url: str, schema: pa.Schema) -> pa.Table:
    fs, root = fsspec.core.url_to_fs(work_url)
    return _read_dir(fs, f"{root}/instances/claims", schema)
