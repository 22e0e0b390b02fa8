"""The rate budget (`llm/rate_limiter.RateBudget`) shared by every worker of a job on a Ray
cluster: a named async actor on the head node (losing a worker node must not lose the
budget's state), one round trip per acquire and one fire-and-forget release per call, so it
serves thousands of calls a minute. `RayRateLimiter` is the workers' handle, with the same
methods as `LocalRateLimiter`."""

from __future__ import annotations

import asyncio
import time

from graphrag_ray.config import LLMConfig
from graphrag_ray.llm.reply_check import ReplyCheck, UnusableReplies
from graphrag_ray.stopping import StopRequested
from graphrag_ray.llm.rate_limiter import POLL_S, Lease, Settlement, budget_from_config

# How long `ledger` waits for releases still on their way (fire-and-forget from the workers).
_LEDGER_SETTLE_S = 5.0


class RateLimiterActor:
    """Async Ray actor holding one budget; created with `ray.remote(...).options(name=...)`."""

    def __init__(self, config: LLMConfig):
        self._budget = budget_from_config(config)
        self._changed: asyncio.Event | None = None  # created on the actor's event loop
        self._stopped = False
        self._replies = ReplyCheck(config.check_replies, config.unusable_share)

    async def note_reply(self, stage: str, usable: bool, sample: str, look_at: str
                         ) -> str | None:
        return self._replies.note(stage, usable, sample, look_at)

    async def acquire(self, prompt_tokens: int, max_output: int, tag: str = "",
                      stage: str = "", urgency: int = 0) -> Lease | str | None:
        """A lease; None once the job was stopped, or why the stage was (the worker then
        sends nothing)."""
        place = None
        while True:
            if self._stopped:
                return None
            if self._replies.verdict(stage):
                return self._replies.verdict(stage)  # the worker raises it
            # Each change sets the event of its time and starts a new one: a waiter never
            # misses a change that happened after it looked.
            changed = self._event()
            now = time.monotonic()
            lease, wait = self._budget.request(prompt_tokens, max_output, tag, stage, now,
                                               place, urgency)
            if lease is not None:
                if self._budget.waiting():  # the next in line may go now
                    self._notify()
                return lease
            if place is None:
                place = self._budget.line_up(stage, now, urgency)
            try:
                await asyncio.wait_for(changed.wait(), timeout=min(wait, 0.5))
            except asyncio.TimeoutError:
                pass

    async def stop(self) -> None:
        """No lease from now on, for the calls waiting in line too: the driver was stopped,
        and workers on other nodes must not start another call meanwhile."""
        self._stopped = True
        self._notify()

    async def release(self, lease: Lease, settlement: Settlement) -> None:
        self._budget.settle(lease, settlement, time.monotonic())
        self._notify()

    def _event(self) -> asyncio.Event:
        if self._changed is None:  # created on the actor's event loop
            self._changed = asyncio.Event()
        return self._changed

    def _notify(self) -> None:
        """Wakes every waiter: a release (refund, free slot) or an admission (the next in
        line) may let one go before its refill time is up."""
        self._event().set()
        self._changed = asyncio.Event()

    async def stats(self) -> dict:
        return self._budget.report()

    async def ledger(self, settle_s: float = _LEDGER_SETTLE_S) -> dict[str, dict[str, int]]:
        """Once the releases still on their way have arrived, for up to `settle_s` (a lease
        whose worker died stays in flight: its call is not counted, as no reply reached us)."""
        deadline = time.monotonic() + settle_s
        while self._budget.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
        return {stage: dict(counts) for stage, counts in self._budget.ledger.items()}


class RayRateLimiter:
    """Worker-side handle to the cluster-wide budget; pickles into Ray tasks and actors."""

    def __init__(self, actor):
        self.actor = actor

    def acquire(self, prompt_tokens: int, max_output: int, tag: str = "",
                stage: str = "", urgency: int = 0) -> Lease:
        import ray

        lease = ray.get(self.actor.acquire.remote(prompt_tokens, max_output, tag, stage,
                                                  urgency))
        if lease is None:
            raise StopRequested("stopped")
        if isinstance(lease, str):
            raise UnusableReplies(lease)
        return lease

    def note_reply(self, stage: str, usable: bool, sample: str, look_at: str) -> None:
        import ray

        verdict = ray.get(self.actor.note_reply.remote(stage, usable, sample, look_at))
        if verdict:
            raise UnusableReplies(verdict)

    def stop(self) -> None:
        self.actor.stop.remote()

    def release(self, lease: Lease, settlement: Settlement) -> None:
        self.actor.release.remote(lease, settlement)

    def stats(self) -> dict:
        import ray

        return ray.get(self.actor.stats.remote())

    def ledger(self, settle_s: float = _LEDGER_SETTLE_S) -> dict[str, dict[str, int]]:
        import ray

        return ray.get(self.actor.ledger.remote(settle_s))

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
