"""The index build, top to bottom: load -> chunk -> extract -> merge -> communities ->
summaries and reports (one schedule) -> write. Each stage is a function over tables;
`map_table` and the worker pool distribute the heavy ones.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig, LLMConfig
from graphrag_ray.distributed import (
    PoolShape, WorkerPool, ensure_ray, io_pool_shape, map_items, map_table, resolve_engine)
from graphrag_ray.errors import InputError, LLMError
from graphrag_ray.index.communities import (
    Community, build_graph, edges_by_community, hierarchical_leiden)
from graphrag_ray.index.covariates import build_covariates
from graphrag_ray.index.description_blocks import (
    DescriptionAddresses, place_blocks, split_descriptions)
from graphrag_ray.index.element_tables import write_element_tables
from graphrag_ray.index.embeddings import (
    EmbeddingFeed, FinalTextsToEmbed, TextUnitEmbeddings, embed_index)
from graphrag_ray.index.extraction.stage import (
    CHUNK_STATUS_FIELDS, ENTITY_INSTANCE_SCHEMA, EXTRACTION_SCHEMA,
    MENTION_SCHEMA, RELATIONSHIP_INSTANCE_SCHEMA, ExtractionWorker, spill_instances)
from graphrag_ray.index.instance_shards import read_shard
from graphrag_ray.index.merge import (
    MergeStats, add_degrees, combine_shards, edge_endpoints, element_id, merge_shard)
from graphrag_ray.index.read_and_chunk import input_reports, read_and_chunk, stored_pieces
from graphrag_ray.index.summaries_and_reports import summarize_and_report
from graphrag_ray.input.loader import list_input_files
from graphrag_ray.llm.accounting import cost_usd, table_usage
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import LLMServices, Usage, check_endpoint
from graphrag_ray.llm.rate_limiter import (
    LocalRateLimiter, cluster_rate_limiter, planned_in_flight)
from graphrag_ray.progress import ChunkProgress, ProgressBar, estimated_chunks
from graphrag_ray.prompts_loader import load_prompts, prompt_version
from graphrag_ray.resources import PeakRss, driver_rss_mb, shared_memory_mb
from graphrag_ray.storage import IndexStore, IndexVersion
from graphrag_ray.tokens import count_tokens

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


class StageTimer:
    """Wall time of each stage, and the driver's memory after it (where the head node's
    memory goes): RSS, its peak so far, and how much of the RSS is object store pages."""

    def __init__(self, progress: Progress):
        self.timings: dict[str, float] = {}
        self.driver_rss_mb: dict[str, dict[str, int]] = {}
        self.progress = progress

    def run(self, name: str, fn: Callable, *args, **kwargs):
        self.progress(f"[{name}] ...")
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        self.timings[name] = round(time.perf_counter() - start, 3)
        current, peak = driver_rss_mb()
        self.driver_rss_mb[name] = {"after": current, "peak": peak,
                                    "object_store_pages": shared_memory_mb()}
        self.progress(f"[{name}] done in {self.timings[name]:.2f}s")
        return result


def uses_chat_llm(config: GraphRagConfig) -> bool:
    return config.extraction.method == "llm" or config.uses_llm(config.summarize.method) \
        or config.uses_llm(config.reports.method)


def uses_any_llm(config: GraphRagConfig) -> bool:
    return uses_chat_llm(config) or uses_embedding_endpoint(config)


def uses_embedding_endpoint(config: GraphRagConfig) -> bool:
    return config.embeddings.resolved_method() == "api"


def default_cache_url(output_url: str) -> str:
    return f"{output_url.rstrip('/')}/cache"


def make_services(config: GraphRagConfig, output_url: str) -> LLMServices:
    """The job's shared rate budget (a named Ray actor when on Ray) and response cache."""
    cache = None
    if config.cache.enabled:
        cache = ResponseCache(config.cache.url or default_cache_url(output_url))
    embeddings = uses_embedding_endpoint(config)
    if config.runtime.engine == "ray":
        ensure_ray(config.runtime)
        # One budget per build and model; every worker of the build gets the same handle.
        build = uuid.uuid4().hex[:12]
        return LLMServices(
            cluster_rate_limiter(config.llm, f"{config.llm.model}:{build}"), cache,
            cluster_rate_limiter(config.embeddings, f"{config.embeddings.model}:{build}")
            if embeddings else None)
    return LLMServices(LocalRateLimiter(config.llm), cache,
                       LocalRateLimiter(config.embeddings) if embeddings else None)


def build_index(input_url: str, output_url: str, config: GraphRagConfig,
                progress: Progress = log.info, progress_bars: bool = False) -> dict:
    """Build the index and publish it at `output_url`; returns the manifest."""
    started = time.perf_counter()
    timer = StageTimer(progress)
    prompts = load_prompts(config)
    if uses_chat_llm(config):
        check_endpoint(config.llm)
    if uses_embedding_endpoint(config):
        check_endpoint(config.embeddings)

    _, root, files, file_bytes = timer.run("list_inputs", list_input_files, input_url,
                                           config.input)
    # Before reading: the corpus size estimated from its bytes (~4 per token), file by file.
    input_bytes = sum(file_bytes)
    estimated_tokens = max(1, input_bytes // 4)
    chunk_estimates = [estimated_chunks(size, config.chunks.size, config.chunks.overlap)
                       for size in file_bytes]
    estimated_chunk_count = sum(chunk_estimates)
    config = config.model_copy(deep=True)
    config.runtime.engine = resolve_engine(config.runtime, estimated_chunk_count)
    progress(f"{len(files)} input files ({input_bytes / 2 ** 20:.1f} MiB, "
             f"~{estimated_chunk_count} chunks); engine: {config.runtime.engine}")
    store = IndexStore(output_url)
    staged = store.stage()
    # Documents, chunks and instances go from the workers to this work area and on to the
    # next stage's workers; the driver gets one status row per chunk.
    work_url = staged.url_of("_work")
    shards = config.merge.shards or max(1, -(-estimated_tokens // config.merge.tokens_per_shard))
    inputs = pa.table({"file_index": pa.array(range(len(files)), pa.int64()),
                       "path": pa.array(files, pa.string())})
    reading = {"input_url": input_url, "input_root": root, "input_config": config.input,
               "chunks_config": config.chunks, "work_url": work_url}

    services = make_services(config, output_url) if uses_any_llm(config) else LLMServices()
    # The pool for summaries and reports starts after extraction and merge: started earlier,
    # its actors' imports compete for the CPUs with the extraction actors' and delay the first
    # LLM call.
    pool = None
    # An embeddings endpoint has its own budget: its pool starts now and embeds the text
    # units while extraction runs.
    embed_pool = make_embedding_pool(config) if uses_embedding_endpoint(config) else None
    feed = EmbeddingFeed(config, staged, services, embed_pool) if embed_pool else None
    text_units = TextUnitEmbeddings(feed, work_url) if feed else None

    def bar(label: str, total: int, unit: str) -> ProgressBar | None:
        return ProgressBar(label, total, unit) if progress_bars else None

    try:
        extraction = timer.run("extract", extract_chunks, inputs, reading, config,
                               prompts, services,
                               ChunkProgress("extract", chunk_estimates)
                               if progress_bars else None,
                               progress, (work_url, shards))
        if text_units:
            text_units.reading_done.set()  # it submits the last pieces in the background
        skipped, warnings = input_reports(work_url)
        for warning in warnings:
            progress(f"warning: {warning}")
        for item in skipped:
            progress(f"skipped {item['path']}: {item['reason']}")
        if not extraction.num_rows:
            reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped[:10])
            raise InputError(f"no readable documents under {input_url} ({reasons})")
        progress(f"{extraction.num_rows} chunks "
                 f"({sum(extraction.column('n_tokens').to_pylist())} tokens)")
        entities, relationships, addresses, merge_stats = timer.run(
            "merge", merge_instances, work_url, shards, config)
        # Written by a worker when kept; the driver gets the claims' structure.
        (claims, claims_block), = map_items(build_covariates, [(
            work_url, staged.url_of("") if config.claims.enabled else None,
            config.output.rows_per_part, config.chunks.encoding_model)], config.runtime,
            keep_blocks=True)
        # After the merge and the claims: their Ray tasks need the CPUs an offline pool's
        # actors would hold.
        pool = make_pool(config, prompts)
        entities, relationships = add_degrees(entities, relationships)
        # Each edge's ends as entity rows, for Leiden, the report contexts and the communities
        # table: worked out once (a lookup by name per edge end).
        endpoints = edge_endpoints(entities, relationships)
        leiden: dict = {}
        communities_list = timer.run("communities", detect_communities, entities, relationships,
                                     endpoints, config, leiden)
        described = timer.run("summaries_and_reports", summarize_and_report, entities,
                              relationships, endpoints, claims, claims_block, communities_list,
                              addresses, config, prompts, services, pool, bar,
                              FinalTextsToEmbed(feed, entities, addresses) if feed else None)
        entities = _finalize_entities(entities)
        relationships = _finalize_relationships(relationships)
        reports = described.reports
        counts = timer.run("write_entities_and_relationships", write_element_tables, staged,
                           entities, relationships, addresses, pool, config.output.rows_per_part)
        del addresses, claims_block  # the blocks' text leaves the object store
        counts.update(timer.run("write_documents_and_text_units", _write_documents_and_text_units,
                                staged, work_url, extraction, entities, relationships, claims,
                                config.output.rows_per_part))
        if config.claims.enabled:
            counts[schema.COVARIATES] = claims.num_rows
        tables = {schema.COMMUNITIES: communities_table(communities_list, entities, relationships,
                                                        endpoints),
                  schema.COMMUNITY_REPORTS: reports}
        if text_units:
            text_units.join()
        embedded, dimensions, embed_usage = timer.run(
            "embed", embed_index, tables, staged,
            feed or EmbeddingFeed(config, staged, services, pool), feed is not None)
        staged.remove("_work")
        timer.run("write", _write_tables, staged, tables, config.output.rows_per_part)
        llm_usage = _usage_summary(
            {"extract": table_usage(extraction), "summarize": described.summarize_usage,
             "reports": described.reports_usage, "embed": embed_usage},
            {"extract": timer.timings["extract"], "summarize": described.summarize_wall_s,
             "reports": described.reports_wall_s, "embed": timer.timings["embed"]}, config,
            services.ledger() if services.limiter is not None else None)
        if services.limiter is not None:
            llm_usage["rate_limiter"] = services.limiter.stats()
        if services.embedding_limiter is not None:
            llm_usage["embeddings_rate_limiter"] = services.embedding_limiter.stats()
        manifest = {
            "format_version": schema.INDEX_FORMAT_VERSION,
            "created_at": datetime.now(timezone.utc).isoformat(),
            "input": input_url,
            "config": config.public_dict(),
            "prompt_versions": {name: prompt_version(text) for name, text in prompts.items()},
            "tables": {**counts, **{name: table.num_rows for name, table in tables.items()},
                       **embedded},
            "embeddings": {"method": config.embeddings.resolved_method(),
                           "model": config.embeddings.model
                           if uses_embedding_endpoint(config) else "hashing",
                           "dimensions": dimensions},
            **_community_figures(communities_list),
            "merge": asdict(merge_stats),
            "leiden": leiden,
            "extraction": {
                "chunks": extraction.num_rows,
                "failed_chunks": extraction.num_rows - sum(
                    s == "ok" for s in extraction.column("status").to_pylist()),
                "malformed_records": int(sum(extraction.column("malformed_records").to_pylist())),
            },
            "llm_usage": llm_usage,
            "summaries": described.summaries,
            "reports_by_generation": _count(reports.column("generation").to_pylist()),
            "skipped_inputs": skipped,
            "input_warnings": warnings,
            "timings_s": {**timer.timings, "total": round(time.perf_counter() - started, 3)},
            # The driver holds the graph for Leiden: its peak is what sizes the head node.
            "driver_peak_rss_mb": driver_rss_mb()[1],
            "driver_rss_mb_by_stage": timer.driver_rss_mb,
        }
        store.publish(staged, manifest)  # Last: readers now open this version.
        manifest["version"] = staged.version
        if config.output.keep_versions:
            for pruned in store.prune(config.output.keep_versions):
                progress(f"pruned index version {pruned}")
        return manifest
    finally:
        if text_units:
            text_units.reading_done.set()
        if feed:
            feed.stop()
        for started_pool in (pool, embed_pool):
            if started_pool is not None:
                started_pool.close()
        services.close()


def merge_stored_shard(shard: tuple[str, int, str]
                       ) -> tuple[tuple[pa.Table, pa.Table, MergeStats], pa.Table]:
    """One shard (work URL, number, tokenizer) read from storage and merged: its structure for
    the driver, and its description text as a block that stays with the workers."""
    work_url, number, encoding = shard
    entities, relationships, stats = merge_shard(read_shard(work_url, number, (
        ENTITY_INSTANCE_SCHEMA, MENTION_SCHEMA, RELATIONSHIP_INSTANCE_SCHEMA)))
    entities, relationships, block = split_descriptions(entities, relationships, number,
                                                        encoding)
    return (entities, relationships, stats), block


def merge_instances(work_url: str, shards: int, config: GraphRagConfig
                    ) -> tuple[pa.Table, pa.Table, DescriptionAddresses, MergeStats]:
    """Each shard merged by its own task (parallel on Ray); the driver gets the structure in
    its final order and the address of every element's description."""
    merged = map_items(merge_stored_shard, [(work_url, k, config.chunks.encoding_model)
                                            for k in range(shards)],
                       config.runtime, keep_blocks=True)
    entities, relationships, stats = combine_shards([result for result, _ in merged])
    entities, relationships, addresses = place_blocks(entities, relationships,
                                                      [block for _, block in merged])
    return entities, relationships, addresses, stats


FILES_PER_READ = 32
CHUNK_STATUS_SCHEMA = pa.schema(list(EXTRACTION_SCHEMA) + CHUNK_STATUS_FIELDS)
# Chunks whose instances are written together, one piece per shard: fewer, larger objects on
# storage. The progress bar moves a batch at a time, hence smaller batches for slow LLM work.
INSTANCE_BATCH_CHUNKS = {"llm": 64, "nlp": 512}
# An actor waiting on HTTP uses little CPU, but it asks for some: that demand is what makes an
# autoscaling cluster add workers (a head started with CPU: 0 then keeps only the driver).
LLM_ACTOR_CPUS = 0.25


def llm_pool_shape(limits: LLMConfig, tokens_per_call: float) -> PoolShape:
    """Actors and calls per actor for a stage calling the endpoint of `limits` (the `llm` or
    `embeddings` section), from its rate budget: the calls in flight that keep the limits busy
    (Little's law, `rate_limiter.planned_in_flight`), whatever the number of files, chunks per
    file or workers."""
    return io_pool_shape(planned_in_flight(limits, tokens_per_call), limits.concurrent_requests)


def llm_worker_pool(config: GraphRagConfig, limits: LLMConfig,
                    tokens_per_call: float) -> WorkerPool:
    shape = llm_pool_shape(limits, tokens_per_call)
    return WorkerPool(config.runtime, num_cpus=LLM_ACTOR_CPUS, concurrency=shape.per_actor,
                      size=shape.actors)


def extract_chunks(inputs: pa.Table, reading: dict, config: GraphRagConfig,
                   prompts: dict[str, str], services: LLMServices, bar: ProgressBar | None,
                   progress: Progress, spill: tuple[str, int]) -> pa.Table:
    """Input files -> (workers) documents and chunks -> extraction -> instances to storage
    (`spill`: work URL, shards). Returns one status row per chunk, in chunk order; stops if
    every chunk failed."""
    if config.extraction.method == "llm":
        # One chunk per batch (one call's worth at a time), as many at once as the budget
        # can keep busy: a chunk's calls (extraction, gleaning) are sequential.
        tokens_per_call = count_tokens(prompts["extract_graph"], config.chunks.encoding_model) \
            + config.chunks.size
        batching = {"num_cpus": LLM_ACTOR_CPUS, "batch_size": 1,
                    "shape": llm_pool_shape(config.llm, tokens_per_call)}
    else:
        batching = {"num_cpus": 1.0}
    extraction = map_table(inputs, ExtractionWorker,
                           {"config": config, "prompts": prompts, "services": services},
                           config.runtime, output_schema=CHUNK_STATUS_SCHEMA, **batching,
                           first=(read_and_chunk, {**reading, "block_rows": batching.get(
                               "batch_size", config.runtime.batch_size)}, FILES_PER_READ),
                           then=(spill_instances, {"work_url": spill[0], "shards": spill[1]},
                                 INSTANCE_BATCH_CHUNKS[config.extraction.method]),
                           progress=bar)
    # Workers return rows in completion order; chunk order makes every later stage
    # (description lists, prompts, hence cache keys) the same from run to run.
    extraction = extraction.sort_by("seq")
    failed = extraction.filter(pc.equal(extraction.column("status"), "failed"))
    if failed.num_rows:
        reasons = failed.column("error").to_pylist()
        progress(f"warning: {failed.num_rows} of {extraction.num_rows} chunks failed "
                 f"extraction; first reason: {reasons[0]}")
        if failed.num_rows == extraction.num_rows:
            raise LLMError(f"every chunk failed extraction: {reasons[0]}")
    return extraction


def _community_figures(communities: list[Community]) -> dict:
    levels = sorted({c.level for c in communities})
    return {
        "levels": levels,
        "communities_per_level": {str(level): sum(1 for c in communities if c.level == level)
                                  for level in levels},
        "pooled_small_component_entities": int(sum(len(c.members) for c in communities
                                                   if c.pooled and c.level == 0)),
    }


def make_pool(config: GraphRagConfig, prompts: dict[str, str]) -> WorkerPool:
    """The pool for summaries, reports, the tables' writers and embeddings; sized, when it
    calls an LLM, for the summary calls (the shortest prompts, hence the most calls/s)."""
    if uses_any_llm(config):
        return llm_worker_pool(config, config.llm, count_tokens(
            prompts["summarize_descriptions"], config.chunks.encoding_model)
            + 2 * config.summarize.max_length)
    return WorkerPool(config.runtime, num_cpus=1.0, concurrency=1)


def make_embedding_pool(config: GraphRagConfig) -> WorkerPool:
    """The pool for an embeddings endpoint, sized from its own budget."""
    return llm_worker_pool(config, config.embeddings,
                           config.embeddings.batch_size * config.chunks.size)


def _usage_summary(stages: dict[str, Usage], timings: dict[str, float],
                   config: GraphRagConfig, ledger: dict[str, dict[str, int]] | None) -> dict:
    """`embed` is priced as the embeddings model, every other stage as the chat model.
    `ledger`: the rate budgets' count of the requests that reached the provider, per stage;
    it replaces what the workers' rows say of them (a retried Ray task's rows lose the calls
    its first attempt made). Cache hits come from the rows."""
    summary = {"model": config.llm.model, "stages": {}}
    total, costs = Usage(), []
    for name, usage in stages.items():
        if ledger is not None:
            usage = Usage(cache_hits=usage.cache_hits, **ledger.get(name, {}))
        total.add(usage)
        costs.append(cost_usd(usage, config.embeddings if name == "embed" else config.llm)
                     if usage.calls else 0.0)
        summary["stages"][name] = {**usage.as_dict(), "wall_s": timings.get(name),
                                   "cost_usd": costs[-1]}
    summary["total"] = {**total.as_dict(),
                        "cost_usd": None if None in costs else round(sum(costs), 6)}
    return summary


def _count(values: list[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value.split(" (")[0]] += 1
    return dict(counts)


def _write_tables(store: IndexVersion, tables: dict[str, pa.Table], rows_per_part: int) -> None:
    for name, table in tables.items():
        store.write_table(name, table, rows_per_part)


# The final tables' columns but the text, which the writers join (`element_tables`).
ENTITY_STRUCTURE = [c for c in schema.ENTITY_COLUMNS if c not in ("description", "descriptions")]
RELATIONSHIP_STRUCTURE = [c for c in schema.RELATIONSHIP_COLUMNS
                          if c not in ("description", "descriptions")]


def _finalize_entities(entities: pa.Table) -> pa.Table:
    n = entities.num_rows
    entities = entities.append_column("human_readable_id", pa.array(range(n), pa.int64()))
    entities = entities.append_column("x", pa.array([0.0] * n, pa.float64()))
    entities = entities.append_column("y", pa.array([0.0] * n, pa.float64()))
    return entities.select(ENTITY_STRUCTURE)


def _finalize_relationships(relationships: pa.Table) -> pa.Table:
    n = relationships.num_rows
    relationships = relationships.append_column("human_readable_id", pa.array(range(n), pa.int64()))
    return relationships.select(RELATIONSHIP_STRUCTURE)


def detect_communities(entities: pa.Table, relationships: pa.Table,
                       endpoints: tuple[np.ndarray, np.ndarray], config: GraphRagConfig,
                       figures: dict | None = None) -> list[Community]:
    """`endpoints`: `edge_endpoints(entities, relationships)`. `figures`, when given, receives
    the graph's size and Leiden's time and memory."""
    started = time.perf_counter()
    with PeakRss() as memory:
        sources, targets = endpoints
        weights = relationships.column("weight").to_numpy()
        graph = build_graph(entities.num_rows, sources, targets, weights)
        built = time.perf_counter()
        communities = hierarchical_leiden(graph, config.communities)
    if figures is not None:
        figures.update({
            "nodes": graph.vcount(), "edges": graph.ecount(),
            "build_graph_s": round(built - started, 3),
            "leiden_s": round(time.perf_counter() - built, 3),
            "communities": len(communities),
            "driver_rss_mb_before": memory.before_mb, "driver_rss_mb_peak": memory.peak_mb})
    return communities


def communities_table(communities: list[Community], entities: pa.Table,
                      relationships: pa.Table, endpoints: tuple[np.ndarray, np.ndarray]
                      ) -> pa.Table:
    entity_ids = entities.column("id").to_pylist()
    edge_ids = relationships.column("id").to_pylist()
    edge_units = relationships.column("text_unit_ids").to_pylist()
    edges_inside = edges_by_community(communities, *endpoints, entities.num_rows)
    empty = np.zeros(0, dtype=np.int64)
    rows = []
    for community in communities:
        inside = edges_inside.get(community.id, empty).tolist()
        units = list(dict.fromkeys(u for i in inside for u in edge_units[i]))
        rows.append({
            "id": element_id("community", str(community.level), str(community.id),
                             *[entity_ids[m] for m in community.members[:50]]),
            "human_readable_id": community.id, "community": community.id,
            "level": community.level, "parent": community.parent,
            "children": community.children,
            "title": f"Community {community.id}" + (" (pooled small components)"
                                                     if community.pooled else ""),
            "entity_ids": [entity_ids[m] for m in community.members],
            "relationship_ids": [edge_ids[i] for i in inside],
            "text_unit_ids": units,
            "period": datetime.now(timezone.utc).date().isoformat(),
            "size": len(community.members),
        })
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.string()), ("human_readable_id", pa.int64()), ("community", pa.int64()),
        ("level", pa.int64()), ("parent", pa.int64()), ("children", pa.list_(pa.int64())),
        ("title", pa.string()), ("entity_ids", pa.list_(pa.string())),
        ("relationship_ids", pa.list_(pa.string())), ("text_unit_ids", pa.list_(pa.string())),
        ("period", pa.string()), ("size", pa.int64())]))
    return table.select(schema.COMMUNITY_COLUMNS)


def _write_documents_and_text_units(staged: IndexVersion, work_url: str, extraction: pa.Table,
                                    entities: pa.Table, relationships: pa.Table,
                                    claims: pa.Table, rows_per_part: int) -> dict[str, int]:
    """The readers' documents and chunks, piece by piece, completed (human_readable_id, the
    elements found in each chunk, its extraction status) and written in parts: the corpus
    text is in memory one read batch at a time."""
    def ids_by_unit(table: pa.Table, unit_column: str) -> dict[str, list[str]]:
        result: dict[str, list[str]] = defaultdict(list)
        for element, units in zip(table.column("id").to_pylist(),
                                  table.column(unit_column).to_pylist()):
            for unit in (units if isinstance(units, list) else [units]):
                result[unit].append(element)
        return result

    entity_ids = ids_by_unit(entities, "text_unit_ids")
    relationship_ids = ids_by_unit(relationships, "text_unit_ids")
    covariate_ids = ids_by_unit(claims, "text_unit_id")
    status = dict(zip(extraction.column("text_unit_id").to_pylist(),
                      zip(extraction.column("status").to_pylist(),
                          extraction.column("error").to_pylist())))

    def text_units():
        next_id = 0
        for chunks in stored_pieces(work_url, "chunks"):
            units = chunks.column("id").to_pylist()
            missing = [u for u in units if u not in status]
            if missing:
                raise RuntimeError(f"{len(missing)} chunks came back from extraction without "
                                   "a result")
            yield pa.table({
                "id": chunks.column("id"),
                "human_readable_id": pa.array(range(next_id, next_id + len(units)), pa.int64()),
                "text": chunks.column("text"), "n_tokens": chunks.column("n_tokens"),
                "document_ids": pa.array([[d] for d in chunks.column("document_id").to_pylist()],
                                         pa.list_(pa.string())),
                "entity_ids": pa.array([entity_ids.get(u, []) for u in units],
                                       pa.list_(pa.string())),
                "relationship_ids": pa.array([relationship_ids.get(u, []) for u in units],
                                             pa.list_(pa.string())),
                "covariate_ids": pa.array([covariate_ids.get(u, []) for u in units],
                                          pa.list_(pa.string())),
                "document_id": chunks.column("document_id"),
                "extraction_status": pa.array([status[u][0] for u in units], pa.string()),
                "extraction_error": pa.array([status[u][1] for u in units], pa.string()),
            }).select(schema.TEXT_UNIT_COLUMNS)
            next_id += len(units)

    def documents():
        next_id = 0
        for part in stored_pieces(work_url, "documents"):
            yield part.add_column(1, "human_readable_id", pa.array(
                range(next_id, next_id + part.num_rows), pa.int64())).select(
                schema.DOCUMENT_COLUMNS)
            next_id += part.num_rows

    return {schema.DOCUMENTS: staged.write_stream(schema.DOCUMENTS, documents(), rows_per_part),
            schema.TEXT_UNITS: staged.write_stream(schema.TEXT_UNITS, text_units(),
                                                   rows_per_part)}
