"""What an update carries over from the previous version for the files that did not change:
their documents, chunks, extraction status and instances, so that only the added and changed
files are read, chunked and extracted (offline extraction too, which keeps no per-chunk rows).

A build keeps its reading with the version it publishes (`keep_reading`):

    <version>/_reading/documents/files-N.parquet, chunks/, inputs/, shared_content/
                      (the readers' output, `chunks/read_and_chunk`)
    <version>/_reading/instances/...     (the extraction's instances, `extract/instance_shards`)
    <version>/_reading/passages/...      (each document's scanned passages, `passage_scans`)
    <version>/_reading/status.parquet    (one extraction status row per chunk)
    <version>/_reading/files.parquet     (the listing: file index -> path under the input)
    <version>/_reading/repeated.parquet, openings.parquet   (the repeated passages found)
    <version>/_reading/reading.json      (the instances' shard count)

An update with the same settings (`previous_version.settings_fingerprint`) carries an
unchanged file over when its documents read the same against the repeated passages found now
(`passage_scans.reading_signature`: a change elsewhere can make a passage repeated, or move
its first home); the rest is read as in a build. Carried rows are written into the new work
area with their positions (`seq`) renumbered to the current listing, so every later stage
(the merge, Leiden, summaries, reports, tables, embeddings) runs as in a build of the whole
corpus, on the same rows.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import fsspec
from fsspec.implementations.local import LocalFileSystem
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.distributed import map_items
from graphrag_ray.index.chunks.passage_scans import (
    Scan, reading_signature, remap_positions, repeated_from_tables, repeated_table, scans_of)
from graphrag_ray.index.chunks.positions import FILE_SHIFT
from graphrag_ray.index.chunks.repeated_passages import RepeatedPassages
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.extract.instance_shards import CARRIED_PIECE, KEY_COLUMNS, write_dropped
from graphrag_ray.index.extract.kept_extractions import KEPT_EXTRACTIONS
from graphrag_ray.input.loader import relative_path
from graphrag_ray.llm.client import USAGE_FIELDS
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.atomic import copy_whole, write_atomically
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet

READING = "_reading"
# The carrying tasks read and write files (no CPU to speak of) and run beside the pools,
# whose actors hold the CPUs: tasks asking for a CPU waited 27 s for the summaries pool to
# let go at 10M tokens. They ask for none, as the readers do, and are few (`in_shares`): a
# task per part, asking for no CPU, started a process each on 2 cores.
CARRY_TASK_CPUS = 0
# The work area's folders a version keeps for the next update.
KEPT_FOLDERS = ("documents", "chunks", "inputs", "shared_content", "instances", "passages",
                "merged")
TASKS_PER_WORKER = 2  # carrying tasks per `runtime.num_workers`, each taking its share
FILES_SCHEMA = pa.schema([("file_index", pa.int64()), ("path", pa.string())])


def in_shares(items: list, runtime) -> list[list]:
    """`items` in a few consecutive shares, one per carrying task."""
    n = max(1, min(len(items), TASKS_PER_WORKER * runtime.num_workers))
    size = -(-len(items) // n) if items else 1
    return [items[i:i + size] for i in range(0, len(items), size)]


def keep_reading(staged: IndexVersion, files: list[str], input_root: str,
                 extraction: pa.Table, repeated: RepeatedPassages | None, shards: int) -> None:
    """The work area's reading moved into the version (`_reading`), with what an update
    needs to renumber and compare it; the rest of the work area removed."""
    fs = staged.fs
    work, kept = f"{staged.root}/_work", f"{staged.root}/{READING}"
    fs.makedirs(kept, exist_ok=True)
    for folder in KEPT_FOLDERS:
        if fs.exists(f"{work}/{folder}"):
            _move_tree(fs, f"{work}/{folder}", f"{kept}/{folder}")
    staged.write_table(f"{READING}/status", extraction)
    staged.write_table(f"{READING}/files", pa.table(
        {"file_index": pa.array(range(len(files)), pa.int64()),
         "path": pa.array([relative_path(p, input_root) for p in files], pa.string())},
        schema=FILES_SCHEMA))
    keys, openings = repeated_table(repeated)
    staged.write_table(f"{READING}/repeated", keys)
    staged.write_table(f"{READING}/openings", openings)
    write_atomically(fs, f"{kept}/reading.json", json.dumps({"shards": shards}).encode())
    staged.remove("_work")


def _move_tree(fs: fsspec.AbstractFileSystem, source: str, target: str) -> None:
    """A folder renamed on a local disk; on object storage (no folders to rename), moved
    object by object."""
    if isinstance(fs, LocalFileSystem):
        fs.mv(source, target, recursive=True)
        return
    for path in fs.find(source):
        fs.mv(path, target + path[len(source):])


def has_reading(version: IndexVersion) -> bool:
    return version.fs.exists(f"{version.root}/{READING}/reading.json")


@dataclass
class CarriedReading:
    """The previous version's reading and which of its files an update carries over:
    `new_index[old file index]` is the file's index in the current listing, -1 for a file
    read again (changed, deleted, or reading differently now)."""
    previous: IndexVersion
    new_index: np.ndarray
    paths: list[str]  # the previous listing, by old file index
    shards: int
    status: pa.Table  # the previous version's extraction status rows, one per chunk

    @property
    def url(self) -> str:
        return self.previous.url_of(READING)

    def carried_status(self) -> pa.Table:
        """The carried chunks' status rows, renumbered (once the files read again are
        settled)."""
        keep, seq = remap_positions(self.status.column("seq"), self.new_index)
        status = self.status.filter(pa.array(keep))
        return status.set_column(status.column_names.index("seq"), "seq",
                                 pa.array(seq, pa.int64()))

    def text_unit_ids(self) -> pa.ChunkedArray:
        """The carried chunks' ids."""
        return self.carried_status().column("text_unit_id")

    def carried(self) -> int:
        return int((self.new_index >= 0).sum())

    def read_again(self, old_indexes: set[int]) -> None:
        for old in old_indexes:
            self.new_index[old] = -1

    def new_indexes(self) -> set[int]:
        return set(self.new_index[self.new_index >= 0].tolist())


def plan_carry_over(previous: IndexVersion, unchanged: list[str], files: list[str],
                    input_root: str) -> CarriedReading:
    """Every unchanged file of the previous reading, at its place in the current listing."""
    listing = previous.read_table(f"{READING}/files")
    now = {relative_path(path, input_root): i for i, path in enumerate(files)}
    same = set(unchanged)
    paths = listing.column("path").to_pylist()
    new_index = np.full(len(paths), -1, dtype=np.int64)
    for old, path in zip(listing.column("file_index").to_pylist(), paths):
        if path in same and path in now:
            new_index[old] = now[path]
    # A file with a chunk whose extraction failed is read again: the chunk is tried again.
    status = previous.read_table(f"{READING}/status")
    failed = pc.equal(status.column("status"), "failed")
    new_index[np.unique(np.asarray(status.filter(failed).column("seq").to_numpy(),
                                   np.int64) >> FILE_SHIFT)] = -1
    settings = json.loads(previous.fs.cat_file(f"{previous.root}/{READING}/reading.json"))
    return CarriedReading(previous, new_index, paths, settings["shards"], status)


def carry_scans(ctx: BuildContext, carried: CarriedReading) -> list[tuple[int, Scan]]:
    """The carried files' passage scans (a few tasks, each a share of the kept parts),
    written into the work area renumbered; returns (previous position, scan at its current
    position) per document."""
    fs, root = fsspec.core.url_to_fs(carried.url)
    parts = [fs.unstrip_protocol(p) for p in _listing(fs, f"{root}/passages")
             if p.endswith(".parquet")]
    return [pair for group in map_items(
        _carry_scan_parts, [(share, ctx.work_url)
                            for share in in_shares(parts, ctx.config.runtime)],
        ctx.config.runtime, num_cpus=CARRY_TASK_CPUS, shared=[carried.new_index])
        for pair in group]


def _carry_scan_parts(job: tuple[list[str], str], new_index: np.ndarray
                      ) -> list[tuple[int, Scan]]:
    urls, work_url = job
    return [pair for url in urls for pair in _carry_scan_part(url, work_url, new_index)]


def _carry_scan_part(url: str, work_url: str, new_index: np.ndarray) -> list[tuple[int, Scan]]:
    fs, path = fsspec.core.url_to_fs(url)
    table = read_parquet(fs, path)
    keep, positions = remap_positions(table.column("position"), new_index)
    if not keep.any():
        return []
    table = table.filter(pa.array(keep))
    old = table.column("position").to_pylist()
    table = table.set_column(0, "position", pa.array(positions, pa.int64()))
    work_fs, work_root = fsspec.core.url_to_fs(work_url)
    # Named, like the scans of the files read now, by its first file's current index.
    first = int(positions.min()) >> FILE_SHIFT
    write_parquet(work_fs, f"{work_root}/passages/files-{first:08d}.parquet", table)
    return list(zip(old, scans_of(table)))


def reading_differently(carried: CarriedReading, kept: list[tuple[int, Scan]],
                        repeated: RepeatedPassages) -> set[int]:
    """The carried files (previous indexes) with a document that the repeated passages
    found now cut differently from those the previous version found."""
    fs, root = fsspec.core.url_to_fs(carried.url)
    before = repeated_from_tables(read_parquet(fs, f"{root}/repeated.parquet"),
                                  read_parquet(fs, f"{root}/openings.parquet"))
    return {old >> FILE_SHIFT for old, scan in kept
            if reading_signature((old, *scan[1:]), before) != reading_signature(scan, repeated)}


def carry_reading(ctx: BuildContext, carried: CarriedReading,
                  kept_extractions_url: str | None = None) -> pa.Table:
    """The carried files' documents, chunks, input reports and instances written into the
    work area (renumbered), in parallel tasks; returns their chunks' extraction status rows
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
    parts = [p.rsplit("/", 1)[-1][:-len(".json")] for p in _listing(fs, f"{root}/inputs")
             if p.endswith(".json")]
    # Each folder of instance pieces (a kind's shard, the claims) becomes one piece.
    folders = sorted({p[len(root) + 1:].rsplit("/", 1)[0] for p in fs.find(f"{root}/instances")
                      if p.endswith(".parquet")}) if fs.exists(f"{root}/instances") else []
    paths = {carried.paths[i]: int(carried.new_index[i])
             for i in np.flatnonzero(carried.new_index >= 0)}  # carried path -> new index
    map_items(_carry_parts, [(carried.url, share, ctx.work_url)
                             for share in in_shares(parts, ctx.config.runtime)],
              ctx.config.runtime, num_cpus=CARRY_TASK_CPUS, shared=[carried.new_index, paths])
    map_items(_carry_pieces, [(carried.url, share, ctx.work_url)
                              for share in in_shares(folders, ctx.config.runtime)],
              ctx.config.runtime, num_cpus=CARRY_TASK_CPUS, shared=[carried.new_index])
    status = carried.carried_status()
    status = status.set_column(status.column_names.index("reused"), "reused",
                               pa.array(np.ones(status.num_rows, dtype=bool)))
    for name in USAGE_FIELDS:
        status = status.set_column(status.column_names.index(name), name,
                                   pa.array(np.zeros(status.num_rows, dtype=np.int64)))
    return status


# What each embeddings table embeds of which table (`embed/feed.embedding_texts`).
EMBEDDED_TEXT = {schema.ENTITY_DESCRIPTION_EMBEDDINGS: (schema.ENTITIES, ["title", "description"]),
                 schema.REPORT_EMBEDDINGS: (schema.COMMUNITY_REPORTS, ["full_content"])}


def carry_embeddings(carried: CarriedReading, carried_units: pa.ChunkedArray,
                     staged: IndexVersion, queued: bool, runtime
                     ) -> tuple[dict[str, int], dict[str, pa.ChunkedArray]]:
    """The vectors an update copies from the previous version instead of embedding again:
    the carried text units' (a text unit's id is its text's), and, when the tables are
    embedded once written (not `queued` as the stages make them), the entities and reports
    whose embedded text is the previous version's. Returns the rows copied per table and
    the ids copied per table."""
    copied = {schema.TEXT_UNIT_EMBEDDINGS: carried_units}
    if not queued:
        for name, (table, columns) in EMBEDDED_TEXT.items():
            copied[name] = same_texts(carried.previous, staged, table, columns)
    return ({name: carry_vectors(carried, staged, name, ids, runtime)
             for name, ids in copied.items()}, copied)


def same_texts(previous: IndexVersion, staged: IndexVersion, table: str, columns: list[str]
               ) -> pa.ChunkedArray:
    """Ids whose `columns` hold the same text in `staged` as in `previous` (compared by a
    digest of each row, read a part at a time)."""
    def digests(version: IndexVersion) -> dict[str, bytes]:
        found = {}
        for part in version.iter_table(table, ["id", *columns]):
            ids = part.column("id").to_pylist()
            values = zip(*(part.column(c).to_pylist() for c in columns))
            found.update((i, hashlib.blake2b("\x00".join(v or "" for v in row).encode(),
                                             digest_size=16).digest())
                         for i, row in zip(ids, values))
        return found

    before = digests(previous)
    return pa.chunked_array([pa.array([i for i, d in digests(staged).items()
                                       if before.get(i) == d], pa.string())])


def carry_vectors(carried: CarriedReading, staged: IndexVersion, name: str,
                  ids: pa.ChunkedArray, runtime) -> int:
    """The previous version's vectors of `ids` in embeddings table `name`, written as parts
    of the staged table (`part-carried-N-M`, after the parts embedded now in name order);
    returns the rows written."""
    groups = in_shares(carried.previous.table_urls(name), runtime)
    return sum(map_items(_carry_vector_parts, [
        (group, staged.url_of(f"{name}/part-carried-{i:05d}"))
        for i, group in enumerate(groups)], runtime, num_cpus=CARRY_TASK_CPUS, shared=[ids]))


# Bytes of vectors per carried part. One part per share held half a 100M-token index's
# text-unit vectors (~450 MB), which every reader of the table (the vector index's sync, a
# brute-force search) holds whole. (The update's driver peak in the sync, 4.1 GB, was 3.95
# GB with these parts: the sync itself holds more; see the note.)
CARRIED_VECTOR_PART_BYTES = 64 * 2 ** 20
# A previous part this long, every row kept, is carried as it is: the embedded parts a build
# writes (`embed.feed.ROWS_PER_PART`, 1,024) and the carried ones; not the few-row parts of
# a small read batch, which would pile up as files.
CARRIED_WHOLE_ROWS = 512


def _carry_vector_parts(job: tuple[list[str], str], ids: pa.ChunkedArray) -> int:
    """Parts of a previous embeddings table -> the rows of `ids`, gathered into parts of
    about `CARRIED_VECTOR_PART_BYTES` (a table of small parts, one per read batch, is not
    carried part for part; nor in one part, which a reader would hold whole). A part whose
    rows are all kept is carried as it is (`copy_whole`), its vectors neither decoded nor
    encoded again: an add keeps every previous text unit (at 100M tokens, 1.3 GB of
    vectors re-encoded in 12 s)."""
    sources, target = job
    wanted = ids.combine_chunks()
    kept, size, written, rows = [], 0, 0, 0

    def next_part() -> tuple[fsspec.AbstractFileSystem, str]:
        nonlocal written
        written += 1
        return fsspec.core.url_to_fs(f"{target}-{written - 1:04d}.parquet")

    def flush() -> None:
        nonlocal kept, size
        target_fs, target_path = next_part()
        write_parquet(target_fs, target_path, pa.concat_tables(kept))
        kept, size = [], 0

    for source in sources:
        fs, path = fsspec.core.url_to_fs(source)
        keep = pc.is_in(read_parquet(fs, path, ["id"]).column("id"), value_set=wanted)
        count = pc.sum(keep).as_py() or 0
        if count and count == len(keep) and len(keep) >= CARRIED_WHOLE_ROWS:
            if kept:
                flush()  # (the parts stay in the previous table's order)
            target_fs, target_path = next_part()
            copy_whole(fs, path, target_path)
        elif count:
            table = read_parquet(fs, path).filter(keep)
            kept.append(table)
            size += table.nbytes
        rows += count
        if size >= CARRIED_VECTOR_PART_BYTES:
            flush()
    if kept:
        flush()
    return rows


def _listing(fs: fsspec.AbstractFileSystem, folder: str) -> list[str]:
    try:
        return sorted(fs.ls(folder, detail=False))
    except FileNotFoundError:
        return []


def _carry_parts(job: tuple[str, list[str], str], new_index: np.ndarray,
                 paths: dict[str, int]) -> None:
    url, names, work_url = job
    for name in names:
        _carry_part(url, name, work_url, new_index, paths)


def _carry_part(url: str, name: str, work_url: str, new_index: np.ndarray,
                paths: dict[str, int]) -> None:
    """One read batch's documents, chunks, input report and shared content: the carried
    files' rows, renumbered, under the name of the first of them in the current listing."""
    fs, root = fsspec.core.url_to_fs(url)
    work_fs, work_root = fsspec.core.url_to_fs(work_url)
    report = json.loads(fs.cat_file(f"{root}/inputs/{name}.json"))
    files = [f for f in report["files"] if f["path"] in paths]
    # A reader's warning opens with its file's path (which may itself hold ": ").
    owners = tuple(f"{f['path']}: " for f in files)
    report = {"files": files,
              "skipped": [s for s in report["skipped"] if s["path"] in paths],
              "warnings": [w for w in report["warnings"] if owners and w.startswith(owners)],
              "kept_out": [k for k in report.get("kept_out", []) if k[0] in paths]}
    if not report["files"]:
        return
    documents = chunks = None
    if fs.exists(f"{root}/documents/{name}.parquet"):
        documents = read_parquet(fs, f"{root}/documents/{name}.parquet")
        now = new_index[np.asarray(documents.column("file_index").to_numpy(), np.int64)]
        documents = documents.filter(pa.array(now >= 0)).set_column(
            documents.column_names.index("file_index"), "file_index",
            pa.array(now[now >= 0], pa.int64()))
        chunks = read_parquet(fs, f"{root}/chunks/{name}.parquet")
        keep, seq = remap_positions(chunks.column("seq"), new_index)
        chunks = chunks.filter(pa.array(keep))
        chunks = chunks.set_column(chunks.column_names.index("seq"), "seq",
                                   pa.array(seq, pa.int64()))
    target = f"files-{min(paths[f['path']] for f in report['files']):08d}"
    write_atomically(work_fs, f"{work_root}/inputs/{target}.json",
                     json.dumps(report).encode("utf-8"))
    if documents is not None and documents.num_rows:
        write_parquet(work_fs, f"{work_root}/documents/{target}.parquet", documents)
        write_parquet(work_fs, f"{work_root}/chunks/{target}.parquet", chunks)
        if fs.exists(f"{root}/shared_content/{name}.parquet"):
            shared = read_parquet(fs, f"{root}/shared_content/{name}.parquet")
            shared = shared.filter(pc.is_in(shared.column("document_id"),
                                            value_set=documents.column("id")))
            if shared.num_rows:
                write_parquet(work_fs, f"{work_root}/shared_content/{target}.parquet", shared)


def _carry_pieces(job: tuple[str, list[str], str], new_index: np.ndarray) -> None:
    url, folders, work_url = job
    for folder in folders:
        _carry_folder(url, folder, work_url, new_index)


def _carry_folder(url: str, folder: str, work_url: str, new_index: np.ndarray) -> None:
    """One folder of instance pieces (a kind's shard, or the claims): the carried chunks'
    instances, renumbered, as one piece (`carried.parquet`: a shard read back is sorted by
    `seq`, so the pieces' number and order do not matter, and updates do not pile them up)."""
    fs, root = fsspec.core.url_to_fs(url)
    kept, dropped = [], []
    for part in parquet_parts(fs, f"{root}/{folder}"):
        table = read_parquet(fs, part)
        keep, seq = remap_positions(table.column("seq"), new_index)
        if not keep.all():
            dropped.append(table.filter(pa.array(~keep)))
        if keep.any():
            table = table.filter(pa.array(keep))
            kept.append(table.set_column(table.column_names.index("seq"), "seq",
                                         pa.array(seq, pa.int64())))
    if kept:
        work_fs, work_root = fsspec.core.url_to_fs(work_url)
        write_parquet(work_fs, f"{work_root}/{folder}/{CARRIED_PIECE}",
                      pa.concat_tables(kept))
    kind, _, shard = folder.removeprefix("instances/").partition("/shard-")
    if dropped and kind in KEY_COLUMNS:  # (claims are not merged by key)
        write_dropped(work_url, kind, int(shard), pa.concat_tables(dropped))
