"""What an update carries over from the previous version for the files that did not change:
their documents, chunks, extraction status and instances, so that only the added and changed
files are read, chunked and extracted (offline extraction too, which keeps no per-chunk rows).

A build keeps its reading with the version it publishes (`keep_reading`):

    <version>/_reading/documents/files-N.parquet, chunks/, inputs/, shared_content/
                      (the readers' output, `chunks/read_and_chunk`)
    <version>/_reading/instances/...     (the extraction's instances, `extract/instance_shards`)
    <version>/_reading/passages/documents.parquet   (every document's scanned passages)
    <version>/_reading/status.parquet    (one extraction status row per chunk)
    <version>/_reading/files.parquet     (the listing: file index -> path under the input)
    <version>/_reading/document_files.parquet   (document id -> file index, `write`)
    <version>/_reading/repeated.parquet, openings.parquet   (the repeated passages found)
    <version>/_reading/reading.json      (the instances' shard count)

An update with the same settings (`previous_version.settings_fingerprint`) carries an
unchanged file over when its documents read the same against the repeated passages found now
(`passage_scans.reading_signature`: a change elsewhere can make a passage repeated, or move
its first home); the rest is read as in a build. Carried rows go into the new work area at
their positions (`seq`) in the current listing, so every later stage (the merge, Leiden,
summaries, reports, tables, embeddings) runs as in a build of the whole corpus, on the same
rows. A file keeps its number across versions (`positions.file_numbers`), so a stored part
whose rows are all carried, at the positions they had, is linked into the work area as it is
(`copy_whole`): an update that adds files neither reads nor writes the carried reading. Only
a part with a file gone, or every part when the files had to be numbered afresh, is read,
filtered, renumbered and written.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import fsspec
from fsspec.implementations.local import LocalFileSystem
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.distributed import map_items
from graphrag_ray.index.chunks.passage_scans import (
    Scan, reading_signature, repeated_from_tables, repeated_table, scans_of)
from graphrag_ray.index.chunks.positions import FILE_SHIFT, FileMap
from graphrag_ray.index.chunks.repeated_passages import RepeatedPassages
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.extract.instance_shards import (
    CARRIED_PREFIX, GATHERED, KEY_COLUMNS, write_dropped, write_gathered)
from graphrag_ray.index.extract.kept_extractions import KEPT_EXTRACTIONS
from graphrag_ray.index.write.documents_and_text_units import DOCUMENT_FILES
from graphrag_ray.input.loader import relative_path
from graphrag_ray.llm.client import USAGE_FIELDS
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.index_store import LEFT_OUT_SHARE, remove_tree
from graphrag_ray.storage.atomic import copy_whole, write_atomically
from graphrag_ray.storage.parquet_io import (
    parquet_bounds, parquet_parts, read_parquet, write_parquet)

READING = "_reading"
# The carrying tasks read and write files (no CPU to speak of) and run beside the pools,
# whose actors hold the CPUs: tasks asking for a CPU waited 27 s for the summaries pool to
# let go at 10M tokens. They ask for none, as the readers do, and are few (`in_shares`): a
# task per part, asking for no CPU, started a process each on 2 cores.
CARRY_TASK_CPUS = 0
# The work area's folders a version keeps for the next update.
KEPT_FOLDERS = ("documents", "chunks", "inputs", "shared_content", "instances", "passages",
                "merged")
KEPT_FILES = (f"{DOCUMENT_FILES}.parquet",)  # each document's file number (the writing's)
TASKS_PER_WORKER = 2  # carrying tasks per `runtime.num_workers`, each taking its share
FILES_SCHEMA = pa.schema([("file_index", pa.int64()), ("path", pa.string())])


def in_shares(items: list, runtime) -> list[list]:
    """`items` in a few consecutive shares, one per carrying task."""
    n = max(1, min(len(items), TASKS_PER_WORKER * runtime.num_workers))
    size = -(-len(items) // n) if items else 1
    return [items[i:i + size] for i in range(0, len(items), size)]


class ReadingTables:
    """The reading's tables an update places and compares by (each chunk's status row, the
    listing with each file's number, the repeated passages and openings), written into the
    version by a thread from the moment extraction is done, while the graph is made: the
    status rows of a 100M-token index are ~0.9 s of Parquet writing that the build's last
    stage waited on. `join()` waits (and raises what the thread raised)."""

    def __init__(self, staged: IndexVersion, files: list[str], numbers: np.ndarray,
                 input_root: str, extraction: pa.Table, repeated: RepeatedPassages | None):
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="reading-tables")
        self._written = self._thread.submit(self._write, staged, files, numbers, input_root,
                                            extraction, repeated)

    @staticmethod
    def _write(staged: IndexVersion, files: list[str], numbers: np.ndarray, input_root: str,
               extraction: pa.Table, repeated: RepeatedPassages | None) -> None:
        staged.write_table(f"{READING}/status", extraction)
        staged.write_table(f"{READING}/files", pa.table(
            {"file_index": pa.array(numbers, pa.int64()),
             "path": pa.array([relative_path(p, input_root) for p in files], pa.string())},
            schema=FILES_SCHEMA))
        keys, openings = repeated_table(repeated)
        staged.write_table(f"{READING}/repeated", keys)
        staged.write_table(f"{READING}/openings", openings)

    def join(self) -> None:
        try:
            self._written.result()
        finally:
            self._thread.shutdown()

    def close(self) -> None:
        """Waits for the thread (a failed build removes the version it writes into)."""
        self._thread.shutdown(wait=True)


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


def has_reading(version: IndexVersion) -> bool:
    return version.fs.exists(f"{version.root}/{READING}/reading.json")


def previous_numbers(version: IndexVersion | None) -> dict[str, int]:
    """The previous listing's file numbers by path (under the input root), which an update
    keeps (`positions.file_numbers`); none when the version kept no reading."""
    if version is None or not has_reading(version):
        return {}
    listing = version.read_table(f"{READING}/files")
    return dict(zip(listing.column("path").to_pylist(),
                    listing.column("file_index").to_pylist()))


@dataclass
class CarriedReading:
    """The previous version's reading and which of its files an update carries over:
    `files` maps each previous file number to the file's number now, -1 for a file read
    again (changed, deleted, or reading differently now)."""
    previous: IndexVersion
    files: FileMap
    paths: list[str]  # the previous listing, in the order of `files.old`
    shards: int
    status: pa.Table  # the previous version's extraction status rows, one per chunk

    @property
    def url(self) -> str:
        return self.previous.url_of(READING)

    def carried_status(self) -> pa.Table:
        """The carried chunks' status rows, renumbered (once the files read again are
        settled)."""
        keep, seq = self.files.remap(_int64(self.status.column("seq")))
        status = self.status.filter(pa.array(keep))
        return status.set_column(status.column_names.index("seq"), "seq",
                                 pa.array(seq, pa.int64()))

    def text_unit_ids(self) -> pa.ChunkedArray:
        """The carried chunks' ids."""
        return self.carried_status().column("text_unit_id")

    def text_unit_ids_gone(self) -> pa.Array:
        """The previous chunks' ids that no carried chunk has (their files changed, went, or
        are read again; a carried chunk of the same text keeps its id): few, where the
        carried are nearly all."""
        keep, _ = self.files.remap(_int64(self.status.column("seq")))
        ids = self.status.column("text_unit_id")
        gone = ids.filter(pa.array(~keep)).combine_chunks()
        if not len(gone):
            return gone
        return gone.filter(pc.invert(pc.is_in(gone, value_set=ids.filter(pa.array(keep)))))

    def carried(self) -> int:
        return len(self.files.carried())

    def read_again(self, old_numbers: set[int]) -> None:
        self.files.drop(old_numbers)

    def carried_numbers(self) -> set[int]:
        """The carried files' numbers in the current listing."""
        return set(self.files.carried().tolist())


def _int64(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(column.to_numpy(), dtype=np.int64)


def plan_carry_over(previous: IndexVersion, unchanged: list[str], files: list[str],
                    numbers: np.ndarray, input_root: str) -> CarriedReading:
    """Every unchanged file of the previous reading, at its number in the current listing
    (`numbers`, by place in `files`)."""
    listing = previous.read_table(f"{READING}/files").sort_by("file_index")
    now = {relative_path(path, input_root): int(n) for path, n in zip(files, numbers)}
    same = set(unchanged)
    paths = listing.column("path").to_pylist()
    files_now = FileMap(_int64(listing.column("file_index")),
                        np.asarray([now[p] if p in same and p in now else -1 for p in paths],
                                   dtype=np.int64))
    # A file with a chunk whose extraction failed is read again: the chunk is tried again.
    status = previous.read_table(f"{READING}/status")
    failed = pc.equal(status.column("status"), "failed")
    files_now.drop(set((_int64(status.filter(failed).column("seq")) >> FILE_SHIFT).tolist()))
    settings = json.loads(previous.fs.cat_file(f"{previous.root}/{READING}/reading.json"))
    return CarriedReading(previous, files_now, paths, settings["shards"], status)


def carry_scans(ctx: BuildContext, carried: CarriedReading
                ) -> tuple[list[tuple[int, Scan]], list[pa.Table]]:
    """The carried files' passage scans: (previous position, scan at its current position)
    per document, and the same as tables (`passage_scans.SCAN_SCHEMA`), renumbered, for the
    version to keep (`passage_scans.write_scans`). Read by the driver's threads (a version
    written before the scans were kept whole has a part per read batch, a few kilobytes
    each: opening it is most of its cost), not by Ray tasks, which pickled the scans to
    send them back (2.4 s of a 1% update at 100M tokens) and waited for Ray to start, which
    now starts meanwhile (`find_repeated_passages`)."""
    fs, root = fsspec.core.url_to_fs(carried.url)
    parts = [fs.unstrip_protocol(p) for p in _listing(fs, f"{root}/passages")
             if p.endswith(".parquet")]
    with ThreadPoolExecutor(SCAN_READING_THREADS, thread_name_prefix="carry-scans") as threads:
        carried_parts = [part for part in threads.map(
            lambda url: _carry_scan_part(url, carried.files), parts) if part is not None]
    return ([pair for pairs, _ in carried_parts for pair in pairs],
            [table for _, table in carried_parts])


# Threads reading the carried passage scans: enough to keep object storage's round trips
# overlapping, few enough for two cores.
SCAN_READING_THREADS = 8


def _carry_scan_part(url: str, files: FileMap
                     ) -> tuple[list[tuple[int, Scan]], pa.Table] | None:
    fs, path = fsspec.core.url_to_fs(url)
    table = read_parquet(fs, path)
    old = _int64(table.column("position"))
    keep, positions = files.remap(old)
    if not keep.any():
        return None
    if not _as_they_were(old, keep, positions):
        table = table.filter(pa.array(keep))
        table = table.set_column(0, "position", pa.array(positions, pa.int64()))
    return list(zip(old[keep].tolist(), scans_of(table))), table


def _as_they_were(old: np.ndarray, keep: np.ndarray, positions: np.ndarray) -> bool:
    """Whether a stored part's rows are all carried at the positions they had (the part
    is linked as it is)."""
    return bool(keep.all()) and np.array_equal(old, positions)


def reading_differently(carried: CarriedReading, kept: list[tuple[int, Scan]],
                        repeated: RepeatedPassages) -> set[int]:
    """The carried files (previous indexes) with a document that the repeated passages
    found now cut differently from those the previous version found."""
    fs, root = fsspec.core.url_to_fs(carried.url)
    before = repeated_from_tables(read_parquet(fs, f"{root}/repeated.parquet"),
                                  read_parquet(fs, f"{root}/openings.parquet"))
    return {old >> FILE_SHIFT for old, scan in kept
            if reading_signature((old, *scan[1:]), before) != reading_signature(scan, repeated)}


# Threads carrying the read batches' parts and the instance folders: linking files, reading
# and writing small ones, mostly waiting on storage, in the driver (as Ray tasks asking for
# no CPU, a 1% update at 100M tokens started two to six more worker processes, each
# importing for a second or two on 2 cores: 3.4-5.3 s, against 3.0-3.2 s in threads).
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
    parts = [p.rsplit("/", 1)[-1][:-len(".json")] for p in _listing(fs, f"{root}/inputs")
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
    # The text units' vectors are chosen by the few ids not carried, which the tasks match
    # in Arrow, rather than by a Python set of the ~all carried (2.3 s of a 1% add at 100M).
    gone = {schema.TEXT_UNIT_EMBEDDINGS: carried.text_unit_ids_gone()}
    return ({name: carry_vectors(carried, staged, name, ids, runtime, gone.get(name))
             for name, ids in copied.items()}, copied)


def same_texts(previous: IndexVersion, staged: IndexVersion, table: str, columns: list[str]
               ) -> pa.ChunkedArray:
    """Ids whose `columns` hold the same text in `staged` as in `previous` (a null as an
    empty text). The rows of a part the update linked from `previous` (`link_parts`) are
    the previous rows as they were; the others' texts are compared in Arrow with the
    previous rows of their ids (not both tables' texts read whole: a large index's reports
    hold hundreds of MB of contents)."""
    same = [part.column("id").combine_chunks()
            for part in staged.iter_table(table, ["id"], linked=True)]
    written = list(staged.iter_table(table, ["id", *columns], linked=False))
    ids = pa.chunked_array([part.column("id") for part in written], type=pa.string())
    found = list(previous.iter_rows_with(table, ["id", *columns], ids.combine_chunks())
                 ) if len(ids) else []
    if not found:  # (nothing written now was there before)
        return pa.chunked_array(same, type=pa.string())
    before = pa.concat_tables(found)
    for part in written:
        at = pc.index_in(part.column("id"), value_set=before.column("id"))
        found = pc.is_valid(at)
        part, rows = part.filter(found), at.filter(found)
        equal = pa.array(np.ones(part.num_rows, dtype=bool))
        for column in columns:
            equal = pc.and_(equal, pc.equal(part.column(column).fill_null(""),
                                            before.column(column).take(rows).fill_null("")))
        same.append(part.column("id").filter(equal).combine_chunks())
    return pa.chunked_array(same, type=pa.string())


def carry_vectors(carried: CarriedReading, staged: IndexVersion, name: str,
                  ids: pa.ChunkedArray, runtime, gone: pa.Array | None = None) -> int:
    """The previous version's vectors of `ids` in embeddings table `name` (`gone`: the
    previous ids that are not among them, when known: all the others are), as parts of the
    staged table (`part-carried-N-M`, after the parts embedded now in name order) and the
    rows of linked parts the staged table leaves out (`IndexVersion.left_out`); returns the
    rows carried."""
    groups = in_shares(carried.previous.table_urls(name), runtime)
    if gone is not None:
        ids = None
    elif runtime.engine == "local":
        ids = frozenset(ids.combine_chunks().to_pylist())
    carried_parts = map_items(_carry_vector_parts, [
        (group, staged.url_of(f"{name}/{CARRIED_VECTOR_PARTS}{i:05d}"))
        for i, group in enumerate(groups)], runtime, num_cpus=CARRY_TASK_CPUS,
        shared=[ids, carried.previous.left_out(name), gone])
    staged.write_left_out(name, {part: left for _, parts in carried_parts
                                 for part, left in parts.items()})
    return sum(rows for rows, _ in carried_parts)


# The name every part of carried vectors starts with (linked or written): such a part holds
# only vectors of the ids carried (`vector_index` need not read it for others).
CARRIED_VECTOR_PARTS = "part-carried-"
# Bytes of vectors per carried part. One part per share held half a 100M-token index's
# text-unit vectors (~450 MB), which every reader of the table (the vector index's sync, a
# brute-force search) holds whole.
CARRIED_VECTOR_PART_BYTES = 64 * 2 ** 20
# A previous part this long is carried as it is (linked), its vectors neither decoded nor
# encoded again: the embedded parts a build writes (`embed.feed.ROWS_PER_PART`, 1,024) and
# the carried ones; not the few-row parts of a small read batch, which would pile up as
# files. The rows it no longer serves (an entity whose description changed, a deleted text
# unit) are left out (`IndexVersion.left_out`) while they are at most `LEFT_OUT_SHARE` of
# it; past that the part's other rows are written again, so a table's parts hold at most
# twice its rows.
CARRIED_WHOLE_ROWS = 512


def _carry_vector_parts(job: tuple[list[str], str], ids: pa.ChunkedArray | frozenset | None,
                        left_out: dict[str, pa.Array], gone: pa.Array | None = None
                        ) -> tuple[int, dict[str, pa.Array]]:
    """Parts of a previous embeddings table (`left_out`: the rows each already left out) ->
    the rows of `ids` (or, `ids` None, all but those of `gone`): a long part that keeps
    most of its rows linked as it is, with the
    ids of the rows it no longer serves, the rows of the others gathered into parts of about
    `CARRIED_VECTOR_PART_BYTES` (a table of small parts, one per read batch, is not carried
    part for part; nor in one part, which a reader would hold whole). A 1% add to a
    100M-token index keeps every previous text unit and all but a few % of the entities,
    spread over every part: their 1.3 GB and 1 GB of vectors were decoded and encoded again
    (12 s, then 11 s). Returns the rows carried and, per linked part, its left-out ids."""
    sources, target = job
    # A Python set, built once: `pc.is_in` hashes its value set again on every call (27 ms
    # a part for 258k entity ids: 6.8 s to link a 100M-token index's 244 parts). In-process
    # the tasks' threads share the one `carry_vectors` built.
    wanted = ids if isinstance(ids, frozenset) or ids is None else \
        set(ids.combine_chunks().to_pylist())
    kept, size, written, rows = [], 0, 0, 0
    left: dict[str, pa.Array] = {}

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
        part_ids = read_parquet(fs, path, ["id"]).column("id")
        keep = pc.invert(pc.is_in(part_ids, value_set=gone)) if wanted is None else pa.array(
            np.fromiter((i in wanted for i in part_ids.to_pylist()), dtype=bool,
                        count=len(part_ids)))
        before = left_out.get(path.rsplit("/", 1)[-1])
        if before is not None:  # (its current vector, if any, is in another part)
            keep = pc.and_(keep, pc.invert(pc.is_in(part_ids, value_set=before)))
        count = pc.sum(keep).as_py() or 0
        if count and len(keep) >= CARRIED_WHOLE_ROWS \
                and len(keep) - count <= LEFT_OUT_SHARE * len(keep):
            if kept:
                flush()  # (the parts stay in the previous table's order)
            target_fs, target_path = next_part()
            copy_whole(fs, path, target_path)
            if count < len(keep):
                left[target_path.rsplit("/", 1)[-1]] = part_ids.filter(
                    pc.invert(keep)).combine_chunks()
        elif count:
            table = read_parquet(fs, path).filter(keep)
            kept.append(table)
            size += table.nbytes
        rows += count
        if size >= CARRIED_VECTOR_PART_BYTES:
            flush()
    if kept:
        flush()
    return rows, left


def _listing(fs: fsspec.AbstractFileSystem, folder: str) -> list[str]:
    try:
        return sorted(fs.ls(folder, detail=False))
    except FileNotFoundError:
        return []


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
    keep, now = files.remap(_int64(documents.column("file_index")) << FILE_SHIFT)
    documents = documents.filter(pa.array(keep)).set_column(
        documents.column_names.index("file_index"), "file_index",
        pa.array(now >> FILE_SHIFT, pa.int64()))
    if not documents.num_rows:
        return
    chunks = read_parquet(fs, sources["chunks"])
    keep, seq = files.remap(_int64(chunks.column("seq")))
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
            old = _int64(read_parquet(fs, part, ["seq"]).column("seq"))
            keep, seq = files.remap(old)
        if unmoved or _as_they_were(old, keep, seq):
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
