"""The index build as a list of stages:

    list inputs -> extract (read, chunk, extract, spill instances) -> merge graph (and
    resolve entities, when enabled) -> communities -> layout -> summaries and reports (one
    schedule) -> write tables -> embed -> publish

Each stage is a function `stage(ctx, ...)` in its folder, over tables; `BuildContext` is what
they share. Pools start where the stages need them: the embeddings pool (an endpoint's own
budget) at the start, so text units are embedded while extraction runs; the summaries pool
after the merge, whose Ray tasks need the CPUs its actors would hold.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from datetime import datetime, timezone

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import ensure_ray, resolve_engine
from graphrag_ray.errors import InputError
from graphrag_ray.index.batch_rounds import by_batch
from graphrag_ray.index.chunks.read_and_chunk import input_reports
from graphrag_ray.index.context import BuildContext, Progress
from graphrag_ray.index.embed.by_batch import embed_by_batch
from graphrag_ray.index.embed.feed import (
    EmbeddingFeed, FinalTextsToEmbed, TextUnitEmbeddings, embed_index)
from graphrag_ray.index.extract.kept_extractions import extraction_fingerprint
from graphrag_ray.index.extract.stage import extract_chunks
from graphrag_ray.index.graph.stage import find_communities, lay_out, merge_graph
from graphrag_ray.index.manifest import community_figures, count_generations, usage_summary
from graphrag_ray.index.pools import (
    embeddings_pool, summaries_pool, uses_any_llm, uses_chat_llm, uses_embedding_endpoint)
from graphrag_ray.index.reports.schedule import summarize_and_report
from graphrag_ray.index.previous_version import (
    INPUT_FILES, INPUT_FILES_SCHEMA, UpdateBase, settings_fingerprint)
from graphrag_ray.index.write.tables import write_graph_tables, write_tables
from graphrag_ray.input.loader import list_input_files
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import LLMServices, Usage, check_endpoint
from graphrag_ray.llm.embeddings import HASHING_MODEL
from graphrag_ray.llm.accounting import table_usage
from graphrag_ray.llm.services import open_services
from graphrag_ray.progress import estimated_chunks
from graphrag_ray.prompts_loader import load_prompts, prompt_version
from graphrag_ray.resources import driver_rss_mb
from graphrag_ray.storage import IndexStore

log = logging.getLogger(__name__)


def default_cache_url(output_url: str) -> str:
    return f"{output_url.rstrip('/')}/cache"


def build_index(input_url: str, output_url: str, config: GraphRagConfig,
                progress: Progress = log.info, progress_bars: bool = False,
                update: UpdateBase | None = None) -> dict:
    """Build the index and publish it at `output_url`; returns the manifest. `update`: the
    previous version this build updates (`index/update.py`)."""
    started = time.perf_counter()
    prompts = load_prompts(config)
    if uses_chat_llm(config):
        check_endpoint(config.llm)
    if uses_embedding_endpoint(config):
        check_endpoint(config.embeddings)
    listing_started = time.perf_counter()
    _, root, files, file_bytes, ignored = list_input_files(input_url, config.input)
    listing_s = round(time.perf_counter() - listing_started, 3)
    # Before reading: the corpus size estimated from its bytes (~4 per token), file by file.
    chunk_estimates = [estimated_chunks(size, config.chunks.size, config.chunks.overlap)
                       for size in file_bytes]
    config = config.model_copy(deep=True)
    config.runtime.engine = resolve_engine(config.runtime, sum(chunk_estimates),
                                           llm_bound=config.extraction.method == "llm")
    progress(f"{len(files)} input files ({sum(file_bytes) / 2 ** 20:.1f} MiB, "
             f"~{sum(chunk_estimates)} chunks); engine: {config.runtime.engine}")
    shards = config.merge.shards or max(
        1, -(-max(1, sum(file_bytes) // 4) // config.merge.tokens_per_shard))
    store = IndexStore(output_url)
    # A build that fails or is stopped removes its unpublished version (`building`).
    with store.building(store.stage()) as staged:
        ctx = BuildContext(config, prompts, _services(config, output_url), staged,
                           progress, progress_bars)
        ctx.timings["list_inputs"] = listing_s
        pools, feed, text_units = [], None, None
        try:
            # Embeddings by batch wait for the final texts (`embed/by_batch.py`).
            if uses_embedding_endpoint(config) and not config.embeddings.batch:
                pools.append(embeddings_pool(config))
                feed = EmbeddingFeed(config, ctx.staged, ctx.services, pools[-1])
                text_units = TextUnitEmbeddings(feed, ctx.work_url)
            with ctx.stage("extract"):
                extraction = extract_chunks(
                    ctx, input_url, root, files, chunk_estimates, shards,
                    update.kept_extractions_url if update else None)
            if text_units:
                text_units.reading_done.set()  # it submits the last pieces in the background
            skipped, warnings = _report_inputs(ctx, input_url, extraction, ignored)
            graph = merge_graph(ctx, shards)
            pools.append(summaries_pool(config, prompts))
            communities = find_communities(ctx, graph, extraction,
                                           update.communities() if update else None)
            lay_out(ctx, graph)
            with ctx.stage("summaries_and_reports"):
                services = ctx.services
                if config.llm.batch is True and uses_chat_llm(config):
                    services = by_batch(ctx, "summaries_and_reports",
                                        frozenset({"summarize", "reports"}),
                                        lambda deferring: summarize_and_report(
                                            ctx, graph, communities, pools[-1],
                                            services=deferring, batch_pass=True))
                described = summarize_and_report(
                    ctx, graph, communities, pools[-1],
                    FinalTextsToEmbed(feed, graph.entities, graph.addresses) if feed else None,
                    services=services)
            counts, tables = write_graph_tables(ctx, graph, communities, described.reports,
                                                extraction, pools[-1])
            del graph  # the blocks' text leaves the object store
            if text_units:
                text_units.join()
            with ctx.stage("embed"):
                services = embed_by_batch(ctx, tables) if config.embeddings.batch \
                    else ctx.services
                embedded, dimensions, embed_usage = embed_index(
                    tables, ctx.staged, feed or EmbeddingFeed(config, ctx.staged, services,
                                                              pools[-1]), feed is not None)
            ctx.staged.remove("_work")
            write_tables(ctx, tables)
            manifest = _manifest(ctx, input_url, extraction, described, tables,
                                 {**counts, **embedded}, dimensions, embed_usage, skipped,
                                 warnings, communities, started)
            if update:
                reused = int(sum(extraction.column("reused").to_pylist()))
                manifest["update"] = {**update.summary(), "chunks": {
                    "reused": reused, "extracted": extraction.num_rows - reused},
                    "communities": ctx.figures.community_changes}
            store.publish(ctx.staged, manifest)  # Last: readers now open this version.
            manifest["version"] = ctx.staged.version
            if config.output.keep_versions:
                for pruned in store.prune(config.output.keep_versions):
                    progress(f"pruned index version {pruned}")
            return manifest
        finally:
            if text_units:
                text_units.reading_done.set()
            if feed:
                feed.stop()
            for pool in pools:
                pool.close()
            ctx.services.close()


def _services(config: GraphRagConfig, output_url: str) -> LLMServices:
    """The build's rate budgets (named Ray actors on Ray) and response cache."""
    if not uses_any_llm(config):
        return LLMServices()
    cache = ResponseCache(config.cache.url or default_cache_url(output_url)) \
        if config.cache.enabled else None
    if config.runtime.engine == "ray":
        ensure_ray(config.runtime)
    return open_services(config, cache, on_ray=config.runtime.engine == "ray", job="build")


def _report_inputs(ctx: BuildContext, input_url: str, extraction,
                   ignored: list[dict]) -> tuple[list, list]:
    """What the listing left out (`ignored`: files of other types) and what the readers
    skipped or warned of, told to the user; stops when nothing was read. Keeps the files'
    fingerprints the readers took, so no one reads the corpus twice."""
    reports = input_reports(ctx.work_url)
    # What the next update compares the corpus with: the files as the readers read them.
    ctx.staged.write_table(INPUT_FILES, pa.Table.from_pylist(reports.files,
                                                             schema=INPUT_FILES_SCHEMA))
    skipped, warnings = ignored + reports.skipped, reports.warnings
    if reports.kept_out_warning():
        warnings = warnings + [reports.kept_out_warning()]
    read = len(reports.files) - len(reports.skipped)
    ctx.figures.input_files = {"read": read, "skipped": len(skipped)}
    for warning in warnings:
        ctx.progress(f"warning: {warning}")
    for item in skipped:
        ctx.progress(f"skipped {item['path']}: {item['reason']}")
    if not extraction.num_rows:
        reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped[:10])
        raise InputError(f"no readable documents under {input_url} ({reasons})")
    ctx.progress(f"{extraction.num_rows} chunks "
                 f"({sum(extraction.column('n_tokens').to_pylist())} tokens)")
    return skipped, warnings


def _kept_out(statuses: list[str], tokens: list[int], repeated: dict) -> dict:
    """Text no extraction read, and its share of the corpus: the boilerplate text units
    (Gutenberg framing, openings, each repeated boilerplate passage once) and the copies of
    repeated boilerplate cut elsewhere. Repeated content is extracted once, so not counted."""
    boilerplate = sum(n for s, n in zip(statuses, tokens) if s == schema.REPEATED_PASSAGE)
    kept_out = boilerplate + repeated.get("boilerplate_copies_tokens", 0)
    corpus = sum(tokens) + repeated.get("boilerplate_copies_tokens", 0) + repeated.get(
        "content_tokens_extracted_once", 0)
    return {"kept_out_tokens": kept_out, "kept_out_share": round(kept_out / corpus, 4)
            if corpus else 0.0}


def _manifest(ctx: BuildContext, input_url: str, extraction, described, tables, counts,
              dimensions, embed_usage, skipped, warnings, communities, started) -> dict:
    config, services = ctx.config, ctx.services
    llm_usage = usage_summary(
        {"extract": table_usage(extraction), "summarize": described.summarize_usage,
         "reports": described.reports_usage, "embed": embed_usage},
        {"extract": ctx.timings["extract"], "summarize": described.summarize_wall_s,
         "reports": described.reports_wall_s, "embed": ctx.timings["embed"]}, config,
        services.ledger() if services.limiter is not None else None,
        {phase: Usage(**{k: figures[k] for k in ("calls", "prompt_tokens",
                                                  "completion_tokens")})
         for phase, figures in ctx.figures.batch_phases.items()})
    if services.limiter is not None:
        llm_usage["rate_limiter"] = services.limiter.stats()
    if services.embedding_limiter is not None:
        llm_usage["embeddings_rate_limiter"] = services.embedding_limiter.stats()
    statuses = extraction.column("status").to_pylist()
    return {
        "format_version": schema.INDEX_FORMAT_VERSION,
        "created_at": datetime.now(timezone.utc).isoformat(),
        "input": input_url,
        "config": config.public_dict(),
        "prompt_versions": {name: prompt_version(text) for name, text in ctx.prompts.items()},
        # What an update compares (`index/update.py`): are its settings and its extraction
        # settings those of this version?
        "settings_fingerprint": settings_fingerprint(config, ctx.prompts),
        "extraction_fingerprint": extraction_fingerprint(config, ctx.prompts),
        "tables": {**counts, **{name: table.num_rows for name, table in tables.items()}},
        "embeddings": {"method": config.embeddings.resolved_method(),
                       "model": config.embeddings.model
                       if uses_embedding_endpoint(config) else HASHING_MODEL,
                       "dimensions": dimensions},
        **community_figures(communities),
        "merge": ctx.figures.merge,
        # Sections of stages that only run when enabled.
        **{name: section for name, section in (
            ("repeated_passages", ctx.figures.repeated_passages),
            ("resolution", ctx.figures.resolution),
            ("batch", {"phases": ctx.figures.batch_phases} if ctx.figures.batch_phases
             else None)) if section is not None},
        "leiden": ctx.figures.leiden,
        "extraction": {
            "chunks": extraction.num_rows,
            "chunk_tokens": int(sum(extraction.column("n_tokens").to_pylist())),
            "failed_chunks": sum(s == "failed" for s in statuses),
            # Boilerplate kept as text units of its own and never extracted (a Gutenberg
            # header and licence, each passage repeated across documents once).
            "boilerplate_chunks": sum(s == schema.REPEATED_PASSAGE for s in statuses),
            "boilerplate_tokens": int(sum(
                n for s, n in zip(statuses, extraction.column("n_tokens").to_pylist())
                if s == schema.REPEATED_PASSAGE)),
            **_kept_out(statuses, extraction.column("n_tokens").to_pylist(),
                        ctx.figures.repeated_passages or {}),
            "malformed_records": int(sum(extraction.column("malformed_records").to_pylist())),
            # What could not be used of the replies, by reason (tuples.malformed_reason).
            "malformed_by_reason": dict(Counter(
                reason for reasons in extraction.column("malformed_reasons").to_pylist()
                for reason in reasons or [])),
        },
        "llm_usage": llm_usage,
        "summaries": described.summaries,
        "reports_by_generation": count_generations(
            described.reports.column("generation").to_pylist()),
        "input_files": ctx.figures.input_files,
        "skipped_inputs": skipped,
        "input_warnings": warnings,
        "timings_s": {**ctx.timings, "total": round(time.perf_counter() - started, 3)},
        "stage_starts_s": ctx.stage_starts,
        # The driver holds the graph for Leiden: its peak is what sizes the head node.
        "driver_peak_rss_mb": driver_rss_mb()[1],
        "driver_rss_mb_by_stage": ctx.driver_rss_mb,
    }
