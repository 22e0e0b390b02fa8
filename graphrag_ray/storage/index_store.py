"""Versioned indexes under one fsspec URL (local path, memory://, s3://, gs://...).

    <index url>/
      index.json             the published version: written last, in one PUT
      versions/<version>/    one build's Parquet tables, then its manifest.json
      cache/                 LLM responses, shared by every build of this index

A build writes its tables into a fresh version folder, writes that version's manifest, and
only then points `index.json` at it. Object stores have no atomic rename, but a single small
object is replaced atomically, so a reader sees either the old version or the new one whole.
A build that fails or is stopped removes its unpublished folder (`IndexStore.building`);
one that is killed leaves it without a manifest: no pointer leads to it, and `prune` removes
it once its heartbeat (rewritten every minute while the build runs) is 10 minutes old.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Callable, Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from fsspec.implementations.local import LocalFileSystem

from graphrag_ray import schema
from graphrag_ray.config import config_from_manifest
from graphrag_ray.errors import GraphRagError, IndexNotFoundError
from graphrag_ray.storage.atomic import copy_whole, write_atomically
from graphrag_ray.storage.manifest import Manifest
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet
from graphrag_ray.storage.row_reader import RowReader

log = logging.getLogger(__name__)

POINTER = "index.json"
VERSIONS = "versions"
# An unpublished version's proof of life: the time its build last wrote it.
HEARTBEAT = "_heartbeat"
HEARTBEAT_S = 60.0
ABANDONED_AFTER_S = 600.0
# In a version: per table, the rows of its parts that are not the table's (`left_out`).
LEFT_OUT = "_left_out"
# An update links a previous part while the rows it no longer serves are at most this share
# of it; past that the part's other rows are written again, so a table's parts hold at most
# about twice the table.
LEFT_OUT_SHARE = 0.5


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def read_part(fs: fsspec.AbstractFileSystem, path: str, columns: list[str] | None,
              left_out: pa.Array | None) -> pa.Table:
    """One part of a table without the rows it leaves out (`IndexVersion.left_out`'s ids
    for it; None: none), for a reader that has only the part's path (a worker's task)."""
    if left_out is None or not len(left_out):
        return read_parquet(fs, path, columns)
    table = read_parquet(fs, path, None if columns is None else list({*columns, "id"}))
    table = table.filter(pc.invert(pc.is_in(table.column("id"), value_set=left_out)))
    return table if columns is None else table.select(columns)


def remove_tree(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Remove a file, or a folder and everything in it. On local disks not with fsspec's `rm`,
    which asks for the current directory: under `ray job submit` that is the job's
    working_dir, which Ray unpacks again (remove, then extract) when a second node on the same
    machine sets the job up; the driver's current directory then no longer exists."""
    if not isinstance(fs, LocalFileSystem):
        fs.rm(path, recursive=True)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's, alive
        return True
    return True


def new_version_id() -> str:
    """Sorts by creation time; the random tail keeps concurrent builds apart."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{stamp}-{secrets.token_hex(3)}"


class IndexVersion:
    """The tables and manifest of one version (published or being staged)."""

    def __init__(self, fs: fsspec.AbstractFileSystem, root: str, url: str, version: str):
        self.fs = fs
        self.root = root
        self.url = url
        self.version = version
        # Per table, the file names of the parts this process linked from a previous
        # version (`link_parts`): their rows are the previous version's, as they were.
        self._linked: dict[str, set[str]] = {}

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def url_of(self, name: str) -> str:
        """A full URL (with protocol) of a path inside this version, for other processes."""
        return self.fs.unstrip_protocol(self._path(name))

    def remove(self, name: str) -> None:
        if self.fs.exists(self._path(name)):
            remove_tree(self.fs, self._path(name))

    def write_table(self, name: str, table: pa.Table, rows_per_part: int | None = None,
                    first_part: int = 0) -> None:
        """`<name>.parquet`, or, for tables longer than `rows_per_part`, the parts
        `<name>/part-00000.parquet`, ... that readers put back together in order.
        `first_part`: the parts continue the ones an update linked (`first_part` of them;
        an empty table adds none)."""
        if not first_part and (rows_per_part is None or table.num_rows <= rows_per_part):
            write_parquet(self.fs, self._path(f"{name}.parquet"), table)
            return
        step = rows_per_part or max(1, table.num_rows)
        for part, start in enumerate(range(0, table.num_rows, step)):
            write_parquet(self.fs, self._path(f"{name}/part-{first_part + part:05d}.parquet"),
                          table.slice(start, step))

    def part_path(self, name: str, number: int) -> str:
        """Where part `number` of table `name` is written (readers take parts in name
        order)."""
        return self._path(f"{name}/part-{number:05d}.parquet")

    def write_stream(self, name: str, tables, rows_per_part: int,
                     bytes_per_part: int = 256 * 2 ** 20, first_part: int = 0) -> int:
        """Tables arriving one by one, written as parts of at most `rows_per_part` rows or
        about `bytes_per_part` bytes (one `<name>.parquet` when everything fits in one and
        `first_part` is 0; numbered from `first_part` otherwise: rows after parts written
        already, and no part at all when nothing arrives). A part is encoded and written by
        a thread while the next is gathered (Arrow's encoder lets go of the interpreter, so the
        compression takes the other core), so at most two parts are in memory. Returns the rows
        written."""
        buffer: list[pa.Table] = []
        parts = rows = buffered_rows = buffered_bytes = 0
        writing: Future | None = None

        with ThreadPoolExecutor(1, thread_name_prefix=f"write-{name}") as writer:
            def flush() -> None:
                nonlocal parts, buffered_rows, buffered_bytes, writing
                if writing is not None:
                    writing.result()  # (raises the write's error here)
                writing = writer.submit(write_parquet, self.fs,
                                        self.part_path(name, first_part + parts),
                                        pa.concat_tables(buffer))
                parts += 1
                buffer.clear()  # (the part's table is built already)
                buffered_rows = buffered_bytes = 0

            for table in tables:
                buffer.append(table)
                rows += table.num_rows
                buffered_rows += table.num_rows
                buffered_bytes += table.nbytes
                if buffered_rows >= rows_per_part or buffered_bytes >= bytes_per_part:
                    flush()
            if parts == 0 and first_part == 0:
                if not buffer:
                    raise GraphRagError(f"nothing to write for table {name!r}")
                self.write_table(name, pa.concat_tables(buffer))
            elif buffer:
                flush()
            if writing is not None:
                writing.result()
        return rows

    def iter_table(self, name: str, columns: list[str] | None = None,
                   linked: bool | None = None):
        """The table part by part (one piece if it was written whole), without the rows its
        parts leave out (`left_out`). `linked`: only the parts this process linked from a
        previous version (`link_parts`), or only the others."""
        left_out = self.left_out(name)
        for path in self.table_files(name):
            if linked is not None and (_file_name(path) in self._linked.get(name, ())) != linked:
                continue
            yield read_part(self.fs, path, columns, left_out.get(_file_name(path)))

    def iter_rows_without(self, name: str, columns: list[str], ids: pa.Array,
                          skip_part: Callable[[str], bool] | None = None):
        """The table part by part, without the rows whose `id` is in `ids` (nor those its
        parts leave out): a part's other columns are read only when one of its rows is left
        (an update embeds and indexes the few rows of a table whose vectors it did not
        carry). `skip_part(file name)`: a part the caller knows holds only rows of `ids`,
        not read at all."""
        return self._iter_rows_by_id(name, columns, ids, False, skip_part)

    def iter_rows_with(self, name: str, columns: list[str], ids: pa.Array):
        """The table's rows whose `id` is in `ids` (not those its parts leave out), part by
        part: a part's other columns are read only when it holds one of them."""
        return self._iter_rows_by_id(name, columns, ids, True)

    def _iter_rows_by_id(self, name: str, columns: list[str], ids: pa.Array, wanted: bool,
                         skip_part: Callable[[str], bool] | None = None):
        """The ids are a Python set built once: `pc.is_in` hashes its value set again on
        every call."""
        chosen = set(ids.to_pylist())
        left_out = self.left_out(name)
        for path in self.table_files(name):
            if skip_part is not None and skip_part(_file_name(path)):
                continue
            part_ids = read_parquet(self.fs, path, ["id"]).column("id").to_pylist()
            mask = np.fromiter(((i in chosen) == wanted for i in part_ids), dtype=bool,
                               count=len(part_ids))
            if _file_name(path) in left_out:
                mask &= ~pc.is_in(pa.array(part_ids, pa.string()),
                                  value_set=left_out[_file_name(path)]).to_numpy(
                                      zero_copy_only=False)
            if mask.any():
                yield read_parquet(self.fs, path, columns).filter(pa.array(mask))

    def left_out(self, name: str) -> dict[str, pa.Array]:
        """The ids of the rows of table `name`'s parts that are not part of the table, by
        part file name. An update links a previous part most of whose rows it keeps and
        lists the others here, rather than writing the part again (`carry_over.carry_vectors`,
        `link_parts`: a 1% add changes a few % of the entities and reports, spread over every
        part of them and of their vectors); every reader of the table through this class
        leaves them out."""
        path = self._path(f"{LEFT_OUT}/{name}.parquet")
        if not self.fs.exists(path):
            return {}
        table = read_parquet(self.fs, path).sort_by("part")
        parts = table.column("part").combine_chunks()
        names, starts = np.unique(parts.to_numpy(zero_copy_only=False), return_index=True)
        ends = np.append(starts[1:], len(parts))
        ids = table.column("id").combine_chunks()
        return {str(part): ids.slice(start, end - start)
                for part, start, end in zip(names, starts, ends)}

    def write_left_out(self, name: str, left_out: dict[str, pa.Array]) -> None:
        """`left_out` for table `name` (part file name -> ids); nothing when it is empty."""
        rows = {part: ids for part, ids in left_out.items() if len(ids)}
        if not rows:
            return
        write_parquet(self.fs, self._path(f"{LEFT_OUT}/{name}.parquet"), pa.table({
            "part": pa.array([p for p, ids in rows.items() for _ in range(len(ids))],
                             pa.string()),
            "id": pa.concat_arrays([ids.cast(pa.string()) for ids in rows.values()])}))

    def link_parts(self, previous: "IndexVersion", name: str, columns: list[str],
                   serving: Callable[[int, pa.Table], tuple[np.ndarray, np.ndarray | None]]
                   ) -> tuple[list[tuple[int, pa.Table, np.ndarray]], int]:
        """Table `name`'s parts of `previous` linked into this version where most of their
        rows are still the table's, the rest left out (`left_out`): an update's entities,
        relationships and reports, most of which a 1% change keeps, spread over every part.
        `serving(number, part)` (the part's `columns`, `id` among them, one chunk each) says
        per row whether it is still the table's, and what it weighs (None: one each); a row
        the part left out already is not. A part is linked while its left-out rows weigh at
        most `LEFT_OUT_SHARE` of it, so a table's parts hold at most about twice its bytes.
        Returns each linked part (its number, its columns) with the rows it serves, and how
        many parts `previous` had (the new parts' first number)."""
        before = previous.left_out(name)
        files = previous.table_files(name)
        linked: list[tuple[int, pa.Table, np.ndarray]] = []
        left: dict[str, pa.Array] = {}
        for number, path in enumerate(files):
            part = read_parquet(previous.fs, path, columns).combine_chunks()
            serves, weights = serving(number, part)
            ids = part.column("id").combine_chunks()
            gone = before.get(_file_name(path))
            if gone is not None:  # (its current row, if any, is in another part)
                serves = serves & ~pc.is_in(ids, value_set=gone).to_numpy(zero_copy_only=False)
            weights = np.ones(part.num_rows) if weights is None else weights
            if not serves.any() or weights[~serves].sum() > LEFT_OUT_SHARE * weights.sum():
                continue  # (its rows still served are written again with the others)
            self.link_part(previous, path, name, number)
            linked.append((number, part, serves))
            if not serves.all():
                left[_file_name(self.part_path(name, number))] = ids.filter(pa.array(~serves))
        self.write_left_out(name, left)
        return linked, len(files)

    def link_part(self, previous: "IndexVersion", path: str, name: str, number: int) -> None:
        """`previous`'s file `path` linked as part `number` of table `name`, which
        `iter_table(linked=True)` and `linked_parts` then name."""
        target = self.part_path(name, number)
        copy_whole(previous.fs, path, target)
        self._linked.setdefault(name, set()).add(_file_name(target))

    def linked_parts(self, name: str) -> set[str]:
        """The file names of table `name`'s parts this process linked from a previous
        version (`link_part`)."""
        return set(self._linked.get(name, ()))

    def table_files(self, name: str) -> list[str]:
        """The files that hold the table (one if it was written whole; none when the version
        has no such table). A reader of the files leaves out the rows `left_out` lists."""
        whole = self._path(f"{name}.parquet")
        return [whole] if self.fs.exists(whole) else parquet_parts(self.fs, self._path(name))

    def table_urls(self, name: str) -> list[str]:
        """`table_files` as URLs a worker opens."""
        return [self.fs.unstrip_protocol(path) for path in self.table_files(name)]

    def row_reader(self, name: str) -> RowReader:
        """The table's rows by number, read a row group at a time (`RowReader`)."""
        files = self.table_files(name)
        if not files:
            raise IndexNotFoundError(
                f"table {name!r} is missing from version {self.version} of {self.url}")
        left_out = self.left_out(name)
        return RowReader(self.fs, files, left_out={
            path: left_out[_file_name(path)] for path in files if _file_name(path) in left_out})

    def has_table(self, name: str) -> bool:
        return self.fs.exists(self._path(f"{name}.parquet")) or self.fs.exists(self._path(name))

    def read_table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """One logical table, whether it was written whole or in parts."""
        tables = list(self.iter_table(name, columns))
        if not tables:
            raise IndexNotFoundError(
                f"table {name!r} is missing from version {self.version} of {self.url}")
        return pa.concat_tables(tables)

    def write_manifest(self, manifest: Manifest) -> None:
        self.fs.makedirs(self.root, exist_ok=True)
        with self.fs.open(self._path(schema.MANIFEST), "w") as handle:
            json.dump(manifest.as_json(), handle, indent=2, sort_keys=True, default=str)

    def read_manifest(self) -> Manifest:
        try:
            with self.fs.open(self._path(schema.MANIFEST), "r") as handle:
                return Manifest.read(json.load(handle), f"version {self.version} of {self.url}")
        except FileNotFoundError:
            raise IndexNotFoundError(
                f"version {self.version} of {self.url} was never published "
                "(its build did not finish)") from None


class IndexStore:
    def __init__(self, url: str, **storage_options):
        filesystem, root = fsspec.core.url_to_fs(url, **storage_options)
        self.url = url
        self.fs = filesystem
        self.root = root.rstrip("/")

    def _version(self, version: str) -> IndexVersion:
        return IndexVersion(self.fs, f"{self.root}/{VERSIONS}/{version}", self.url, version)

    def stage(self) -> IndexVersion:
        """A fresh, unpublished version to write tables into. A first small object is
        written at once: an output that cannot be written (no credentials, denied, a path
        that is a file) fails here, before any work or LLM call, not at the first table."""
        if self.fs.isfile(self.root):
            raise GraphRagError(f"{self.url} is a file, not a folder for an index: choose "
                                "another output, or remove the file")
        version = self._version(new_version_id())
        try:
            self.fs.makedirs(f"{version.root}/_work", exist_ok=True)
            self._beat(version)
        except OSError as exc:
            import errno

            reasons = {errno.EROFS: "is on a read-only file system",
                       errno.EACCES: "is not writable (permission denied)",
                       errno.EPERM: "is not writable (operation not permitted)",
                       errno.ENOSPC: "has no space left"}
            if exc.errno in (errno.ENOTDIR, errno.EEXIST):
                raise GraphRagError(f"cannot write the index at {self.url}: "
                                    f"{self._file_in_the_way()} is a file, not a folder "
                                    "(choose another output, or remove the file)") from exc
            reason = (f"it {reasons[exc.errno]}" if exc.errno in reasons
                      else exc.strerror.lower() if exc.strerror else str(exc))
            raise GraphRagError(f"cannot write the index at {self.url}: {reason}") from exc
        return version

    def _file_in_the_way(self) -> str:
        """The nearest part of the output's path that exists as a file."""
        path = self.root
        while path and not self.fs.isfile(path) and os.path.dirname(path) != path:
            path = os.path.dirname(path)
        return path or self.root

    def _beat(self, version: IndexVersion) -> None:
        """The build's heartbeat: when, and which process (a later run on this machine
        tells a killed build by its process at once, not after `ABANDONED_AFTER_S`)."""
        beat = {"time": time.time(), "host": socket.gethostname(), "pid": os.getpid()}
        self.fs.pipe_file(version._path(HEARTBEAT), json.dumps(beat).encode("ascii"))

    def unfinished(self) -> list[tuple[str, str]]:
        """(version, "running" or "abandoned") of every unpublished version."""
        published = set(self.versions())
        return [(v, "abandoned" if self._abandoned(v, "") else "running")
                for v in self._version_ids() if v not in published]

    def sweep(self) -> list[str]:
        """Remove the unpublished versions of builds that died (killed: no failure or stop
        removed them); a build still running is left alone. Returns what went."""
        gone = [v for v, state in self.unfinished() if state == "abandoned"]
        for version in gone:
            remove_tree(self.fs, self._version(version).root)
        return gone

    @contextmanager
    def building(self, staged: IndexVersion) -> Iterator[IndexVersion]:
        """While a build writes `staged`: its heartbeat, so that `prune` leaves a running
        build alone; when the build fails or is stopped, its unpublished folder removed
        (a resume rests on the response cache, not on it; a full disk gets its space back)."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_S):
                try:
                    self._beat(staged)
                except OSError:  # storage trouble shows where the build writes
                    pass

        thread = threading.Thread(target=beat, name="index-heartbeat", daemon=True)
        thread.start()
        try:
            yield staged
        except BaseException:
            stop.set()
            thread.join()
            try:
                if not self.fs.exists(staged._path(schema.MANIFEST)):  # never a published one
                    remove_tree(self.fs, staged.root)
            except Exception as exc:  # noqa: BLE001 - the build's own error is what matters
                log.warning("could not remove the unpublished version %s: %s",
                            staged.version, exc)
            raise
        finally:
            stop.set()
            thread.join()

    def publish(self, staged: IndexVersion, manifest: Manifest) -> Manifest:
        """Writes `manifest` (with the version's id) into `staged`, then points readers at
        it; returns the manifest as published."""
        staged.remove(HEARTBEAT)
        manifest = manifest.model_copy(update={"version": staged.version})
        staged.write_manifest(manifest)
        self.fs.makedirs(self.root, exist_ok=True)
        pointer = {"version": staged.version,
                   "published_at": datetime.now(timezone.utc).isoformat()}
        write_atomically(self.fs, f"{self.root}/{POINTER}", json.dumps(pointer).encode("utf-8"))
        return manifest

    def published_version(self) -> str:
        try:
            pointer = json.loads(self.fs.cat_file(f"{self.root}/{POINTER}"))
        except FileNotFoundError:
            raise IndexNotFoundError(
                f"no index at {self.url}: {POINTER} is missing "
                "(run `graphrag-ray index` first, or no build has finished)") from None
        return pointer["version"]

    def open(self, version: str | None = None) -> IndexVersion:
        """The published version, or a named one (which must have been published)."""
        opened = self._version(version or self.published_version())
        if version and not self.fs.exists(opened._path(schema.MANIFEST)):
            raise IndexNotFoundError(f"version {version} of {self.url} was never published; "
                                     f"published versions: {', '.join(self.versions()) or 'none'}")
        return opened

    def read_manifest(self, version: str | None = None) -> Manifest:
        return self.open(version).read_manifest()

    def _version_ids(self) -> list[str]:
        try:
            entries = self.fs.ls(f"{self.root}/{VERSIONS}", detail=False)
        except FileNotFoundError:
            return []
        return sorted(entry.rstrip("/").rsplit("/", 1)[-1] for entry in entries)

    def versions(self) -> list[str]:
        """Published versions, oldest first."""
        return [v for v in self._version_ids()
                if self.fs.exists(self._version(v)._path(schema.MANIFEST))]

    def _abandoned(self, version: str, oldest_kept: str) -> bool:
        """An unpublished version whose build is dead: its process gone (a build of this
        machine), or it stopped beating (or, from before heartbeats, older than every
        version kept)."""
        try:
            text = self.fs.cat_file(self._version(version)._path(HEARTBEAT)).decode("ascii")
            beat = json.loads(text) if text.startswith("{") else {"time": float(text)}
        except (FileNotFoundError, ValueError):
            return version < oldest_kept
        if beat.get("host") == socket.gethostname() and beat.get("pid"):
            return not _process_alive(int(beat["pid"]))
        return time.time() - float(beat["time"]) > ABANDONED_AFTER_S

    def prune(self, keep: int) -> list[str]:
        """Delete all but the newest `keep` published versions (never the one `index.json`
        names), and abandoned builds, whatever their age; a build still running is left
        alone. Returns what went."""
        if keep < 1:
            raise GraphRagError(f"keep must be at least 1, got {keep}")
        published = self.versions()
        current = self.published_version()
        kept = set(published[-keep:]) | {current}
        oldest_kept = min(kept)
        doomed = [v for v in self._version_ids()
                  if v not in kept and (v in published or self._abandoned(v, oldest_kept))]
        for version in doomed:
            remove_tree(self.fs, self._version(version).root)
        if doomed:
            self._forget_vector_versions(kept)
        return doomed

    def _forget_vector_versions(self, kept: set[str]) -> None:
        """The approximate indexes' versions that no kept version searches, removed (each
        table's dataset keeps its versions from the oldest one a kept version names)."""
        from graphrag_ray.storage.vector_stores import DEFAULT_STORE, vector_store

        oldest: dict[tuple[str, str], int] = {}
        newest = None
        for version in sorted(kept, reverse=True):  # (the newest first: its settings)
            manifest = self._version(version).read_manifest()
            newest = newest or manifest
            for table, entry in manifest.vector_stores.items():
                key = (entry.get("store") or DEFAULT_STORE, table)
                oldest[key] = min(oldest.get(key, entry["version"]), entry["version"])
        # (Read as any manifest's settings are: older keys moved to where they are now.)
        config = config_from_manifest(newest).vector_index if oldest else None
        for (name, table), version in oldest.items():
            store = vector_store(name)
            if store.reaches(self.url):
                store.forget_before(self.url, self.fs.storage_options, table, version, config)
