"""The reading an update carries over for its unchanged files (their documents, chunks,
input reports and extraction instances, linked or renumbered into the work area while the
files read now are extracted), and the reading a build keeps with its version for the next
update. What is carried is decided below the stages (`carry_over.py`); this is the part that
knows the extraction's instance folders."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from fsspec.implementations.local import LocalFileSystem

from graphrag_ray.index.carry_over import (
    READING, CarriedReading, ReadingTables, as_int64, as_they_were, folder_listing)
from graphrag_ray.index.chunks.positions import DOCUMENT_FILES, FILE_SHIFT, FileMap
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.extract.instance_shards import (
    CARRIED_PREFIX, GATHERED, KEY_COLUMNS, write_dropped, write_gathered)
from graphrag_ray.index.extract.kept_extractions import KEPT_EXTRACTIONS
from graphrag_ray.llm.client import USAGE_FIELDS
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.atomic import copy_whole, write_atomically
from graphrag_ray.storage.index_store import remove_tree
from graphrag_ray.storage.parquet_io import (
    parquet_bounds, parquet_parts, read_parquet, write_parquet)


# The work area's folders a version keeps for the next update.
KEPT_FOLDERS = ("documents", "chunks", "inputs", "shared_content", "instances", "passages",
                "merged")


KEPT_FILES = (f"{DOCUMENT_FILES}.parquet",)  # each document's file number (the writing's)


def keep_reading(staged: IndexVersion, tables: ReadingTables, shards: int) -> None:
    """The work area's reading moved into the version (`_reading`) beside its tables
    (`ReadingTables`); the rest of the work area removed."""
    fs = staged.fs
    work, kept = f"{staged.root}/_work", f"{staged.root}/{READING}"
    fs.makedirs(kept, exist_ok=True)
    _put_gathered_in_place(fs, work)
    for folder in KEPT_FOLDERS:
        if fs.exists(f"{work}/{folder}"):
            _move_tree(fs, f"{work}/{folder}", f"{kept}/{folder}")
    for name in KEPT_FILES:
        if fs.exists(f"{work}/{name}"):
            fs.mv(f"{work}/{name}", f"{kept}/{name}")
    tables.join()
    write_atomically(fs, f"{kept}/reading.json", json.dumps({"shards": shards}).encode())
    staged.remove("_work")


def _put_gathered_in_place(fs: fsspec.AbstractFileSystem, work: str) -> None:
    """Each folder of instances the merge gathered (`instance_shards.gather_shard`) takes the
    place of its pieces."""
    gathered = f"{work}/{GATHERED}"
    if not fs.exists(gathered):
        return
    folders = sorted({path[len(gathered) + 1:].rsplit("/", 1)[0]
                      for path in fs.find(gathered)})
    for folder in folders:
        remove_tree(fs, f"{work}/instances/{folder}")
        _move_tree(fs, f"{gathered}/{folder}", f"{work}/instances/{folder}")


def _move_tree(fs: fsspec.AbstractFileSystem, source: str, target: str) -> None:
    """A folder renamed on a local disk; on object storage (no folders to rename), moved
    object by object."""
    if isinstance(fs, LocalFileSystem):
        fs.mv(source, target, recursive=True)
        return
    for path in fs.find(source):
        fs.mv(path, target + path[len(source):])


# Threads carrying the read batches' parts and the instance folders: linking files, reading
# and writing small ones, mostly waiting on storage, in the driver (as Ray tasks asking for
# no CPU, an update started more worker processes, each
# paying its imports).
CARRY_THREADS = 8


def carry_reading(ctx: BuildContext, carried: CarriedReading,
                  kept_extractions_url: str | None = None) -> pa.Table:
    """The carried files' documents, chunks, input reports and instances written into the
    work area (renumbered), by threads; returns their chunks' extraction status rows
    (marked reused, no usage). `kept_extractions_url`: the previous version's kept LLM
    extractions, copied into this version's (the next update with other settings reuses
    them)."""
    fs, root = fsspec.core.url_to_fs(carried.url)
    if kept_extractions_url:
        kept_fs, kept_root = fsspec.core.url_to_fs(kept_extractions_url)
        target = f"{ctx.staged.root}/{KEPT_EXTRACTIONS}"
        kept_fs.makedirs(target, exist_ok=True)
        for part in parquet_parts(kept_fs, kept_root):
            kept_fs.copy(part, f"{target}/{part.rsplit('/', 1)[-1]}")
    parts = [p.rsplit("/", 1)[-1][:-len(".json")] for p in folder_listing(fs, f"{root}/inputs")
             if p.endswith(".json")]
    # Each folder of instance pieces (a kind's shard, the claims) becomes one piece.
    folders = sorted({p[len(root) + 1:].rsplit("/", 1)[0] for p in fs.find(f"{root}/instances")
                      if p.endswith(".parquet")}) if fs.exists(f"{root}/instances") else []
    new = carried.files.new
    paths = {carried.paths[i]: int(new[i])
             for i in np.flatnonzero(new >= 0)}  # carried path -> its number now
    unmoved = {carried.paths[i] for i in np.flatnonzero(new == carried.files.old)}
    with ThreadPoolExecutor(CARRY_THREADS, thread_name_prefix="carry-reading") as threads:
        list(threads.map(lambda name: _carry_part(carried.url, name, ctx.work_url,
                                                  carried.files, paths, unmoved), parts))
        list(threads.map(lambda folder: _carry_folder(carried.url, folder, ctx.work_url,
                                                      carried.files), folders))
    status = carried.carried_status()
    status = status.set_column(status.column_names.index("reused"), "reused",
                               pa.array(np.ones(status.num_rows, dtype=bool)))
    for name in USAGE_FIELDS:
        status = status.set_column(status.column_names.index(name), name,
                                   pa.array(np.zeros(status.num_rows, dtype=np.int64)))
    return status


def _carry_part(url: str, name: str, work_url: str, files: FileMap,
                paths: dict[str, int], unmoved: set[str]) -> None:
    """One read batch's documents, chunks, input report and shared content: the carried
    files' rows, under the name of the first of them in the current listing; linked as they
    are when every file of the batch is carried at the number it had (`unmoved`: then so is
    every document, numbered by its file, and the documents need not be read to know it)."""
    fs, root = fsspec.core.url_to_fs(url)
    work_fs, work_root = fsspec.core.url_to_fs(work_url)
    stored = json.loads(fs.cat_file(f"{root}/inputs/{name}.json"))
    report = {"files": [f for f in stored["files"] if f["path"] in paths],
              "skipped": [s for s in stored["skipped"] if s["path"] in paths]}
    if not report["files"]:
        return
    whole = len(report["files"]) == len(stored["files"]) \
        and len(report["skipped"]) == len(stored["skipped"]) \
        and all(f["path"] in unmoved for f in report["files"])
    sources = {folder: f"{root}/{folder}/{name}.parquet"
               for folder in ("documents", "chunks", "shared_content")}
    target = f"files-{min(paths[f['path']] for f in report['files']):08d}"
    if whole:
        copy_whole(fs, f"{root}/inputs/{name}.json", f"{work_root}/inputs/{target}.json")
        for folder, source in sources.items():
            if fs.exists(source):
                copy_whole(fs, source, f"{work_root}/{folder}/{target}.parquet")
        return
    # A reader's warning opens with its file's path (which may itself hold ": ").
    owners = tuple(f"{f['path']}: " for f in report["files"])
    report["warnings"] = [w for w in stored["warnings"] if owners and w.startswith(owners)]
    report["kept_out"] = [k for k in stored.get("kept_out", []) if k[0] in paths]
    write_atomically(work_fs, f"{work_root}/inputs/{target}.json",
                     json.dumps(report).encode("utf-8"))
    if not fs.exists(sources["documents"]):
        return
    documents = read_parquet(fs, sources["documents"])
    keep, now = files.remap(as_int64(documents.column("file_index")) << FILE_SHIFT)
    documents = documents.filter(pa.array(keep)).set_column(
        documents.column_names.index("file_index"), "file_index",
        pa.array(now >> FILE_SHIFT, pa.int64()))
    if not documents.num_rows:
        return
    chunks = read_parquet(fs, sources["chunks"])
    keep, seq = files.remap(as_int64(chunks.column("seq")))
    chunks = chunks.filter(pa.array(keep))
    chunks = chunks.set_column(chunks.column_names.index("seq"), "seq", pa.array(seq, pa.int64()))
    write_parquet(work_fs, f"{work_root}/documents/{target}.parquet", documents)
    write_parquet(work_fs, f"{work_root}/chunks/{target}.parquet", chunks)
    if fs.exists(sources["shared_content"]):
        shared = read_parquet(fs, sources["shared_content"])
        shared = shared.filter(pc.is_in(shared.column("document_id"),
                                        value_set=documents.column("id")))
        if shared.num_rows:
            write_parquet(work_fs, f"{work_root}/shared_content/{target}.parquet", shared)


def _carry_folder(url: str, folder: str, work_url: str, files: FileMap) -> None:
    """One folder of instance pieces (a kind's shard, or the claims): the carried chunks'
    instances. A piece whose chunks are all carried at the positions they had is linked
    (as `carried-<its name>`, which tells the merge it is not new: `read_changes`); the
    other pieces' carried rows are gathered, renumbered, in `seq` order
    (`instance_shards.write_gathered`: a shard read back is sorted by `seq`, so the pieces'
    number and order do not matter; a folder of too many pieces the merge gathers). The
    instances not carried are written as dropped, for the merge."""
    fs, root = fsspec.core.url_to_fs(url)
    work_fs, work_root = fsspec.core.url_to_fs(work_url)
    kept, dropped = [], []
    for part in parquet_parts(fs, f"{root}/{folder}"):
        bounds = parquet_bounds(fs, part, "seq")
        unmoved = bounds is not None and files.unmoved(bounds[0] >> FILE_SHIFT,
                                                       bounds[1] >> FILE_SHIFT)
        if not unmoved:
            old = as_int64(read_parquet(fs, part, ["seq"]).column("seq"))
            keep, seq = files.remap(old)
        if unmoved or as_they_were(old, keep, seq):
            name = part.rsplit("/", 1)[-1]
            if not name.startswith(CARRIED_PREFIX):
                name = f"{CARRIED_PREFIX}-{name}"
            copy_whole(fs, part, f"{work_root}/{folder}/{name}")
            continue
        table = read_parquet(fs, part)
        if not keep.all():
            dropped.append(table.filter(pa.array(~keep)))
        if keep.any():
            table = table.filter(pa.array(keep))
            kept.append(table.set_column(table.column_names.index("seq"), "seq",
                                         pa.array(seq, pa.int64())))
    if kept:
        write_gathered(work_fs, f"{work_root}/{folder}", pa.concat_tables(kept).sort_by("seq"))
    kind, _, shard = folder.removeprefix("instances/").partition("/shard-")
    if dropped and kind in KEY_COLUMNS:  # (claims are not merged by key)
        write_dropped(work_url, kind, int(shard), pa.concat_tables(dropped))
