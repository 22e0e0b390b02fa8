"""What one index version keeps for the next update to compare: the input files'
fingerprints (`_input_files`), the settings' fingerprint, the difference between two corpora,
and the previous tables an update's later stages read (`PreviousTables`). Read by the build,
which writes them, and by the update planner (`update_plan`), which compares them."""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import Future, ThreadPoolExecutor

import fsspec
import pyarrow as pa

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import InputError
from graphrag_ray.input.loader import relative_path, settled_time
from graphrag_ray.llm.embedding_methods import API, vectors_model
from graphrag_ray.prompts_loader import prompt_version
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.atomic import is_local

INPUT_FILES = "_input_files"
# What Leiden's warm start reads of the previous communities (`UpdatePlan.partition`).
PREVIOUS_PARTITION = ["community", "level", "entity_ids"]
# `modified`: a local file's settled modification time (`loader.settled_time`), or null.
INPUT_FILES_SCHEMA = pa.schema([("path", pa.string()), ("bytes", pa.int64()),
                                ("sha256", pa.string()), ("modified", pa.float64())])
_READ_BATCH = 256


def input_fingerprints(fs: fsspec.AbstractFileSystem, root: str, files: list[str],
                       previous: pa.Table | None = None) -> pa.Table:
    """Each input file's path under `root`, size and content hash (files read in batches:
    object stores serve a batch concurrently). A local file with the size and settled
    modification time `previous` (the last version's fingerprints) recorded for it keeps
    its recorded hash unread, as rsync's quick check does (reading every file at every update
    is most of a large corpus's update)."""
    known = {}
    if previous is not None and "modified" in previous.column_names and is_local(fs):
        known = {(path, size, modified): digest for path, size, digest, modified in zip(
            *(previous.column(c).to_pylist() for c in ("path", "bytes", "sha256", "modified")))
            if modified is not None}
    rows, to_read = {}, []
    for path in files:
        relative = relative_path(path, root)
        if known:
            try:
                stat = os.stat(fs._strip_protocol(path))
            except OSError as exc:
                raise InputError(f"cannot read input file {path}: {exc}") from None
            digest = known.get((relative, stat.st_size, stat.st_mtime))
            if digest is not None:
                rows[path] = {"path": relative, "bytes": stat.st_size, "sha256": digest,
                              "modified": stat.st_mtime}
                continue
        to_read.append(path)
    for start in range(0, len(to_read), _READ_BATCH):
        batch = to_read[start:start + _READ_BATCH]
        try:
            # (the times before the bytes: a change while reading moves the time kept)
            times = {path: settled_time(fs, fs.info(path)) for path in batch} \
                if is_local(fs) else {}
            contents = fs.cat(batch)  # a list: a dict by path, even of one
        except OSError as exc:
            raise InputError(f"cannot read input files under {root}: {exc}") from None
        for path in batch:
            data = contents[path]
            rows[path] = {"path": relative_path(path, root), "bytes": len(data),
                          "sha256": hashlib.sha256(data).hexdigest(),
                          "modified": times.get(path)}
    return pa.Table.from_pylist([rows[path] for path in files], schema=INPUT_FILES_SCHEMA)


def diff_inputs(previous: pa.Table | None, current: pa.Table) -> dict[str, list[str]]:
    """Paths added, changed, deleted and unchanged since `previous` (None: an index from
    before fingerprints were kept; every file counts as changed)."""
    now = dict(zip(current.column("path").to_pylist(), current.column("sha256").to_pylist()))
    if previous is None:
        return {"added": [], "changed": sorted(now), "deleted": [], "unchanged": []}
    then = dict(zip(previous.column("path").to_pylist(), previous.column("sha256").to_pylist()))
    return {"added": sorted(p for p in now if p not in then),
            "changed": sorted(p for p in now if p in then and then[p] != now[p]),
            "deleted": sorted(p for p in then if p not in now),
            "unchanged": sorted(p for p in now if then.get(p) == now[p])}


def settings_fingerprint(config: GraphRagConfig, prompts: dict[str, str]) -> str:
    """What the index's content depends on besides its input: the settings (not the runtime,
    the cache or the query settings) and the prompts' versions."""
    content = set(config.content_sections())
    settings = {k: v for k, v in config.public_dict().items() if k in content}
    # Of the endpoints, what the replies depend on (not where they are, nor their limits).
    settings["llm"] = {k: settings["llm"][k] for k in ("model", "temperature")}
    if config.llm.provider != "openai":  # (left out by default: earlier indexes match)
        settings["llm"]["provider"] = config.llm.provider
    settings["embeddings"] = {k: settings["embeddings"][k] for k in (
        "model", "method", "dimensions", "hashing_dimensions", "max_input_tokens",
        "local_precision", "local_summary_tokens")}
    method = config.embeddings.resolved_method()
    if method != API:
        settings["embeddings"]["offline_model"] = vectors_model(config.embeddings, method)
    settings["prompts"] = {name: prompt_version(text) for name, text in sorted(prompts.items())}
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str)
                          .encode("utf-8")).hexdigest()[:32]


class PreviousTables:
    """Tables of the previous version, some read ahead by a thread: an update's stages after
    the merge read the entities' and relationships' numbers, the entities' positions and the
    communities between stages, while during the
    merge the driver only waits on its tasks. The merge's tasks hold both cores of the
    machine measured, so the thread takes some of their time: less is gained than read.
    `read_table` and `has_table` as `IndexVersion`'s; a table not read ahead is read when
    asked for."""

    def __init__(self, version: IndexVersion):
        self.version = version
        self._ahead: dict[str, tuple[list[str], Future]] = {}

    def read_ahead(self, wanted: dict[str, list[str]]) -> None:
        """Starts reading `wanted` (table -> columns: every column the stages will ask of
        it, read once) in a thread, in that order."""
        thread = ThreadPoolExecutor(1, thread_name_prefix="previous-tables")
        for name, columns in wanted.items():
            if self.version.has_table(name):
                self._ahead[name] = (columns, thread.submit(self.version.read_table, name,
                                                           columns))
        thread.shutdown(wait=False)  # (it reads what it was given, then ends)

    def has_table(self, name: str) -> bool:
        return self.version.has_table(name)

    def read_table(self, name: str, columns: list[str]) -> pa.Table:
        read, ahead = self._ahead.get(name, ([], None))
        if ahead is None or not set(columns) <= set(read):
            return self.version.read_table(name, columns)
        return ahead.result().select(columns)
