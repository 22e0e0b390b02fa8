"""What an update carries over from the previous version for the files that did not change:
their documents, chunks, extraction status and instances, so that only the added and changed
files are read, chunked and extracted (offline extraction too, which keeps no per-chunk rows).

A build keeps its reading with the version it publishes (`extract/carried_reading.keep_reading`):

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
filtered, renumbered and written (`extract/carried_reading.py`, which knows the instance
folders; this module decides what is carried and sits below the stages that carry it).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import fsspec
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
from graphrag_ray.input.loader import relative_path
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.index_store import LEFT_OUT_SHARE
from graphrag_ray.storage.atomic import copy_whole
from graphrag_ray.storage.parquet_io import (
    read_parquet, write_parquet)

READING = "_reading"
# The carrying tasks read and write files (no CPU to speak of) and run beside the pools,
# whose actors hold the CPUs: tasks asking for a CPU waited for the summaries pool to let
# go. They ask for none, as the readers do, and are few (`in_shares`): a
# task per part, asking for no CPU, started a process each on 2 cores.
CARRY_TASK_CPUS = 0
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
    version by a thread from the moment extraction is done, while the graph is made, not
    in the build's last stage. `join()` waits (and raises what the thread raised)."""

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
        keep, seq = self.files.remap(as_int64(self.status.column("seq")))
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
        keep, _ = self.files.remap(as_int64(self.status.column("seq")))
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


def as_int64(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(column.to_numpy(), dtype=np.int64)


def plan_carry_over(previous: IndexVersion, unchanged: list[str], files: list[str],
                    numbers: np.ndarray, input_root: str) -> CarriedReading:
    """Every unchanged file of the previous reading, at its number in the current listing
    (`numbers`, by place in `files`)."""
    listing = previous.read_table(f"{READING}/files").sort_by("file_index")
    now = {relative_path(path, input_root): int(n) for path, n in zip(files, numbers)}
    same = set(unchanged)
    paths = listing.column("path").to_pylist()
    files_now = FileMap(as_int64(listing.column("file_index")),
                        np.asarray([now[p] if p in same and p in now else -1 for p in paths],
                                   dtype=np.int64))
    # A file with a chunk whose extraction failed is read again: the chunk is tried again.
    status = previous.read_table(f"{READING}/status")
    failed = pc.equal(status.column("status"), "failed")
    files_now.drop(set((as_int64(status.filter(failed).column("seq")) >> FILE_SHIFT).tolist()))
    settings = json.loads(previous.fs.cat_file(f"{previous.root}/{READING}/reading.json"))
    return CarriedReading(previous, files_now, paths, settings["shards"], status)


def carry_scans(ctx: BuildContext, carried: CarriedReading
                ) -> tuple[list[tuple[int, Scan]], list[pa.Table]]:
    """The carried files' passage scans: (previous position, scan at its current position)
    per document, and the same as tables (`passage_scans.SCAN_SCHEMA`), renumbered, for the
    version to keep (`passage_scans.write_scans`). Read by the driver's threads (a version
    written before the scans were kept whole has a part per read batch, a few kilobytes
    each: opening it is most of its cost), not by Ray tasks, which pickled the scans to
    send them back and waited for Ray to start, which
    now starts meanwhile (`find_repeated_passages`)."""
    fs, root = fsspec.core.url_to_fs(carried.url)
    parts = [fs.unstrip_protocol(p) for p in folder_listing(fs, f"{root}/passages")
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
    old = as_int64(table.column("position"))
    keep, positions = files.remap(old)
    if not keep.any():
        return None
    if not as_they_were(old, keep, positions):
        table = table.filter(pa.array(keep))
        table = table.set_column(0, "position", pa.array(positions, pa.int64()))
    return list(zip(old[keep].tolist(), scans_of(table))), table


def as_they_were(old: np.ndarray, keep: np.ndarray, positions: np.ndarray) -> bool:
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
    # in Arrow, rather than by a Python set of the ~all carried.
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
# Bytes of vectors per carried part. One part per share held a large share of an index's
# text-unit vectors, which every reader of the table (the vector index's sync, a
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
    spread over every part: their vectors were all decoded and encoded again. Returns the rows
    carried and, per linked part, its left-out ids."""
    sources, target = job
    # A Python set, built once: `pc.is_in` hashes its value set again on every call. In-process
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


def folder_listing(fs: fsspec.AbstractFileSystem, folder: str) -> list[str]:
    try:
        return sorted(fs.ls(folder, detail=False))
    except FileNotFoundError:
        return []


