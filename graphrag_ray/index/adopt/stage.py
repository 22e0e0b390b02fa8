"""`graphrag-ray adopt`: a Microsoft GraphRAG project (or its output folder) published as a
version of an index of ours, so every command (query, stats, explore, export) works on what
its user already paid for.

Nothing it computed is recomputed: its tables are taken as they are, in our layout
(`tables.py`), and its vectors from its LanceDB store (`vectors.py`). What it never made is
made here without an LLM: the entity layout for the explorer when its version has none, and
the vectors when its store cannot be read (then embedded with the configured embeddings, the
calls counted in the manifest). Its settings become ours where they map (`settings.py`);
the manifest's `adopted_from` keeps what did not and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig, config_from_data, interpolate_env
from graphrag_ray.distributed import open_worker_pool
from graphrag_ray.errors import ConfigError, InputError
from graphrag_ray.index.adopt.extractions import kept_extractions, place_units, project_input
from graphrag_ray.index.adopt.settings import MappedSettings, map_settings
from graphrag_ray.index.adopt.tables import OPTIONAL, REQUIRED, adopted_tables, format_of
from graphrag_ray.index.embed.vector_index import index_vectors
from graphrag_ray.index.adopt.vectors import dimensions_of, lance_store, read_lance_vectors
from graphrag_ray.index.chunks.positions import spread_numbers
from graphrag_ray.index.chunks.read_and_chunk import (
    input_reports, read_and_chunk, stored_pieces)
from graphrag_ray.index.context import BuildContext, Progress
from graphrag_ray.index.embed.feed import EmbeddingFeed, embed_index, embedding_texts
from graphrag_ray.index.extract.kept_extractions import (
    KEPT_EXTRACTIONS, extraction_fingerprint, write_kept)
from graphrag_ray.index.extract.stage import find_repeated_passages, plan_extraction
from graphrag_ray.index.graph.communities import build_graph
from graphrag_ray.index.graph.layout import layout_positions
from graphrag_ray.index.graph.merge import edge_endpoints
from graphrag_ray.index.manifest import (
    community_figures_of_table, count_generations, embeddings_facts, usage_summary)
from graphrag_ray.index.previous_version import (
    INPUT_FILES, INPUT_FILES_SCHEMA, settings_fingerprint)
from graphrag_ray.index.reports.kept_reports import COMMUNITY_DIGESTS, digests_of_tables
from graphrag_ray.index.write.lexical import write_lexical_index
from graphrag_ray.input.loader import list_input_files
from graphrag_ray.llm.accounting import cost_usd
from graphrag_ray.llm.client import LLMServices, Usage
from graphrag_ray.distributed.services import open_services
from graphrag_ray.prompts_loader import load_prompts, prompt_version
from graphrag_ray.storage import IndexStore, Manifest
from graphrag_ray.tokens import count_tokens

SETTINGS_FILES = ("settings.yaml", "settings.yml")


@dataclass
class MicrosoftProject:
    output: Path  # the folder of its Parquet tables
    settings: dict[str, Any]
    settings_path: Path | None


def find_project(source: str) -> MicrosoftProject:
    """A project root (with `settings.yaml` and `output/`) or an output folder itself."""
    if "://" in source and not source.startswith("file://"):
        raise InputError(f"{source}: adopt reads a Microsoft GraphRAG project on this machine "
                         "(copy its output folder here first)")
    path = Path(source.removeprefix("file://")).expanduser()
    if not path.is_dir():
        raise InputError(f"{source} is not a folder")
    if (path / f"{schema.ENTITIES}.parquet").is_file():
        output, roots = path, [path, path.parent]
    elif (path / "output" / f"{schema.ENTITIES}.parquet").is_file():
        output, roots = path / "output", [path]
    else:
        raise InputError(f"{source}: no Microsoft GraphRAG output here (no "
                         f"{schema.ENTITIES}.parquet in it or in its output/ folder)")
    for root in roots:
        for name in SETTINGS_FILES:
            if (root / name).is_file():
                try:
                    settings = yaml.safe_load((root / name).read_text(encoding="utf-8")) or {}
                except yaml.YAMLError as exc:
                    raise InputError(f"{root / name}: not YAML ({exc})") from None
                return MicrosoftProject(output, settings, root / name)
    return MicrosoftProject(output, {}, None)


def read_tables(output: Path) -> dict[str, pa.Table]:
    tables = {}
    for name in REQUIRED + OPTIONAL:
        path = output / f"{name}.parquet"
        if path.is_file():
            # Its tables come from pandas: the index metadata is not ours to keep.
            tables[name] = pq.read_table(path).replace_schema_metadata(None)
    return tables


def adopted_config(project: MicrosoftProject, overrides: list[str] | None
                   ) -> tuple[GraphRagConfig, MappedSettings]:
    """Its settings as ours (a value given as ${NAME} is interpolated as our settings are;
    a variable unset here leaves the setting out, said so), then the user's `--set`s."""
    mapped = map_settings(project.settings)
    for section_name, section in mapped.data.items():
        for key, value in list(section.items()):
            if isinstance(value, str):
                try:
                    section[key] = interpolate_env(value)
                except ConfigError as exc:
                    del section[key]
                    mapped.skip(f"{section_name}.{key} = {value}", str(exc))
    source = str(project.settings_path) if project.settings_path else "defaults"
    return config_from_data(mapped.data, overrides, source=source), mapped


@dataclass
class _Read:
    """A project as both the dry run and the adoption see it."""
    project: MicrosoftProject
    config: GraphRagConfig
    mapped: MappedSettings
    format: str
    tables: dict[str, pa.Table]  # in our layout
    vectors: dict[str, pa.Table] | None  # our embedding tables, when its store reads
    why_no_vectors: str


def _read(source: str, overrides: list[str] | None) -> _Read:
    project = find_project(source)
    config, mapped = adopted_config(project, overrides)
    theirs = read_tables(project.output)
    store = lance_store(project.output)
    vectors, why = read_lance_vectors(store) if store else (None, "it has no LanceDB store")
    if vectors is None and config.embeddings.method == "api" and not config.embeddings.api_base:
        # Its texts are embedded again, and no endpoint is given to do it with: offline.
        config = config.model_copy(deep=True)
        config.embeddings.method = "auto"
        mapped.skip("embeddings.method = api", f"its vectors are not read ({why}) and no "
                    "embeddings.api_base is set: its texts are embedded offline")
    return _Read(project, config, mapped, format_of(theirs), adopted_tables(theirs), vectors,
                 why)


def plan_adoption(source: str, overrides: list[str] | None = None,
                  input_folder: str | None = None) -> dict:
    """What `adopt` would do, calling nothing: the tables found, where the vectors come from
    and, when they must be embedded again, the texts, tokens and cost; the settings."""
    read = _read(source, overrides)
    config, tables = read.config, read.tables
    plan = {"output": str(read.project.output), "format": read.format,
            "tables": {name: table.num_rows for name, table in tables.items()},
            "layout": _needs_layout(tables[schema.ENTITIES]),
            "vectors": "lancedb" if read.vectors is not None else read.why_no_vectors,
            "mapped": read.mapped.mapped, "not_mapped": read.mapped.unmapped}
    input_dir = _input_dir(read.project, input_folder)
    plan["extractions_from"] = str(input_dir) if input_dir is not None else None
    if read.vectors is None:
        by_table = _texts_to_embed(tables)
        texts = [text for batch in by_table.values() for text in batch]
        tokens = sum(count_tokens(text, config.tokenizer.encoding) for text in texts)
        api = config.embeddings.resolved_method() == "api"
        plan["embed"] = {
            "method": config.embeddings.resolved_method(), "texts": len(texts),
            # Requests hold texts of one table (an upper bound: identical texts go once).
            "calls": sum(-(-len(batch) // config.embeddings.batch_size)
                         for batch in by_table.values()) if api else 0,
            "prompt_tokens": tokens if api else 0,
            "cost_usd": cost_usd({"prompt_tokens": tokens, "completion_tokens": 0},
                                 config.embeddings) if api else 0.0}
    return plan


def format_adoption_plan(plan: dict) -> str:
    lines = [f"dry run: Microsoft GraphRAG {plan['format']} output at {plan['output']}: "
             + ", ".join(f"{name} {rows}" for name, rows in plan["tables"].items())]
    if plan["layout"]:
        lines.append("entity positions: laid out here (its version writes none)")
    embed = plan.get("embed")
    if embed is None:
        lines.append("vectors: read from its LanceDB store (no call)")
    else:
        cost = "-" if embed["cost_usd"] is None else f"${embed['cost_usd']:.4f}"
        lines.append(f"vectors: embedded again ({plan['vectors']}): {embed['texts']} texts "
                     f"by {embed['method']}, {embed['calls']} calls, {embed['prompt_tokens']} "
                     f"tokens, {cost}")
    lines.append(f"extractions: carried over for updates from the input at "
                 f"{plan['extractions_from']} (read and chunked here, no call)"
                 if plan["extractions_from"] else "extractions: not carried over (its input "
                 "folder was not found: give it with --input); an update would extract the "
                 "whole corpus again")
    return "\n".join(lines + settings_lines(plan["mapped"], plan["not_mapped"]))


def settings_lines(mapped: list, not_mapped: list) -> list[str]:
    """What of its settings was carried over, and what was not and why (the dry run and the
    adoption print the same)."""
    return [f"setting carried over: {theirs} -> {ours}" for theirs, ours in mapped] + \
        [f"not carried over: {theirs}: {why}" for theirs, why in not_mapped]


def _texts_to_embed(tables: dict[str, pa.Table]) -> dict[str, list[str]]:
    """Per embeddings table, the texts an adoption embeds when it cannot read the vectors
    (as a build does)."""
    entities = tables[schema.ENTITIES].select(["id", "title", "description"])
    texts = {name: batch for name, _, batch in embedding_texts(
        tables[schema.COMMUNITY_REPORTS], [entities])}
    return {**texts, schema.TEXT_UNIT_EMBEDDINGS: tables[schema.TEXT_UNITS].column(
        "text").to_pylist()}


def adopt_index(source: str, output_url: str, overrides: list[str] | None = None,
                progress: Progress = print, input_folder: str | None = None) -> Manifest:
    """Publish the Microsoft GraphRAG output at `source` as a new version at `output_url`.
    `input_folder`: the corpus it was built from (by default the project's input folder),
    read so that updates reuse its extractions."""
    read = _read(source, overrides)
    project, config, mapped, tables = read.project, read.config, read.mapped, read.tables
    progress(f"Microsoft GraphRAG {read.format} output at {project.output}: "
             + ", ".join(f"{name} {table.num_rows}" for name, table in tables.items()))
    stages = ["read_tables"]
    if _needs_layout(tables[schema.ENTITIES]):
        tables[schema.ENTITIES] = _laid_out(tables[schema.ENTITIES],
                                            tables[schema.RELATIONSHIPS], config)
        stages.append("layout")
    store = IndexStore(output_url)
    with store.building(store.stage()) as staged:
        for name, table in tables.items():
            staged.write_table(name, table, config.output.rows_per_part)
        # What each report read, for an update to keep the reports of what did not change.
        staged.write_table(COMMUNITY_DIGESTS, digests_of_tables(
            tables[schema.ENTITIES], tables[schema.RELATIONSHIPS], tables[schema.COMMUNITIES]))
        stages.append("write_tables")
        # (In this process, as the rest of an adoption: no Ray started for it.)
        lexical = write_lexical_index(staged, config.runtime.model_copy(
            update={"engine": "local"}))
        stages.append("lexical_index")
        counts, embeddings, embed_usage, services = _vectors(read, staged, stages, progress)
        vector_stores = index_vectors(config.vector_index, staged, progress, counts)
        if vector_stores:
            stages.append("vector_index")
        prompts = load_prompts(config)
        carried = _extractions(read, prompts, staged, input_folder, stages, progress)
        units = tables[schema.TEXT_UNITS]
        manifest = Manifest(
            created_at=datetime.now(timezone.utc).isoformat(), input=str(project.output),
            pipeline={"name": "adopt", "stages": stages},
            config=config.public_dict(),
            prompt_versions={n: prompt_version(t) for n, t in prompts.items()},
            settings_fingerprint=settings_fingerprint(config, prompts),
            # Its extractions as ours when its input was read (an update reuses them);
            # otherwise none an update could reuse (it knows to say so).
            extraction_fingerprint=extraction_fingerprint(config, prompts)
            if carried and carried["chunks_kept"] else None,
            tables={**{n: t.num_rows for n, t in tables.items()}, **counts},
            embeddings=embeddings, lexical=lexical, vector_stores=vector_stores,
            **community_figures_of_table(tables[schema.COMMUNITIES]),
            extraction={"chunks": units.num_rows,
                        "chunk_tokens": int(np.sum(units.column("n_tokens").to_numpy()))},
            llm_usage=usage_summary({"embed": embed_usage}, {}, config,
                                    services.ledger() if services.limiter else None),
            reports_by_generation=count_generations(
                tables[schema.COMMUNITY_REPORTS].column("generation").to_pylist()),
            # Its users know its communities: an update keeps them (`graph/continuity`).
            communities_kept_from="Microsoft GraphRAG",
            adopted_from={"tool": "Microsoft GraphRAG", "format": read.format,
                          "output": str(project.output),
                          "settings": str(project.settings_path)
                          if project.settings_path else None,
                          "extractions": carried,
                          "mapped": [list(pair) for pair in mapped.mapped],
                          "not_mapped": [list(pair) for pair in mapped.unmapped]})
        services.close()
        return store.publish(staged, manifest)


def _vectors(read: _Read, staged, stages: list[str], progress: Progress
             ) -> tuple[dict[str, int], dict, Usage, LLMServices]:
    """Its vectors as they are, or (none, or from another model than the config's) the
    texts embedded again: (rows per table, the manifest's embeddings facts, usage, the
    services that embedded)."""
    config = read.config
    if read.vectors is not None:
        for name, table in read.vectors.items():
            staged.write_table(name, table, config.output.rows_per_part)
        stages.append("lance_vectors")
        return ({n: t.num_rows for n, t in read.vectors.items()},
                {"method": "adopted", "model": config.embeddings.model,
                 "dimensions": dimensions_of(read.vectors)}, Usage(), LLMServices())
    progress(f"embedding the texts again ({read.why_no_vectors})")
    counts, dimensions, embed_usage, services = _embed(config, staged, read.tables)
    stages.append("embed")
    return counts, embeddings_facts(config, dimensions), embed_usage, services


def _extractions(read: _Read, prompts: dict[str, str], staged, input_folder: str | None,
                 stages: list[str], progress: Progress) -> dict | None:
    """Its extractions carried over for updates, when its input is found and extraction is
    the LLM's (what the manifest says of them), else None and why, said."""
    config = read.config
    input_dir = _input_dir(read.project, input_folder)
    if input_dir is None or config.extraction.method != "llm":
        progress("no extraction carried over for updates: " + (
            "its input folder was not found (give it with --input)" if input_dir is None
            else f"extraction.method is {config.extraction.method}"))
        return None
    try:
        carried = _carry_extractions(config, prompts, staged, read.tables, input_dir,
                                     progress)
    except InputError as exc:
        if input_folder is not None:  # the folder the user named: their mistake
            raise
        progress(f"no extraction carried over for updates: {exc}")
        return None
    stages.append("carry_extractions")
    return carried


def _input_dir(project: MicrosoftProject, input_folder: str | None) -> Path | None:
    if input_folder is None:
        return project_input(project.settings_path, project.settings)
    folder = Path(input_folder).expanduser()
    if not folder.is_dir():
        raise InputError(f"--input {input_folder} is not a folder")
    return folder


def _carry_extractions(config: GraphRagConfig, prompts: dict[str, str], staged,
                       tables: dict[str, pa.Table], input_dir: Path, progress: Progress
                       ) -> dict:
    """Its extractions as our kept extractions, and the input files' fingerprints, so that
    `update` extracts only new text (`extractions.py`). The project's input is read and
    chunked as a build of ours reads it (the same stages, on this machine)."""
    config = config.model_copy(update={"runtime": config.runtime.model_copy(
        update={"engine": "local"})})
    ctx = BuildContext(config, prompts, LLMServices(), staged, progress)
    input_url = str(input_dir)
    _, root, files, _, _ = list_input_files(input_url, config.input)
    try:
        numbers = spread_numbers(len(files))
        repeated = find_repeated_passages(ctx, input_url, root, files, numbers) \
            if config.repeated_passages.enabled else None
        plan = plan_extraction(ctx, input_url, root, files, numbers, repeated)
        blocks = list(read_and_chunk(plan.inputs, plan.reading))
        staged.write_table(INPUT_FILES, pa.Table.from_pylist(
            input_reports(ctx.work_url).files, schema=INPUT_FILES_SCHEMA))
        if not blocks:
            progress(f"no extraction carried over for updates: nothing readable in "
                     f"{input_url}")
            return {"input": input_url, "files": len(files), "chunks": 0, "chunks_kept": 0}
        chunks = pa.concat_tables(blocks)
        extracted = chunks.filter(pc.invert(chunks.column("repeated_passage"))).select(
            ["id", "text", "document_id"])
        documents = pa.concat_tables(list(stored_pieces(ctx.work_url, "documents",
                                                        ["id", "title", "text"])))
    finally:
        staged.remove("_work")  # the reading's scratch area, never published
    placement = place_units(documents, extracted, tables[schema.TEXT_UNITS],
                            tables[schema.DOCUMENTS])
    kept = kept_extractions(placement, dict(zip(extracted.column("id").to_pylist(),
                                                extracted.column("text").to_pylist())),
                            tables)
    write_kept(kept, staged.url_of(KEPT_EXTRACTIONS), "batch-adopted.parquet")
    units = tables[schema.TEXT_UNITS].num_rows
    figures = {"input": input_url, "files": len(files), "chunks": extracted.num_rows,
               "chunks_kept": kept.num_rows,
               "chunks_to_extract": extracted.num_rows - kept.num_rows,
               "text_units_placed": units - len(placement.kept_out) - len(placement.unplaced),
               "text_units_kept_out": len(placement.kept_out),
               "text_units_not_found": len(placement.unplaced)}
    notes = [f"{len(placement.kept_out)} of its text units lie in text we keep out of "
             "extraction (boilerplate: a Project Gutenberg header or licence, a repeated "
             "notice); what only they name leaves the graph at the first update"
             ] if placement.kept_out else []
    if placement.unplaced:
        notes.append(f"{len(placement.unplaced)} of its text units were not found in the "
                     "input (files changed or gone since it was built); what only they name "
                     "leaves the graph at the first update")
    if figures["chunks_to_extract"]:
        notes.append(f"{figures['chunks_to_extract']} chunks of text it did not extract "
                     "would be extracted by the first update")
    progress(f"extractions carried over for updates: {kept.num_rows} of our "
             f"{extracted.num_rows} chunks of {input_url} take its "
             f"{figures['text_units_placed']} text units" + "".join(f"; {n}" for n in notes))
    return figures


def _needs_layout(entities: pa.Table) -> bool:
    xs = entities.column("x").to_pylist()
    return bool(xs) and all(x is None for x in xs)


def _laid_out(entities: pa.Table, relationships: pa.Table, config: GraphRagConfig) -> pa.Table:
    """`x`/`y` by our layout (3.x writes none)."""
    sources, targets = edge_endpoints(entities, relationships)
    xs, ys = layout_positions(build_graph(entities.num_rows, sources, targets,
                                          relationships.column("weight").to_numpy()),
                              config.layout)
    for name, values in (("x", xs), ("y", ys)):
        index = entities.schema.get_field_index(name)
        entities = entities.set_column(index, name, pa.array(values, pa.float64()))
    return entities


def _embed(config: GraphRagConfig, staged, tables: dict[str, pa.Table]
           ) -> tuple[dict[str, int], int | None, Usage, LLMServices]:
    """The texts embedded as a build embeds them, with the configured embeddings."""
    api = config.embeddings.resolved_method() == "api"
    services = open_services(config, None, on_ray=False, job="adopt") if api else LLMServices()
    pool = open_worker_pool(config.runtime.model_copy(update={"engine": "local"}),
                            num_cpus=1.0, concurrency=1)
    try:
        counts, dimensions, usage = embed_index(
            staged, EmbeddingFeed(config, staged, services, pool), queued=False)
    finally:
        pool.close()
    return counts, dimensions, usage, services
