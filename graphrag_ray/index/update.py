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
- Leiden starts from the previous communities and keeps their ids (`graph/continuity`;
  an adopted index's communities are kept, only new entities placed); a community whose
  entities, relationships and claims kept their descriptions keeps its report, with no call
  (`reports/kept_reports`), and unchanged embeddings come from the response cache.
It publishes a new version like a build (the previous one stays readable; `--keep` applies),
and resumes like one when killed. Nothing changed (same files, same settings): no version.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import fsspec
import pyarrow as pa

from graphrag_ray.config import GraphRagConfig, config_from_manifest
from graphrag_ray.errors import GraphRagError
from graphrag_ray.index.build import build_index
from graphrag_ray.index.chunks.read_and_chunk import read_and_chunk
from graphrag_ray.index.context import BuildContext, Progress
from graphrag_ray.index.estimate import estimate_index, format_estimate, measured_rates
from graphrag_ray.index.extract.kept_extractions import KeptExtractions
from graphrag_ray.index.extract.stage import EXTRACTION_METHODS
from graphrag_ray.index.pipelines import STAGES, BuildState, run_stages
from graphrag_ray.index.update_plan import UpdatePlan
from graphrag_ray.input.loader import list_input_files, relative_path
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.llm.embedding_methods import is_embedding_method
from graphrag_ray.prompts_loader import load_prompts
from graphrag_ray.storage import IndexStore, IndexVersion, Manifest


def update_index(index_url: str, input_url: str, config: GraphRagConfig | None = None,
                 progress: Progress = print, progress_bars: bool = False,
                 dry_run: bool = False) -> Manifest | dict:
    """Update the index at `index_url` to the corpus at `input_url`; returns the new version's
    manifest, or {"no_change": True, ...} when there is nothing to do, or the dry run's
    estimate.
    `config`: defaults to the settings the index was built with."""
    store = IndexStore(index_url)
    previous = store.open()
    manifest = previous.read_manifest()
    config = config or config_from_manifest(manifest)
    if config.embeddings.method == "auto" and \
            is_embedding_method(manifest.embeddings.method):
        # An update embeds as the index did (what `auto` chose then, by the corpus's size
        # and the machine): its vectors are carried, a question is embedded alike.
        config = config.model_copy(deep=True)
        config.embeddings.method = manifest.embeddings.method
    prompts = load_prompts(config)
    plan = UpdatePlan.of(previous, manifest, config, prompts,
                         list_input_files(input_url, config.input))
    counts = {k: len(v) for k, v in plan.diff.items()}
    progress(f"documents since version {previous.version}: " + ", ".join(
        f"{n} {k}" for k, n in counts.items()) + ("" if plan.same_settings
                                                   else "; settings changed"))
    if not plan.changes_anything:
        return {"no_change": True, "version": previous.version, "documents": counts}
    if dry_run:
        fs, root = plan.listing[:2]
        estimate = _estimate(fs, root, plan.diff, config, previous,
                             measured_rates(manifest, config, prompts, previous),
                             chunks_to_extract(input_url, config, plan))
        carried = (manifest.adopted_from or {}).get("extractions") or {}
        if carried.get("chunks_to_extract"):
            # Text of its corpus the adopted tool had not extracted: extracted by this update.
            estimate["not_carried_over"] = carried
        return estimate
    if manifest.adopted_from is not None and manifest.extraction_fingerprint is None:
        # Its graph would be rebuilt from the extractions of the chunks that exist now, and
        # this adoption carried none over (its input was not read): the whole corpus would
        # be extracted again.
        raise GraphRagError(
            f"version {previous.version} was adopted from {manifest.adopted_from['tool']} "
            "without its input, so none of its extractions were carried over: an update "
            "would extract the whole corpus again (`update --dry-run` prices it); adopt it "
            "again with `adopt --input FOLDER` (the corpus it was built from), or build it "
            "afresh with `graphrag-ray index`")
    return build_index(input_url, index_url, config, progress=progress,
                       progress_bars=progress_bars, update=plan)


def chunks_to_extract(input_url: str, config: GraphRagConfig, plan: UpdatePlan) -> list[int]:
    """The tokens of each chunk the update would extract: its own first stages (the carried
    files, the corpus's repeated passages, the carried files read again because those cut
    them differently now) run offline in a scratch version, and the chunks of the files it
    reads whose text the previous version extracted (kept extractions) left out."""
    proxy = config.model_copy(deep=True)
    proxy.runtime.engine, proxy.cache.enabled = "local", False
    _, root, files, _, _ = plan.listing
    numbers = plan.file_numbers([relative_path(path, root) for path in files])
    kept_url = EXTRACTION_METHODS[config.extraction.method].kept(plan.kept_extractions_url)
    kept = KeptExtractions(kept_url) if kept_url else None
    with tempfile.TemporaryDirectory(prefix="graphrag-update-dry-run-") as scratch:
        ctx = BuildContext(proxy, load_prompts(proxy), LLMServices(), IndexStore(scratch).stage(),
                           progress=lambda _: None)
        state = run_stages(ctx, BuildState(input_url, root, files, numbers, [0] * len(files),
                                           1, [], plan),
                           [STAGES[name] for name in UPDATE_READING])
        chunks = [block for block in read_and_chunk(state.plan.inputs, state.plan.reading)]
    rows = pa.concat_tables(chunks).select(["text", "n_tokens", "repeated_passage"]) \
        .to_pylist() if chunks else []
    return [row["n_tokens"] for row in rows if not row["repeated_passage"]
            and (kept is None or kept.get(row["text"]) is None)]


# The stages that decide what an update reads (`chunks_to_extract`).
UPDATE_READING = ("carry_over", "repeated_passages", "plan_extraction")


def _estimate(fs: fsspec.AbstractFileSystem, root: str, diff: dict[str, list[str]],
              config: GraphRagConfig, previous: IndexVersion, measured: dict | None,
              to_extract: list[int]) -> dict:
    """The dry run: the chunks the update extracts (`to_extract`, their tokens), and the
    calls of the new and changed files after extraction, estimated as a build of them alone
    (`estimate`) at the rates the index measured (`measured`); summaries and reports of the
    existing communities they touch come on top."""
    result = {"update_of": previous.version, "documents": {k: len(v) for k, v in diff.items()},
              "files": {k: v for k, v in diff.items() if k != "unchanged"},
              "chunks_to_extract": len(to_extract)}
    todo = diff["added"] + diff["changed"]
    if todo:
        with tempfile.TemporaryDirectory(prefix="graphrag-update-") as scratch:
            for relative in todo:
                target = Path(scratch) / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(fs.cat_file(f"{root}/{relative}" if root else relative))
            result["new_and_changed"] = estimate_index(scratch, config, measured,
                                                       joining=previous,
                                                       extract_tokens=to_extract)
    return result


def format_update_estimate(estimate: dict) -> str:
    lines = [f"update of version {estimate['update_of']}: " + ", ".join(
        f"{n} {k}" for k, n in estimate["documents"].items())]
    for kind, paths in estimate["files"].items():
        lines += [f"  {kind}: {p}" for p in paths[:20]]
        if len(paths) > 20:
            lines.append(f"  ... {len(paths) - 20} more {kind}")
    if "new_and_changed" in estimate:
        touched = estimate["new_and_changed"].get("touched_in_index") or {}
        lines += ["", "new and changed documents, with the index's own summaries and reports "
                  f"they touch ({touched.get('summaries', 0)} elements they name again, "
                  f"{touched.get('reports', 0)} communities holding one of the "
                  f"{touched.get('entities_named', 0)} entities they name):",
                  format_estimate(estimate["new_and_changed"])]
    else:
        lines.append(f"{estimate['chunks_to_extract']} chunks to extract; deletions "
                     "re-summarize and re-report only what they touched")
    if "not_carried_over" in estimate:
        lines += ["", f"{estimate['not_carried_over']['chunks_to_extract']} chunks of its "
                  "corpus were not extracted by the tool it was adopted from: this update "
                  "extracts them"]
    return "\n".join(lines)
