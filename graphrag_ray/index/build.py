"""The index build: list the inputs, then run the pipeline the config picks
(`pipelines.py`: standard, nlp, their update variants) in a staged version, and publish it
with its manifest.

Pools start where the stages need them: the embeddings pool (an endpoint's own budget) at the
start, so text units are embedded while extraction runs; the summaries pool after the merge,
whose Ray tasks need the CPUs its actors would hold.
"""

from __future__ import annotations

import logging
import time

from graphrag_ray import stopping
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import ensure_ray, resolve_engine
from graphrag_ray.errors import GraphRagError
from graphrag_ray.processes import local_processes
from graphrag_ray.index.context import BuildContext, Progress
from graphrag_ray.index.extract.stage import EXTRACTION_METHODS
from graphrag_ray.index.graph.communities import warm_graph_libraries
from graphrag_ray.index.manifest import build_manifest
from graphrag_ray.index.pipelines import BuildState, pipeline, pipeline_name, run_stages
from graphrag_ray.index.pools import endpoints_used, uses_any_llm
from graphrag_ray.index.run_ledger import RunLedger
from graphrag_ray.index.update_plan import UpdatePlan
from graphrag_ray.input.loader import list_input_files, relative_path
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import LLMServices, check_endpoint
from graphrag_ray.llm.embedding_methods import vectors_model
from graphrag_ray.distributed.services import open_services
from graphrag_ray.progress import estimated_chunks
from graphrag_ray.prompts_loader import load_prompts
from graphrag_ray.resources import fewer_collections
from graphrag_ray.storage import IndexStore, Manifest
from graphrag_ray.storage.graph_stores import graph_store
from graphrag_ray.storage.vector_stores import check_vector_store

log = logging.getLogger(__name__)


def default_cache_url(output_url: str) -> str:
    return f"{output_url.rstrip('/')}/cache"


def build_index(input_url: str, output_url: str, config: GraphRagConfig,
                progress: Progress = log.info, progress_bars: bool = False,
                update: UpdatePlan | None = None) -> Manifest:
    """Build the index and publish it at `output_url`; returns the manifest. `update`: what
    it keeps of the version it updates (`index/update.py`)."""
    update = update or UpdatePlan.fresh()
    started = time.perf_counter()
    prompts = load_prompts(config)
    for endpoint in endpoints_used(config):
        check_endpoint(endpoint)
    listing_started = time.perf_counter()
    _, root, files, file_bytes, ignored = update.listing or \
        list_input_files(input_url, config.input)
    relative = [relative_path(path, root) for path in files]
    numbers = update.file_numbers(relative)
    listing_s = round(time.perf_counter() - listing_started, 3)
    # Before reading: the corpus size estimated from its bytes (~4 per token), file by file.
    chunk_estimates = [estimated_chunks(size, config.chunks.size, config.chunks.overlap)
                       for size in file_bytes]
    config = config.model_copy(deep=True)
    to_read = update.files_to_read(relative, chunk_estimates)
    method = EXTRACTION_METHODS[config.extraction.method]
    config.runtime.engine = resolve_engine(config.runtime, sum(to_read),
                                           llm_bound=method.calls_llm)
    # One method for every vector of the version (a question is embedded the same way).
    embeddings_note = config.embeddings.auto_note(sum(file_bytes) // 4)
    config.embeddings.method = config.embeddings.resolved_method(sum(file_bytes) // 4)
    _check_plugins(config)
    progress(f"{len(files)} input files ({sum(file_bytes) / 2 ** 20:.1f} MiB, "
             f"~{sum(chunk_estimates)} chunks); engine: {config.runtime.engine}")
    shards = config.merge.shards or max(
        1, -(-max(1, sum(file_bytes) // 4) // config.merge.tokens_per_shard))
    name = pipeline_name(config)
    stages = pipeline(name, config)
    if config.extraction.method == "llm":  # Leiden's libraries load while extraction waits
        warm_graph_libraries()
    store = IndexStore(output_url)
    staged = store.stage()  # an output that cannot be written is said here, before any work
    # A killed build's unpublished version is found (its process is gone, or its heartbeat
    # old) and removed: the response cache, not that folder, is what a rerun resumes from.
    for version in store.sweep():
        progress(f"removed the unfinished version {version} of a build that was killed")
    # A build that fails or is stopped removes its unpublished version (`building`).
    # In-process, a build that reads many files runs its Python-bound work (scans, offline
    # extraction, layout, offline embeddings) in worker processes.
    with store.building(staged) as staged, local_processes(
            config.runtime, len(to_read), config.tokenizer.encoding):
        ctx = BuildContext(config, prompts, _services(config, output_url), staged,
                           progress, progress_bars)
        ctx.timings["list_inputs"] = listing_s
        ctx.figures.embeddings_note = embeddings_note
        state = BuildState(input_url, root, files, numbers, chunk_estimates, shards, ignored,
                           update)
        ledger = RunLedger(output_url, ctx.services, "update" if update.is_update else "index")
        try:
            with fewer_collections():
                run_stages(ctx, state, stages)
            earlier = ledger.earlier()
            manifest = build_manifest(ctx, state, name, [s.name for s in stages], started,
                                      earlier)
            manifest = store.publish(ctx.staged, manifest)  # Last: readers now open it.
            ledger.count(earlier, manifest.version)
            ledger.close("published", manifest.version)
            if config.output.keep_versions:
                for pruned in store.prune(config.output.keep_versions):
                    progress(f"pruned index version {pruned}")
        except BaseException:
            if stopping.stop_requested():
                ctx.services.stop()  # before anything else: no worker on any node calls again
                progress(stopped_summary(ctx))
            ledger.close("stopped" if stopping.stop_requested() else "failed")
            raise
        finally:
            ctx.services.close()
    _send_to_graph_stores(config, store, manifest, progress)
    return manifest


def _check_plugins(config: GraphRagConfig) -> None:
    """Before any work: the embedding method and the vector store the config names exist,
    and the store can be reached."""
    vectors_model(config.embeddings, config.embeddings.method)
    check_vector_store(config.vector_index)


def _send_to_graph_stores(config: GraphRagConfig, store: IndexStore, manifest,
                          progress: Progress) -> None:
    """The published version to each of `output.graph_stores`; one that fails is said with
    the version it missed (published all the same)."""
    for name in config.output.graph_stores:
        try:
            progress(f"graph store {name}: {graph_store(name).write(store.open())}")
        except GraphRagError:
            raise
        except Exception as exc:
            raise GraphRagError(f"index version {manifest.version} was published, but graph "
                                f"store {name} failed: {type(exc).__name__}: {exc}") from None


def stopped_summary(ctx: BuildContext) -> str:
    """What a stopped build had done: the stage it was in and the calls it paid for."""
    running = [name for name in ctx.stage_starts if name not in ctx.timings]
    where = f"in stage {running[-1]}" if running else "between stages"
    done = ", ".join(ctx.timings) or "none"
    services = ctx.services
    paid = services.ledger(settle_s=1.0) if services.limiter is not None else {}
    calls = sum(counts.get("calls", 0) for counts in paid.values())
    by_stage = ", ".join(f"{stage} {counts.get('calls', 0)}" for stage, counts in paid.items()
                         if counts.get("calls"))
    open_calls = sum(limiter.stats().get("unsettled_calls", 0) for limiter in
                     (services.limiter, services.embedding_limiter) if limiter is not None)
    abandoned = f"; {open_calls} calls in flight abandoned" if open_calls else ""
    spent = (f"; {calls} LLM calls answered in this run" + (f" ({by_stage})" if by_stage else "")
             + abandoned) if services.limiter is not None else ""
    return f"stopped {where} (stages done: {done}){spent}; nothing was published"


def _services(config: GraphRagConfig, output_url: str) -> LLMServices:
    """The build's rate budgets (named Ray actors on Ray) and response cache."""
    if not uses_any_llm(config):
        return LLMServices()
    cache = ResponseCache(config.cache.url or default_cache_url(output_url)) \
        if config.cache.enabled else None
    if config.runtime.engine == "ray":
        ensure_ray(config.runtime)
    return open_services(config, cache, on_ray=config.runtime.engine == "ray", job="build")


