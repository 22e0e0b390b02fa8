"""The build's worker pools, sized from the LLM budget of the endpoint they call.

An LLM stage needs as many calls in flight as its budget can keep busy (Little's law,
`rate_limiter.planned_in_flight`), whatever the number of files, chunks per file or workers:
on Ray that is actors of `llm.concurrent_requests` threads each, locally threads.
"""

from __future__ import annotations

from graphrag_ray.config import GraphRagConfig, LLMConfig
from graphrag_ray.distributed import PoolShape, WorkerPool, io_pool_shape, open_worker_pool
from graphrag_ray.llm.rate_limiter import planned_in_flight
from graphrag_ray.tokens import count_tokens

# An actor waiting on HTTP uses little CPU, but it asks for some: that demand is what makes an
# autoscaling cluster add workers (a head started with CPU: 0 then keeps only the driver).
LLM_ACTOR_CPUS = 0.25


def uses_chat_llm(config: GraphRagConfig) -> bool:
    return config.extraction.method == "llm" or config.uses_llm(config.summarize.method) \
        or config.uses_llm(config.reports.method) \
        or (config.resolution.enabled and config.resolution.confirm_with_llm)


def uses_embedding_endpoint(config: GraphRagConfig) -> bool:
    return config.embeddings.resolved_method() == "api"


def uses_any_llm(config: GraphRagConfig) -> bool:
    return uses_chat_llm(config) or uses_embedding_endpoint(config)


def endpoints_used(config: GraphRagConfig) -> list:
    """The endpoint sections (`llm`, `embeddings`) a build under `config` calls."""
    return [section for section, used in ((config.llm, uses_chat_llm(config)),
                                          (config.embeddings, uses_embedding_endpoint(config)))
            if used]


def llm_pool_shape(limits: LLMConfig, tokens_per_call: float) -> PoolShape:
    """Actors and calls per actor for a stage calling the endpoint of `limits` (the `llm` or
    `embeddings` section)."""
    return io_pool_shape(planned_in_flight(limits, tokens_per_call), limits.concurrent_requests)


def llm_worker_pool(config: GraphRagConfig, limits: LLMConfig,
                    tokens_per_call: float) -> WorkerPool:
    shape = llm_pool_shape(limits, tokens_per_call)
    return open_worker_pool(config.runtime, num_cpus=LLM_ACTOR_CPUS,
                            concurrency=shape.per_actor, size=shape.actors)


def summaries_pool(config: GraphRagConfig, prompts: dict[str, str]) -> WorkerPool:
    """The pool for summaries, reports, the tables' writers and offline embeddings; sized,
    when it calls an LLM, for the summary calls (the shortest prompts, hence the most
    calls/s). Offline, one CPU-bound worker per CPU."""
    if uses_any_llm(config):
        return llm_worker_pool(config, config.llm, count_tokens(
            prompts["summarize_descriptions"], config.tokenizer.encoding)
            + 2 * config.summarize.max_length)
    return open_worker_pool(config.runtime, num_cpus=1.0, concurrency=1)


def embeddings_pool(config: GraphRagConfig) -> WorkerPool:
    """The pool for an embeddings endpoint, sized from its own budget."""
    return llm_worker_pool(config, config.embeddings,
                           config.embeddings.batch_size * config.chunks.size)
