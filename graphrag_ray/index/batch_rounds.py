"""`llm.batch`: a stage's requests by batch, in rounds (`llm/batch.py` has the why). Each
round runs a pass of the stage whose requests are deferred, then sends them and waits; the
stage's real run then gets services that answer from the cache (a request the Batch API
failed for good fails there as an online failure would). The rounds' figures go into the
manifest's `batch` section, per phase."""

from __future__ import annotations

from typing import Callable

from graphrag_ray.index.context import BuildContext
from graphrag_ray.llm.batch import BatchMode, BatchQueue, BatchRunner
from graphrag_ray.llm.client import LLMServices


def by_batch(ctx: BuildContext, phase: str, stages: frozenset[str],
             run_pass: Callable[[LLMServices], None], embeddings: bool = False) -> LLMServices:
    """Rounds of `run_pass(services that defer)` until one defers nothing; returns the
    services for the stage's real run. `phase` names the rounds in progress lines and in
    the manifest; `stages` are the client stages whose requests go by batch; `embeddings`:
    they are embeddings requests, sent to the embeddings endpoint with its settings."""
    config = ctx.config.embeddings if embeddings else ctx.config.llm
    queue = BatchQueue(ctx.services.cache.url, "embeddings" if embeddings else "")
    # Attempts count within one run of the build: a later run (the provider mended, or the
    # user's rerun after failures) gives every unanswered request its attempts again.
    queue.write_failures({})
    runner = BatchRunner(config, ctx.services.cache, queue, ctx.progress, embeddings)
    rounds = []
    while True:
        run_pass(ctx.services.batched(BatchMode(
            queue, stages, queue.given_up(config.batch_max_attempts))))
        report = runner.round()
        if not report.requests:
            break
        rounds.append(report)
        ctx.progress(f"batch round {len(rounds)} of {phase}: {report.requests} requests in "
                     f"{report.batches} batches ({report.reattached} re-attached), "
                     f"{report.answered} answered, {report.failed_lines} lines failed, "
                     f"{report.wall_s:g} s")
    ctx.figures.batch_phases[phase] = {
        "rounds": len(rounds), "batches": sum(r.batches for r in rounds),
        "requests": sum(r.requests for r in rounds),
        "answered": sum(r.answered for r in rounds),
        "failed_lines": sum(r.failed_lines for r in rounds),
        "failed_for_good": rounds[-1].failed_for_good if rounds else 0,
        # The replies' usage: the phase's calls at batch prices.
        "calls": sum(r.answered for r in rounds),
        "prompt_tokens": sum(r.prompt_tokens for r in rounds),
        "completion_tokens": sum(r.completion_tokens for r in rounds),
        "wall_s": round(sum(r.wall_s for r in rounds), 3)}
    return ctx.services.batched(BatchMode(queue, stages,
                                          queue.given_up(config.batch_max_attempts),
                                          deferring=False))
