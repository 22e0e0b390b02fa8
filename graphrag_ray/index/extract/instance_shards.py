"""Extracted instances on storage, hash-partitioned, so they never pass through the driver.

Each extraction batch partitions its own instances (`merge.partition_instances`) and writes one
piece per shard and kind, named after the chunks in the batch:

    <work>/instances/entities/shard-00003/batch-<hash of its chunk ids>.parquet
    <work>/instances/mentions/shard-00003/...   <work>/instances/relationships/shard-00003/...
    <work>/instances/claims/batch-....parquet

Instances carry `seq`, their chunk's position in the corpus; a shard read back is sorted by it
(stably), which restores chunk order: exactly the shard a whole-table partition gives, hence
the same merge. A retried batch rewrites the same names whole, so nothing is counted twice.

A build writes a piece per extraction batch (hundreds per folder at scale), and a reader
pays for each piece it opens: the merge, which reads a shard
whole anyway, writes a folder past `GATHER_PAST_PIECES` pieces again as bounded ones
(`gather_shard`), under `<work>/gathered/`, which the version keeps in its place
(`carry_over.keep_reading`).

An update links the unchanged files' pieces, or gathers their rows into bounded pieces, under names
that start with `CARRIED_PREFIX` (`carry_over._carry_folder`), and writes the keys of the
previous instances it did not carry (files changed, deleted, read again) under
`<work>/dropped/<kind>/shard-NNNNN.parquet`: with the pieces extracted now, they are what
changed in each shard (`read_changes`), which the merge merges again (`touched_merge`).
"""

from __future__ import annotations

import hashlib

import fsspec
import numpy as np
import pyarrow as pa

from graphrag_ray.index.elements import Pieces
from graphrag_ray.storage.index_store import remove_tree
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet

KINDS = ("entities", "mentions", "relationships")
# What identifies an instance's element: an entity's (or a mention's) title, a relationship's
# endpoints.
KEY_COLUMNS = {"entities": ("title",), "mentions": ("title",),
               "relationships": ("source", "target")}
CARRIED_PREFIX = "carried"  # a piece an update carried over from the previous version
DROPPED = "dropped"
GATHERED = "gathered"  # `<work>/gathered/<kind>/shard-NNNNN/`: a folder's pieces, gathered
# Rows of a gathered piece, at most: a later update that touches one of its files (deleted,
# changed, numbered again) writes the whole piece again. Gathered into one, the pieces of an
# update that renumbered every file (a 100M-token index: ~140k instances a shard) made every
# later update that touched any file write the shard's instances again.
GATHERED_PIECE_ROWS = 16_384
# Pieces of a kind in a shard past which the merge gathers them. A fresh 100M-token build's
# hundreds of pieces a folder made each later update open them all twice (carrying them,
# then merging); an update adds a few pieces a folder (its extraction
# batches, the gathered pieces it rewrote), so a folder is gathered every few updates.
GATHER_PAST_PIECES = 32


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


def write_gathered(fs: fsspec.AbstractFileSystem, folder: str, instances: pa.Table) -> None:
    """`instances` (in `seq` order) as pieces of at most `GATHERED_PIECE_ROWS` rows, named
    `CARRIED_PREFIX` with their first `seq` and their number (a chunk's instances may span
    two pieces): listed in name order they are in `seq` order."""
    for number, start in enumerate(range(0, instances.num_rows, GATHERED_PIECE_ROWS)):
        piece = instances.slice(start, GATHERED_PIECE_ROWS)
        first = piece.column("seq")[0].as_py()
        write_parquet(fs, f"{folder}/{CARRIED_PREFIX}-{first:019d}-{number:05d}.parquet", piece,
                      read_whole=True)


def gather_shard(work_url: str, shard: int, pieces: Pieces) -> None:
    """Each of the shard's folders holding more than `GATHER_PAST_PIECES` pieces written
    again, as `pieces` hold it (read by `read_shard`), into `<work>/gathered/`. The pieces
    themselves stay until the version keeps its reading (resolution reads them after the
    merge); a retried task writes its folders afresh."""
    fs, root = fsspec.core.url_to_fs(work_url)
    folder = f"shard-{shard:05d}"
    for kind, instances in zip(KINDS, pieces):
        if len(parquet_parts(fs, f"{root}/instances/{kind}/{folder}")) <= GATHER_PAST_PIECES:
            continue
        target = f"{root}/{GATHERED}/{kind}/{folder}"
        if fs.exists(target):
            remove_tree(fs, target)
        write_gathered(fs, target, instances)


def _read_dir(fs: fsspec.AbstractFileSystem, folder: str, schema: pa.Schema,
              carried: bool = True) -> pa.Table:
    """The folder's pieces as one table in `seq` order (`carried`: with the pieces an
    update carried over)."""
    tables = [read_parquet(fs, part).select(schema.names).cast(schema)
              for part in (parquet_parts(fs, folder) if carried else _new_parts(fs, folder))]
    if not tables:
        return schema.empty_table()
    table = pa.concat_tables(tables)
    # Chunk order, then extraction order (a stable sort). Pieces named by their first chunk
    # come in order but where an update extracted files among the carried ones, so rows
    # already in order (the common case) are not sorted again.
    seq = table.column("seq").to_numpy()
    return table if bool(np.all(seq[1:] >= seq[:-1])) else table.sort_by("seq")


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


def only_added(work_url: str, shard: int) -> bool:
    """Whether the shard's changes are only instances extracted now (nothing dropped), in
    folders the merge need not gather: its merge needs no carried instance
    (`graph/added_merge`)."""
    fs, root = fsspec.core.url_to_fs(work_url)
    return not any(fs.exists(f"{root}/{DROPPED}/{kind}/shard-{shard:05d}.parquet") or
                   len(parquet_parts(fs, f"{root}/instances/{kind}/shard-{shard:05d}"))
                   > GATHER_PAST_PIECES for kind in KINDS)


def read_new(work_url: str, shard: int, schemas: tuple[pa.Schema, pa.Schema, pa.Schema]
             ) -> Pieces:
    """The shard's instances extracted now (every piece but the carried ones)."""
    fs, root = fsspec.core.url_to_fs(work_url)
    return tuple(_read_dir(fs, f"{root}/instances/{kind}/shard-{shard:05d}", schema,
                           carried=False) for kind, schema in zip(KINDS, schemas))


def read_changes(work_url: str, shard: int) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Per kind, the keys (`KEY_COLUMNS`) of the shard's instances that differ from the
    previous version's: those extracted now (every piece but the carried ones) and those
    the carry dropped."""
    fs, root = fsspec.core.url_to_fs(work_url)
    changes = []
    for kind in KINDS:
        columns = list(KEY_COLUMNS[kind])
        paths = _new_parts(fs, f"{root}/instances/{kind}/shard-{shard:05d}")
        dropped = f"{root}/{DROPPED}/{kind}/shard-{shard:05d}.parquet"
        if fs.exists(dropped):
            paths.append(dropped)
        tables = [read_parquet(fs, path, columns) for path in paths]
        changes.append(pa.concat_tables(tables) if tables else pa.table(
            {c: pa.array([], pa.string()) for c in columns}))
    return tuple(changes)


def _new_parts(fs: fsspec.AbstractFileSystem, folder: str) -> list[str]:
    return [p for p in parquet_parts(fs, folder)
            if not p.rsplit("/", 1)[-1].startswith(CARRIED_PREFIX)]
