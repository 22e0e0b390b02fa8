"""The LLM services of one job (a build, an open index's queries, an evaluation): one rate
budget per model, the chat model's and, when an embeddings endpoint is used, the embeddings
model's (their limits are separate), and the response cache. Every caller builds them here:
the Ray layer decides whether a budget is a shared actor or a lock in this process."""

from __future__ import annotations

import uuid

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed.shared_budget import cluster_rate_limiter
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.llm.rate_limiter import LocalRateLimiter


def open_services(config: GraphRagConfig, cache: ResponseCache | None, *, on_ray: bool,
                  job: str) -> LLMServices:
    """`on_ray`: each budget is a named actor that every worker of the job shares (Ray must be
    initialised); otherwise a lock in this process. `job` names the budgets (a build and a
    query session running at once must not share one by accident)."""
    embeddings = config.embeddings if config.embeddings.resolved_method() == "api" else None
    name = f"{job}:{uuid.uuid4().hex[:12]}"

    def budget(limits):
        if on_ray:
            return cluster_rate_limiter(limits, f"{limits.model}:{name}")
        return LocalRateLimiter(limits)

    return LLMServices(budget(config.llm), cache,
                       budget(embeddings) if embeddings is not None else None,
                       declared=declared(config))


def declared(config: GraphRagConfig) -> dict:
    """What every chat request of a job with `config` declares (`request_kinds`): the
    language its prompts ask replies in, when set."""
    return {"language": config.prompts.language} if config.prompts.language else {}
