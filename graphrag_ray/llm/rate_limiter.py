"""One request/token budget for every caller of a model, in one process or across a Ray cluster.

`RateBudget` is the algorithm, plain and clock-driven so tests can step it:
- two token buckets (requests, tokens) refilled at `headroom` x the provider's per-minute limit,
  holding at most `burst_seconds` of refill, so any 60 s window admits at most
  headroom x limit + one burst (below the provider's limit: pacing without 429s);
- a call reserves its estimate up front: prompt tokens + expected output, which is the max
  output until a few replies to the same prompt template were seen, then a margin over the
  largest recent reply (learned here, from every worker's replies); when it finishes the
  reservation is reconciled with the usage the response reports;
- in-flight calls are capped by a concurrency limit that halves on a 429 (at most once per
  `backoff_cooldown_s`) and grows back by one per limit's-worth of successes (AIMD);
- a Retry-After from the provider pauses every caller until it passes.

`LocalRateLimiter` guards it with a lock for threads; `RateLimiterActor` is the same budget in a
named async Ray actor that every worker on every node shares (one round trip per acquire and
one fire-and-forget release per call, so it serves thousands of calls a minute).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
import time
from dataclasses import dataclass

from graphrag_ray.config import LLMConfig

_POLL_S = 0.02
_OUTPUT_SAMPLES = 4
_OUTPUT_MARGIN = 1.25
_OUTPUT_WINDOW = 64


@dataclass
class Lease:
    id: int
    tokens: int
    tag: str = ""


class RateBudget:
    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None,
                 max_concurrency: int, headroom: float = 0.98, burst_seconds: float = 1.0,
                 backoff_cooldown_s: float = 2.0, now: float | None = None,
                 count_requested: bool = False):
        now = time.monotonic() if now is None else now
        self.request_rate = headroom * requests_per_minute / 60 if requests_per_minute else None
        self.token_rate = headroom * tokens_per_minute / 60 if tokens_per_minute else None
        self.request_cap = max(1.0, self.request_rate * burst_seconds) if self.request_rate else 0.0
        self.token_cap = max(1.0, self.token_rate * burst_seconds) if self.token_rate else 0.0
        self.requests = self.request_cap
        self.tokens = self.token_cap
        self.max_concurrency = max_concurrency
        self.concurrency_limit = float(max_concurrency)
        self.in_flight: dict[int, int] = {}
        self.paused_until = 0.0
        self.last_backoff = -math.inf
        self.backoff_cooldown_s = backoff_cooldown_s
        self.updated = now
        self._ids = itertools.count()
        self.outputs: dict[str, list[int]] = {}  # prompt template tag -> recent completions
        # The provider charges prompt + max_tokens at admission: reserve that and keep it.
        self.count_requested = count_requested
        self.stats = {"acquired": 0, "rate_limited": 0, "min_concurrency_limit": max_concurrency}

    def estimate(self, prompt_tokens: int, max_output: int, tag: str) -> int:
        seen = self.outputs.get(tag, [])
        if self.count_requested or len(seen) < _OUTPUT_SAMPLES:
            return prompt_tokens + max_output
        return prompt_tokens + min(max_output, int(max(seen) * _OUTPUT_MARGIN) + 1)

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.updated)
        self.updated = now
        if self.request_rate:
            self.requests = min(self.request_cap, self.requests + elapsed * self.request_rate)
        if self.token_rate:
            self.tokens = min(self.token_cap, self.tokens + elapsed * self.token_rate)

    def try_acquire(self, tokens: int, now: float, tag: str = "") -> tuple[Lease | None, float]:
        """A lease for `tokens`, or None and how long to wait before trying again."""
        self._refill(now)
        if now < self.paused_until:
            return None, self.paused_until - now
        if len(self.in_flight) >= max(1, int(self.concurrency_limit)):
            return None, _POLL_S
        waits = []
        if self.request_rate and self.requests < 1:
            waits.append((1 - self.requests) / self.request_rate)
        # A token bucket may go into debt for one call larger than the bucket itself.
        if self.token_rate and self.tokens <= 0:
            waits.append(-self.tokens / self.token_rate + 1e-3)
        if waits:
            return None, max(waits)
        if self.request_rate:
            self.requests -= 1
        if self.token_rate:
            self.tokens -= tokens
        lease = Lease(next(self._ids), tokens, tag)
        self.in_flight[lease.id] = tokens
        self.stats["acquired"] += 1
        return lease, 0.0

    def release(self, lease_id: int, used_tokens: int | None, now: float,
                rate_limited: bool = False, retry_after: float | None = None,
                completion_tokens: int | None = None, tag: str = "") -> None:
        """Return the unused part of the estimate; on a 429 back off (AIMD) and pause."""
        self._refill(now)
        if completion_tokens is not None:
            samples = self.outputs.setdefault(tag, [])
            samples.append(completion_tokens)
            del samples[:-_OUTPUT_WINDOW]
        estimate = self.in_flight.pop(lease_id, 0)
        if self.token_rate and used_tokens is not None and not self.count_requested:
            self.tokens = min(self.token_cap, self.tokens + estimate - used_tokens)
        if rate_limited:
            self.stats["rate_limited"] += 1
            if now - self.last_backoff >= self.backoff_cooldown_s:
                self.concurrency_limit = max(1.0, self.concurrency_limit / 2)
                self.last_backoff = now
                self.stats["min_concurrency_limit"] = min(self.stats["min_concurrency_limit"],
                                                          int(self.concurrency_limit))
            if retry_after:
                self.paused_until = max(self.paused_until, now + retry_after)
        elif used_tokens is not None:
            self.concurrency_limit = min(float(self.max_concurrency),
                                         self.concurrency_limit + 1 / self.concurrency_limit)


def budget_from_config(config: LLMConfig) -> RateBudget:
    return RateBudget(config.requests_per_minute, config.tokens_per_minute,
                      config.max_concurrency, config.rate_limit_headroom, config.burst_seconds,
                      count_requested=config.tokens_counted == "requested")


class LocalRateLimiter:
    """The budget shared by the threads of one process."""

    def __init__(self, config: LLMConfig):
        self._budget = budget_from_config(config)
        self._changed = threading.Condition()

    def acquire(self, prompt_tokens: int, max_output: int, tag: str = "") -> Lease:
        with self._changed:
            while True:
                tokens = self._budget.estimate(prompt_tokens, max_output, tag)
                lease, wait = self._budget.try_acquire(tokens, time.monotonic(), tag)
                if lease is not None:
                    return lease
                # A release (refund, free slot) wakes us before the refill time is up.
                self._changed.wait(min(wait, 0.5))

    def release(self, lease: Lease, used_tokens: int | None, rate_limited: bool = False,
                retry_after: float | None = None, completion_tokens: int | None = None) -> None:
        with self._changed:
            self._budget.release(lease.id, used_tokens, time.monotonic(), rate_limited,
                                 retry_after, completion_tokens, lease.tag)
            self._changed.notify_all()

    def stats(self) -> dict:
        with self._changed:
            return dict(self._budget.stats, concurrency_limit=self._budget.concurrency_limit)

    def close(self) -> None:
        pass


class RateLimiterActor:
    """Async Ray actor holding one budget; created with `ray.remote(...).options(name=...)`."""

    def __init__(self, config: LLMConfig):
        self._budget = budget_from_config(config)
        self._changed: asyncio.Event | None = None  # created on the actor's event loop

    async def acquire(self, prompt_tokens: int, max_output: int, tag: str = "") -> Lease:
        if self._changed is None:
            self._changed = asyncio.Event()
        while True:
            tokens = self._budget.estimate(prompt_tokens, max_output, tag)
            lease, wait = self._budget.try_acquire(tokens, time.monotonic(), tag)
            if lease is not None:
                return lease
            # A release (refund, free slot) wakes every waiter before the refill time is up.
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=min(wait, 0.5))
            except asyncio.TimeoutError:
                pass

    async def release(self, lease: Lease, used_tokens: int | None, rate_limited: bool = False,
                      retry_after: float | None = None,
                      completion_tokens: int | None = None) -> None:
        self._budget.release(lease.id, used_tokens, time.monotonic(), rate_limited, retry_after,
                             completion_tokens, lease.tag)
        if self._changed is not None:
            self._changed.set()

    async def stats(self) -> dict:
        return dict(self._budget.stats, concurrency_limit=self._budget.concurrency_limit)


class RayRateLimiter:
    """Worker-side handle to the cluster-wide budget; pickles into Ray tasks and actors."""

    def __init__(self, actor):
        self.actor = actor

    def acquire(self, prompt_tokens: int, max_output: int, tag: str = "") -> Lease:
        import ray

        return ray.get(self.actor.acquire.remote(prompt_tokens, max_output, tag))

    def release(self, lease: Lease, used_tokens: int | None, rate_limited: bool = False,
                retry_after: float | None = None, completion_tokens: int | None = None) -> None:
        self.actor.release.remote(lease, used_tokens, rate_limited, retry_after, completion_tokens)

    def stats(self) -> dict:
        import ray

        return ray.get(self.actor.stats.remote())

    def close(self) -> None:
        import ray

        ray.kill(self.actor)


def cluster_rate_limiter(config: LLMConfig, name: str) -> RayRateLimiter:
    """The named limiter actor for `name`, created on first use. Its creator must keep the
    handle (a non-detached actor dies with its last owner handle) and `close` it when done."""
    import ray

    # On the head node: losing a worker node must not lose the budget's state.
    actor_cls = ray.remote(num_cpus=0, max_concurrency=10_000,
                           resources={"node:__internal_head__": 0.001})(RateLimiterActor)
    actor = actor_cls.options(name=f"graphrag-ray-limiter:{name}", get_if_exists=True).remote(config)
    return RayRateLimiter(actor)
