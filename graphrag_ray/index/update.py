"""`graphrag-ray update`: bring an index up to date with its corpus as it is now.

The input is the whole corpus: files that are new are added, files whose bytes changed are
read again, files that are gone leave the index. A document is identified by its file's path
under the input root (and, in CSV/JSONL/JSON/Parquet files, by `input.id_column` when set,
otherwise by its row number); a file is changed when its content hash is.

An update is a build of the current corpus that pays only for what is new:
- chunks whose text the previous version extracted are not sent again
  (`extract/kept_extractions`): their instances are read from the previous version;
- the graph is merged from the instances of the chunks that exist now, so an entity or
  relationship that only deleted text mentioned is gone, and one whose descriptions changed
  gets a new summary (an element whose description list is unchanged has the same prompt:
  its summary comes from the response cache);
- Leiden starts from the previous communities and keeps their ids (`graph/continuity`);
  a community whose context is unchanged has the same report prompt (contexts number their
  rows locally), so its report comes from the cache, and so do unchanged embeddings.
It publishes a new version like a build (the previous one stays readable; `--keep` applies),
and resumes like one when killed. Nothing changed (same files, same settings): no version.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import fsspec
import pyarrow as pa

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import InputError
from graphrag_ray.index.context import Progress
from graphrag_ray.index.estimate import estimate_index, format_estimate, measured_rates
from graphrag_ray.index.extract.kept_extractions import KEPT_EXTRACTIONS, extraction_fingerprint
from graphrag_ray.llm.embeddings import HASHING_MODEL
from graphrag_ray.input.loader import list_input_files
from graphrag_ray.prompts_loader import load_prompts, prompt_version
from graphrag_ray.storage import IndexStore, IndexVersion

INPUT_FILES = "_input_files"
INPUT_FILES_SCHEMA = pa.schema([("path", pa.string()), ("bytes", pa.int64()),
                                ("sha256", pa.string())])
# Settings that do not change what an index holds.
_NOT_CONTENT = ("runtime", "cache", "output", "query", "global_search", "local_search",
                "drift_search", "basic_search", "eval", "prompts")
_READ_BATCH = 256


def input_fingerprints(fs: fsspec.AbstractFileSystem, root: str, files: list[str]) -> pa.Table:
    """Each input file's path under `root`, size and content hash (files read in batches:
    object stores serve a batch concurrently)."""
    rows = []
    for start in range(0, len(files), _READ_BATCH):
        batch = files[start:start + _READ_BATCH]
        try:
            contents = fs.cat(batch)  # a list: a dict by path, even of one
        except OSError as exc:
            raise InputError(f"cannot read input files under {root}: {exc}") from None
        for path in batch:
            data = contents[path]
            rows.append({"path": path[len(root):].lstrip("/") if root else path,
                         "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return pa.Table.from_pylist(rows, schema=INPUT_FILES_SCHEMA)


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
    settings = {k: v for k, v in config.public_dict().items() if k not in _NOT_CONTENT}
    # Of the endpoints, what the replies depend on (not where they are, nor their limits).
    settings["llm"] = {k: settings["llm"][k] for k in ("model", "temperature")}
    settings["embeddings"] = {k: settings["embeddings"][k] for k in (
        "model", "method", "dimensions", "hashing_dimensions", "max_input_tokens")}
    if config.embeddings.resolved_method() == "hashing":
        settings["embeddings"]["offline_model"] = HASHING_MODEL
    settings["prompts"] = {name: prompt_version(text) for name, text in sorted(prompts.items())}
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str)
                          .encode("utf-8")).hexdigest()[:32]


@dataclass
class UpdateBase:
    """What a build that is an update starts from."""
    version: IndexVersion  # the previous version
    diff: dict[str, list[str]]
    kept_extractions_url: str | None  # None: other extraction settings, nothing reusable

    def communities(self) -> pa.Table:
        return self.version.read_table("communities", ["community", "level", "entity_ids"])

    def summary(self) -> dict:
        return {"previous_version": self.version.version,
                "documents": {k: len(v) for k, v in self.diff.items()},
                "changed_files": {k: v[:50] for k, v in self.diff.items()
                                  if k != "unchanged" and v}}


def update_index(index_url: str, input_url: str, config: GraphRagConfig | None = None,
                 progress: Progress = print, progress_bars: bool = False,
                 dry_run: bool = False) -> dict:
    """Update the index at `index_url` to the corpus at `input_url`; returns the new manifest,
    or {"no_change": True, ...} when there is nothing to do, or the dry run's estimate.
    `config`: defaults to the settings the index was built with."""
    from graphrag_ray.api import config_from_manifest
    from graphrag_ray.index.build import build_index

    store = IndexStore(index_url)
    previous = store.open()
    manifest = previous.read_manifest()
    config = config or config_from_manifest(manifest)
    prompts = load_prompts(config)
    fs, root, files, _, _ = list_input_files(input_url, config.input)
    inputs = input_fingerprints(fs, root, files)
    diff = diff_inputs(previous.read_table(INPUT_FILES) if previous.has_table(INPUT_FILES)
                       else None, inputs)
    same_settings = manifest.get("settings_fingerprint") == settings_fingerprint(config, prompts)
    counts = {k: len(v) for k, v in diff.items()}
    progress(f"documents since version {previous.version}: " + ", ".join(
        f"{n} {k}" for k, n in counts.items()) + ("" if same_settings else "; settings changed"))
    if not (diff["added"] or diff["changed"] or diff["deleted"]) and same_settings:
        return {"no_change": True, "version": previous.version, "documents": counts}
    if dry_run:
        return _estimate(fs, root, diff, config, previous.version,
                         measured_rates(manifest, config, prompts))
    same_extraction = manifest.get("extraction_fingerprint") == \
        extraction_fingerprint(config, prompts)
    base = UpdateBase(previous, diff,
                      previous.url_of(KEPT_EXTRACTIONS) if same_extraction else None)
    return build_index(input_url, index_url, config, progress=progress,
                       progress_bars=progress_bars, update=base)


def _estimate(fs: fsspec.AbstractFileSystem, root: str, diff: dict[str, list[str]],
              config: GraphRagConfig, previous_version: str, measured: dict | None) -> dict:
    """The dry run: the new and changed files' calls, estimated as a build of them alone
    (`estimate`) at the rates the index measured (`measured`); summaries and reports of the
    existing communities they touch come on top."""
    result = {"update_of": previous_version, "documents": {k: len(v) for k, v in diff.items()},
              "files": {k: v for k, v in diff.items() if k != "unchanged"}}
    todo = diff["added"] + diff["changed"]
    if todo:
        with tempfile.TemporaryDirectory(prefix="graphrag-update-") as scratch:
            for relative in todo:
                target = Path(scratch) / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(fs.cat_file(f"{root}/{relative}" if root else relative))
            result["new_and_changed"] = estimate_index(scratch, config, measured)
    return result


def format_update_estimate(estimate: dict) -> str:
    lines = [f"update of version {estimate['update_of']}: " + ", ".join(
        f"{n} {k}" for k, n in estimate["documents"].items())]
    for kind, paths in estimate["files"].items():
        lines += [f"  {kind}: {p}" for p in paths[:20]]
        if len(paths) > 20:
            lines.append(f"  ... {len(paths) - 20} more {kind}")
    if "new_and_changed" in estimate:
        lines += ["", "new and changed documents, as a build of their own (communities they "
                  "join in the index add report calls on top):",
                  format_estimate(estimate["new_and_changed"])]
    else:
        lines.append("no document to extract; deletions re-summarize and re-report only what "
                     "they touched")
    return "\n".join(lines)
