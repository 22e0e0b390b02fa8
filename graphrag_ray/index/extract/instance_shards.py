"""Extracted instances on storage, hash-partitioned, so they never pass through the driver.

Each extraction batch partitions its own instances (`merge.partition_instances`) and writes one
piece per shard and kind, named after the chunks in the batch:

    <work>/instances/entities/shard-00003/batch-<hash of its chunk ids>.parquet
    <work>/instances/mentions/shard-00003/...   <work>/instances/relationships/shard-00003/...
    <work>/instances/claims/batch-....parquet

Instances carry `seq`, their chunk's position in the corpus; a shard read back is sorted by it
(stably), which restores chunk order: exactly the shard a whole-table partition gives, hence
the same merge. A retried batch rewrites the same names whole, so nothing is counted twice.

An update links the unchanged files' pieces, or gathers their rows into bounded pieces, under names
that start with `CARRIED_PREFIX` (`carry_over._carry_folder`), and writes the keys of the
previous instances it did not carry (files changed, deleted, read again) under
`<work>/dropped/<kind>/shard-NNNNN.parquet`: with the pieces extracted now, they are what
changed in each shard (`read_changes`), which the merge merges again (`touched_merge`).
"""

from __future__ import annotations

import hashlib

import fsspec
import pyarrow as pa

from graphrag_ray.index.graph.merge import Pieces
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet

KINDS = ("entities", "mentions", "relationships")
# What identifies an instance's element: an entity's (or a mention's) title, a relationship's
# endpoints.
KEY_COLUMNS = {"entities": ("title",), "mentions": ("title",),
               "relationships": ("source", "target")}
CARRIED_PREFIX = "carried"  # a piece an update carried over from the previous version
DROPPED = "dropped"


def piece_name(chunk_ids: list[str]) -> str:
    digest = hashlib.blake2b("\x00".join(chunk_ids).encode("utf-8"), digest_size=12).hexdigest()
    return f"batch-{digest}.parquet"


def write_pieces(work_url: str, pieces: list[Pieces], claims: pa.Table, name: str) -> None:
    fs, root = fsspec.core.url_to_fs(work_url)
    for shard, tables in enumerate(pieces):
        for kind, table in zip(KINDS, tables):
            if table.num_rows:
                write_parquet(fs, f"{root}/instances/{kind}/shard-{shard:05d}/{name}", table,
                              read_whole=True)
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


def write_dropped(work_url: str, kind: str, shard: int, table: pa.Table) -> None:
    """The keys of a shard's previous instances that an update did not carry."""
    fs, root = fsspec.core.url_to_fs(work_url)
    write_parquet(fs, f"{root}/{DROPPED}/{kind}/shard-{shard:05d}.parquet",
                  table.select(list(KEY_COLUMNS[kind])))


def read_changes(work_url: str, shard: int) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Per kind, the keys (`KEY_COLUMNS`) of the shard's instances that differ from the
    previous version's: those extracted now (every piece but the carried ones) and those
    the carry dropped."""
    fs, root = fsspec.core.url_to_fs(work_url)
    changes = []
    for kind in KINDS:
        columns = list(KEY_COLUMNS[kind])
        paths = [p for p in parquet_parts(fs, f"{root}/instances/{kind}/shard-{shard:05d}")
                 if not p.rsplit("/", 1)[-1].startswith(CARRIED_PREFIX)]
        dropped = f"{root}/{DROPPED}/{kind}/shard-{shard:05d}.parquet"
        if fs.exists(dropped):
            paths.append(dropped)
        tables = [read_parquet(fs, path, columns) for path in paths]
        changes.append(pa.concat_tables(tables) if tables else pa.table(
            {c: pa.array([], pa.string()) for c in columns}))
    return tuple(changes)
