"""The build as declared lists of stages.

A `Stage` is registered once, here: its name, what it reads from and writes to the
`BuildState` (the products the stages hand each other, one field each), whether it calls an
endpoint, and when config turns it on. A pipeline is a list of stage names over the same
registry: `standard` (extraction by the LLM), `nlp` (offline extraction), and `dry_run`
(the offline stages an estimate builds its proxy graph with). `check_pipeline` proves each
list well formed: every field a stage reads is written by a stage before it (or given by the
listing).

An update runs the same pipeline as a build: the state's `update` (`update_plan.UpdatePlan`)
hands each stage its share of what the previous version keeps, and a build's plan keeps
nothing, so no stage has a path of its own for updates.

The stage functions live in their folders (`extract/`, `graph/`, `reports/`, `write/`,
`embed/`) and know nothing of this module; each `_run_*` here is the one line that feeds a
stage from the state and stores what it returns. A new stage: its module, one `_run_` adapter
and one entry in `STAGES`, and its name in the pipelines that run it; what it measures goes to
`ctx.figures.of_stage(name)`, which the manifest keeps under `stage_figures`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Callable

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import GraphRagError
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.index.batch_rounds import by_batch
from graphrag_ray.index.chunks.inputs_report import report_inputs
from graphrag_ray.index.chunks.repeated_passages import RepeatedPassages
from graphrag_ray.index.carry_over import CarriedReading, ReadingTables
from graphrag_ray.index.extract.carried_reading import keep_reading
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.embed.by_batch import embed_by_batch
from graphrag_ray.index.embed.feed import (
    EmbeddingFeed, FinalTextsToEmbed, TextUnitEmbeddings, embed_index)
from graphrag_ray.index.embed.vector_index import index_vectors
from graphrag_ray.index.extract.stage import (
    CHUNK_STATUS_SCHEMA, EXTRACTION_METHODS, ExtractionPlan, check_not_stopped,
    extract_by_batch, extract_chunks, find_repeated_passages, plan_extraction)
from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.graph.numbers import NUMBERED, number_elements
from graphrag_ray.index.graph.stage import (
    POSITIONS, Graph, Merged, find_communities, lay_out, merge_shards)
from graphrag_ray.index.resolve.stage import resolved_graph
from graphrag_ray.index.pools import (
    embeddings_pool, summaries_pool, uses_chat_llm, uses_embedding_endpoint)
from graphrag_ray.index.previous_version import PREVIOUS_PARTITION
from graphrag_ray.index.reports.kept_reports import KeptReports
from graphrag_ray.index.reports.schedule import SummariesAndReports, summarize_and_report
from graphrag_ray.index.update_plan import UpdatePlan
from graphrag_ray.index.write.lexical import write_lexical_index
from graphrag_ray.index.write.tables import CommunitiesTable, write_graph_tables
from graphrag_ray.llm.client import LLMServices, Usage


@dataclass
class BuildState:
    """What the stages hand each other. The first fields are given before any stage runs
    (the listing of the inputs); every other field is written by one stage."""
    input_url: str
    input_root: str
    files: list[str]
    # Each file's number (`chunks/positions`): in every chunk's `seq`, kept by updates.
    file_numbers: np.ndarray
    chunk_estimates: list[int]  # per file, from its bytes (the progress bar's total)
    shards: int  # of the instances, for the merge
    ignored: list[dict]  # files the listing left out (other types)
    # What the build keeps of the version it updates, level by level (a build: nothing).
    update: UpdatePlan = field(default_factory=UpdatePlan.fresh)
    # The pools and the embeddings feed: opened by stages, closed by `close`.
    pools: list[WorkerPool] = field(default_factory=list)
    summaries_pool: WorkerPool | None = None
    feed: EmbeddingFeed | None = None
    text_units: TextUnitEmbeddings | None = None
    repeated: RepeatedPassages | None = None
    carried: CarriedReading | None = None  # an update: the unchanged files' reading
    carried_units: pa.ChunkedArray | None = None  # ... their chunks' ids
    plan: ExtractionPlan | None = None
    extract_services: LLMServices | None = None
    extraction: pa.Table | None = None  # one status row per chunk
    reading_tables: ReadingTables | None = None  # being written by a thread
    skipped: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    merged: Merged | None = None  # the merge's product, until resolution takes it
    graph: Graph | None = None
    communities: list[Community] | None = None
    communities_table: CommunitiesTable | None = None  # being written by a thread
    kept_reports: KeptReports = field(default_factory=KeptReports)  # an update's
    kept_summaries: np.ndarray | None = None  # an update: element keys summarized as before
    report_services: LLMServices | None = None
    described: SummariesAndReports | None = None
    counts: dict[str, int] = field(default_factory=dict)  # rows per table written
    embed_services: LLMServices | None = None
    embedded: dict[str, int] = field(default_factory=dict)  # rows per embeddings table
    dimensions: int | None = None
    embed_usage: Usage | None = None
    vector_stores: dict[str, dict] = field(default_factory=dict)  # per table: its Lance version
    # An update: per embeddings table, the ids whose vectors were copied unchanged.
    carried_vectors: dict[str, pa.ChunkedArray] = field(default_factory=dict)

    def close(self) -> None:
        """The feed's thread and the pools, whatever stage stopped the build."""
        if self.text_units:
            self.text_units.reading_done.set()
        if self.feed:
            self.feed.stop()
        if self.communities_table:
            self.communities_table.close()
        if self.reading_tables:
            self.reading_tables.close()
        for pool in self.pools:
            pool.close()


GIVEN = ("input_url", "input_root", "files", "file_numbers", "chunk_estimates", "shards",
         "ignored", "update")


def _always(config: GraphRagConfig) -> bool:
    return True


@dataclass(frozen=True)
class Stage:
    """`run(ctx, state)` reads the `reads` fields of the state and sets the `writes` ones.
    `calls`: the endpoint it may spend ("chat", "embeddings"), for the dry run and `doctor`;
    `when`: the config that turns it on; `timed`: the runner times it under its name (a
    stage whose function times its own steps says False)."""
    name: str
    run: Callable[[BuildContext, BuildState], None]
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    calls: str | None = None
    when: Callable[[GraphRagConfig], bool] = _always
    timed: bool = True
    about: str = ""


def _run_embedding_feed(ctx: BuildContext, state: BuildState) -> None:
    pool = embeddings_pool(ctx.config)
    state.pools.append(pool)
    state.feed = EmbeddingFeed(ctx.config, ctx.staged, ctx.services, pool)


def _run_text_unit_embeddings(ctx: BuildContext, state: BuildState) -> None:
    state.text_units = TextUnitEmbeddings(state.feed, ctx.work_url, state.carried_units)


def _run_carry_over(ctx: BuildContext, state: BuildState) -> None:
    state.carried = state.update.carried_reading(state.files, state.file_numbers,
                                                 state.input_root)
    if state.carried is not None:
        state.shards = state.carried.shards  # the carried instances' partition


def _run_repeated_passages(ctx: BuildContext, state: BuildState) -> None:
    state.repeated = find_repeated_passages(ctx, state.input_url, state.input_root,
                                            state.files, state.file_numbers, state.carried)


def _run_plan_extraction(ctx: BuildContext, state: BuildState) -> None:
    state.plan = plan_extraction(ctx, state.input_url, state.input_root, state.files,
                                 state.file_numbers, state.repeated,
                                 state.update.kept_extractions_url, state.carried)
    if state.carried is not None:  # settled: the files read again are known
        state.carried_units = state.carried.text_unit_ids()


def _run_extract_batch(ctx: BuildContext, state: BuildState) -> None:
    state.extract_services = extract_by_batch(ctx, state.plan)


def _run_extract(ctx: BuildContext, state: BuildState) -> None:
    # By file number; the progress bar counts the files read, not those carried.
    carried = state.carried.carried_numbers() if state.carried is not None else set()
    estimates = {n: 0 if n in carried else estimate
                 for n, estimate in zip(state.file_numbers.tolist(), state.chunk_estimates)}
    state.extraction = extract_chunks(ctx, state.plan, state.shards, state.extract_services,
                                      estimates)
    check_not_stopped(state.extraction)
    if state.text_units:
        state.text_units.reading_done.set()  # it submits the last pieces in the background


def _run_report_inputs(ctx: BuildContext, state: BuildState) -> None:
    state.skipped, state.warnings = report_inputs(
        ctx, state.input_url, state.extraction, state.ignored, state.update.fingerprints)


# What the stages after the merge read of the previous version, read while the merge's
# tasks run (`PreviousTables`): the numbers, Leiden's warm start, the layout's positions.
_READ_DURING_MERGE = {schema.ENTITIES: list(dict.fromkeys(NUMBERED + POSITIONS)),
                      schema.RELATIONSHIPS: NUMBERED, schema.COMMUNITIES: PREVIOUS_PARTITION}


def _run_merge(ctx: BuildContext, state: BuildState) -> None:
    carried = state.carried
    state.update.read_ahead(_READ_DURING_MERGE)
    state.merged = merge_shards(
        ctx, state.shards, state.extraction, carried.url if carried is not None else None,
        carried.status.column("text_unit_id") if carried is not None else None)


def _run_resolve(ctx: BuildContext, state: BuildState) -> None:
    state.graph = number_elements(resolved_graph(ctx, state.merged, state.extraction),
                                  state.update.tables)
    state.merged = None  # (its tables are the graph's now)
    if EXTRACTION_METHODS[ctx.config.extraction.method].calls_llm and \
            not state.graph.entities.num_rows:
        raise GraphRagError(_nothing_extracted(state.extraction))


def _nothing_extracted(extraction: pa.Table) -> str:
    """Why an LLM build stops when its model found no entity in any chunk: an index of
    nothing is no index (the summaries and reports would be paid for nothing)."""
    status = extraction.column("status").to_pylist()
    errors = [e for e in extraction.column("error").to_pylist() if e]
    failed = status.count("failed")
    return (f"the LLM extracted no entity from the {len(status)} chunks ({failed} failed"
            + (f", e.g. {errors[0][:200]}" if errors else "") + "): nothing was published; "
            "check the extract_graph prompt (prompts.dir), the model and its replies in the "
            "cache")


def _run_kept_summaries(ctx: BuildContext, state: BuildState) -> None:
    state.kept_summaries = state.update.kept_summaries(ctx, state.graph)


def _run_summaries_pool(ctx: BuildContext, state: BuildState) -> None:
    state.summaries_pool = summaries_pool(ctx.config, ctx.prompts)
    state.pools.append(state.summaries_pool)


def _run_communities(ctx: BuildContext, state: BuildState) -> None:
    state.communities = find_communities(ctx, state.graph, state.extraction,
                                         *state.update.partition())


def _run_communities_table(ctx: BuildContext, state: BuildState) -> None:
    state.communities_table = CommunitiesTable(ctx, state.graph, state.communities,
                                               state.update.communities_rows_from())


def _run_kept_reports(ctx: BuildContext, state: BuildState) -> None:
    state.kept_reports = state.update.kept_reports(ctx, state.graph, state.communities,
                                                   every_text=state.feed is not None)


def _run_layout(ctx: BuildContext, state: BuildState) -> None:
    lay_out(ctx, state.graph, state.update.tables)


def _run_reports_batch(ctx: BuildContext, state: BuildState) -> None:
    state.report_services = by_batch(
        ctx, "summaries_and_reports", frozenset({"summarize", "reports"}),
        lambda deferring: summarize_and_report(ctx, state.graph, state.communities,
                                               state.summaries_pool, services=deferring,
                                               batch_pass=True, kept=state.kept_reports,
                                               kept_summaries=state.kept_summaries))


def _run_summaries_and_reports(ctx: BuildContext, state: BuildState) -> None:
    state.described = summarize_and_report(
        ctx, state.graph, state.communities, state.summaries_pool,
        FinalTextsToEmbed(state.feed, state.graph.entities, state.graph.addresses)
        if state.feed else None, services=state.report_services, kept=state.kept_reports,
        kept_summaries=state.kept_summaries)


def _run_write_graph_tables(ctx: BuildContext, state: BuildState) -> None:
    state.counts = write_graph_tables(
        ctx, state.graph, state.communities_table, state.described.reports,
        state.kept_reports.first_part, state.extraction, state.summaries_pool,
        state.update.carried_tables(state.carried, state.file_numbers),
        state.update.unchanged_elements(state.graph, state.kept_summaries))
    state.graph = None  # the blocks' text leaves the object store
    state.described = replace(state.described, reports=None)  # written
    if state.text_units:
        state.text_units.join()


def _run_lexical_index(ctx: BuildContext, state: BuildState) -> None:
    ctx.figures.lexical = write_lexical_index(
        ctx.staged, ctx.config.runtime, state.update.previous)


def _run_embed_batch(ctx: BuildContext, state: BuildState) -> None:
    state.embed_services = embed_by_batch(ctx)


def _run_embed(ctx: BuildContext, state: BuildState) -> None:
    feed = state.feed or EmbeddingFeed(ctx.config, ctx.staged,
                                       state.embed_services or ctx.services,
                                       state.summaries_pool)
    queued = state.feed is not None
    carried, state.carried_vectors = state.update.carried_vectors(
        state.carried, state.carried_units, ctx.staged, queued, ctx.config.runtime)
    state.embedded, state.dimensions, state.embed_usage = embed_index(
        ctx.staged, feed, queued, carried, state.carried_vectors)


def _run_vector_index(ctx: BuildContext, state: BuildState) -> None:
    state.vector_stores = index_vectors(
        ctx.config.vector_index, ctx.staged, ctx.progress, state.embedded, state.carried_vectors,
        state.update.vector_stores)


def _run_reading_tables(ctx: BuildContext, state: BuildState) -> None:
    state.reading_tables = ReadingTables(ctx.staged, state.files, state.file_numbers,
                                         state.input_root, state.extraction, state.repeated)


def _run_keep_reading(ctx: BuildContext, state: BuildState) -> None:
    keep_reading(ctx.staged, state.reading_tables, state.shards)


def _online_embeddings(config: GraphRagConfig) -> bool:
    return uses_embedding_endpoint(config) and not config.embeddings.batch


STAGES: dict[str, Stage] = {stage.name: stage for stage in [
    Stage("embedding_feed", _run_embedding_feed, writes=("feed",),
          calls="embeddings", when=_online_embeddings, timed=False,
          about="the embeddings endpoint's pool, started while the corpus is scanned"),
    Stage("carry_over", _run_carry_over, reads=("files", "file_numbers", "update"),
          writes=("carried", "shards"),
          about="an update: the unchanged files' documents, chunks and extractions, carried "
                "over from the previous version (a build carries nothing)"),
    Stage("repeated_passages", _run_repeated_passages, reads=("files", "file_numbers", "carried"),
          writes=("repeated",), when=lambda config: config.repeated_passages.enabled,
          about="a pass over the corpus for passages repeated across documents"),
    Stage("plan_extraction", _run_plan_extraction,
          reads=("files", "file_numbers", "repeated", "carried", "update"),
          writes=("plan", "carried_units"), timed=False,
          about="how the files are read, chunked, extracted"),
    Stage("text_unit_embeddings", _run_text_unit_embeddings, reads=("feed", "carried_units"),
          writes=("text_units",), calls="embeddings", when=_online_embeddings, timed=False,
          about="text units embedded as the readers write them, while extraction runs (an "
                "update's carried ones not: their vectors are the previous version's)"),
    Stage("extract_batch", _run_extract_batch, reads=("plan",),
          writes=("extract_services",), calls="chat",
          when=lambda config: bool(config.llm.batch),
          about="llm.batch: extraction and gleanings by the Batch API, in rounds"),
    Stage("extract", _run_extract, reads=("plan", "shards", "extract_services", "text_units"),
          writes=("extraction",),
          calls="chat", timed=False,
          about="read, chunk, extract by the LLM (and glean); instances spilled in shards"),
    Stage("extract_nlp", _run_extract, reads=("plan", "shards", "text_units"),
          writes=("extraction",),
          timed=False, about="read, chunk, extract offline; instances spilled in shards"),
    Stage("report_inputs", _run_report_inputs, reads=("extraction", "ignored", "update"),
          writes=("skipped", "warnings"), timed=False,
          about="what was read, skipped, warned of; stops when nothing was read"),
    Stage("merge", _run_merge, reads=("extraction", "shards", "carried", "update"),
          writes=("merged",),
          timed=False, about="instances merged per shard"),
    Stage("resolve_entities", _run_resolve, reads=("merged", "extraction", "update"),
          writes=("graph", "merged"),
          calls="chat", timed=False,
          about="entities that are one resolved (resolution.enabled); the graph's "
                "descriptions placed, claims written, degrees and numbers given"),
    Stage("kept_summaries", _run_kept_summaries, reads=("graph", "update"),
          writes=("kept_summaries", "graph"),  # (the graph: the kept summaries' places)
          about="an update: the summaries of elements whose descriptions did not change, "
                "read from the previous version"),
    # After the merge, whose Ray tasks need the CPUs its actors would hold; before Leiden,
    # so the actors start while it runs.
    Stage("summaries_pool", _run_summaries_pool, writes=("summaries_pool",), timed=False,
          about="the pool for summaries, reports, the tables' writers"),
    # Beside Leiden, which holds the interpreter on one core while Parquet's writer, which
    # does not, has the other (beside the merge, it slowed the merge's threads).
    Stage("reading_tables", _run_reading_tables, reads=("extraction", "repeated"),
          writes=("reading_tables",), timed=False,
          about="the reading's tables kept with the version (chunks' status, the listing, "
                "repeated passages), written by a thread while communities are found"),
    Stage("communities", _run_communities, reads=("graph", "extraction", "update"),
          writes=("communities",), timed=False, about="hierarchical Leiden"),
    Stage("communities_table", _run_communities_table,
          reads=("graph", "communities", "update"),
          writes=("communities_table",), timed=False,
          about="the communities table, written by a thread while the reports are made"),
    Stage("kept_reports", _run_kept_reports, reads=("graph", "communities", "feed", "update"),
          writes=("kept_reports",), about="what each community's report reads, digested; "
          "an update keeps the reports whose inputs did not change"),
    Stage("layout", _run_layout, reads=("graph", "update"), writes=("graph",), timed=False,
          about="entity positions for the explorer (an update places its new entities)"),
    Stage("summaries_and_reports_batch", _run_reports_batch,
          reads=("graph", "communities", "summaries_pool", "kept_reports", "kept_summaries"),
          writes=("report_services",),
          calls="chat", when=lambda config: config.llm.batch is True and uses_chat_llm(config),
          about="llm.batch: true: summaries and reports by the Batch API, level by level"),
    Stage("summaries_and_reports", _run_summaries_and_reports,
          reads=("graph", "communities", "summaries_pool", "feed", "report_services",
                 "kept_reports", "kept_summaries"),
          writes=("described",),
          calls="chat", about="element summaries and community reports, one schedule"),
    Stage("write_graph_tables", _run_write_graph_tables,
          reads=("graph", "communities_table", "described", "extraction", "summaries_pool",
                 "text_units", "carried", "kept_reports", "kept_summaries", "update"),
          writes=("counts", "described", "graph"), timed=False,  # (the graph: released)
          about="entities, relationships, documents, text units, covariates, communities "
                "and reports written"),
    Stage("lexical_index", _run_lexical_index, reads=("counts", "update"),
          about="the text units' lexical index (BM25), for every query method's retrieval"),
    Stage("embed_batch", _run_embed_batch, reads=("counts",), writes=("embed_services",),
          calls="embeddings", when=lambda config: config.embeddings.batch,
          about="embeddings.batch: the embeddings by the Batch API, once the texts are final"),
    Stage("embed", _run_embed, reads=("counts", "feed", "summaries_pool", "embed_services",
                                      "carried", "carried_units", "update"),
          writes=("embedded", "dimensions", "embed_usage", "carried_vectors"),
          calls="embeddings",
          about="embeddings of entities, reports, text units"),
    Stage("vector_index", _run_vector_index, reads=("embedded", "carried_vectors", "update"),
          writes=("vector_stores",),
          about="approximate indexes (Lance) of the embeddings tables past "
                "vector_index.ann_min_rows rows"),
    Stage("keep_reading", _run_keep_reading, reads=("reading_tables", "shards"),
          about="the reading (documents, chunks, instances, passage scans) kept with the "
                "version for the next update; the rest of the work area removed"),
]}

_BUILD = ["carry_over", "embedding_feed", "repeated_passages", "plan_extraction", "text_unit_embeddings",
          "extract_batch", "extract",
          "report_inputs", "merge", "resolve_entities", "kept_summaries", "summaries_pool",
          "reading_tables", "communities", "communities_table", "kept_reports", "layout",
          "summaries_and_reports_batch", "summaries_and_reports", "write_graph_tables",
          "lexical_index", "embed_batch", "embed", "vector_index", "keep_reading"]
_NLP = [("extract_nlp" if name == "extract" else name) for name in _BUILD
        if name != "extract_batch"]

PIPELINES: dict[str, list[str]] = {
    "standard": _BUILD,
    "nlp": _NLP,
    # The dry run's proxy graph: the offline build's own first stages.
    "dry_run": ["repeated_passages", "plan_extraction", "extract_nlp", "report_inputs", "merge",
                "resolve_entities", "communities"],
}


def pipeline_name(config: GraphRagConfig) -> str:
    return EXTRACTION_METHODS[config.extraction.method].pipeline


def pipeline(name: str, config: GraphRagConfig) -> list[Stage]:
    """The stages of pipeline `name` that `config` turns on, in order."""
    return [STAGES[stage] for stage in PIPELINES[name] if STAGES[stage].when(config)]


def check_pipeline(names: list[str]) -> list[str]:
    """What is wrong with a list of stage names: an unknown stage, or a field read before
    any stage wrote it (an empty list: nothing)."""
    problems, written = [], set(GIVEN)
    for name in names:
        stage = STAGES.get(name)
        if stage is None:
            problems.append(f"unknown stage {name!r}")
            continue
        missing = [f for f in stage.reads if f not in written and f not in _OPTIONAL]
        problems += [f"{name} reads {f!r} before any stage writes it" for f in missing]
        written.update(stage.writes)
    return problems


# Products a stage may read when a stage turned off by config never wrote them: the stage
# then does without (no repeated passages, services of the context, no feed), and what
# only an update carries.
_OPTIONAL = {"repeated", "carried", "carried_units", "extract_services", "report_services",
             "embed_services", "feed", "text_units"}


_MERGED_ELEMENT = ("id", "title", "type", "unit_rows", "frequency", "description_count",
                   "inner_tokens", "description_digest")
_MERGED_EDGE = ("id", "source", "target", "unit_rows", "instance_count", "description_count",
                "inner_tokens", "description_digest", "weight")
# The columns each table product's readers take by name: checked where the product leaves
# the stage that writes it and where it enters each stage that reads it, so the stage that
# dropped or renamed one is named, not a later one that trips over it.
PRODUCT_COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
    "extraction": {"": tuple(CHUNK_STATUS_SCHEMA.names)},
    "merged": {"entities": _MERGED_ELEMENT + ("description_shard", "description_row"),
               "relationships": _MERGED_EDGE + ("description_shard", "description_row")},
    "graph": {"entities": _MERGED_ELEMENT + ("aliases", "degree", "human_readable_id"),
              "relationships": _MERGED_EDGE + ("combined_degree", "human_readable_id")},
}


def product_problems(name: str, value: object) -> list[str]:
    """What `value`, as the state's field `name`, lacks of its declared columns."""
    problems = []
    for part, columns in PRODUCT_COLUMNS.get(name, {}).items():
        table = getattr(value, part) if part else value
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            problems.append(f"{name}{'.' + part if part else ''} has no "
                            f"{', '.join(missing)}")
    return problems


def run_stages(ctx: BuildContext, state: BuildState, stages: list[Stage]) -> BuildState:
    """Each stage in turn, held to what it declares: what it reads is there when it starts
    (unless optional), with the columns its readers take; it sets only the fields it
    declares among its `writes`, with their columns. A stage that times itself is not timed
    again. The runner owns what stages open (pools, the feed, writer threads): closed when
    the stages end, however they end."""
    try:
        for stage in stages:
            _check(stage, "reads", _entering(stage, state))
            before = {f.name: getattr(state, f.name) for f in fields(state)}
            if stage.timed:
                with ctx.stage(stage.name):
                    stage.run(ctx, state)
            else:
                stage.run(ctx, state)
            _check(stage, "writes", _leaving(stage, state, before))
    finally:
        state.close()
    return state


def _entering(stage: Stage, state: BuildState) -> list[str]:
    """What is wrong with what `stage` reads: a product no stage wrote (unless optional), or
    one without its columns."""
    problems = []
    for name in stage.reads:
        value = getattr(state, name)
        if value is None:
            problems += [] if name in _OPTIONAL else [f"{name} is not there"]
        else:
            problems += product_problems(name, value)
    return problems


def _leaving(stage: Stage, state: BuildState, before: dict) -> list[str]:
    """What is wrong with the products `stage` wrote (a missing column); a field it set
    without declaring it stops the build here."""
    undeclared = sorted(name for name, value in before.items()
                        if getattr(state, name) is not value and name not in stage.writes)
    if undeclared:
        raise RuntimeError(f"stage {stage.name} set {', '.join(undeclared)}, which it does "
                           "not declare among its writes")
    return [problem for name in stage.writes if getattr(state, name) is not None
            for problem in product_problems(name, getattr(state, name))]


def _check(stage: Stage, side: str, problems: list[str]) -> None:
    if problems:
        raise RuntimeError(f"stage {stage.name} {side}: {'; '.join(problems)}")
