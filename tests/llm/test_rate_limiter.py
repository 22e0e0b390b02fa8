"""The shared rate budget: unit behaviour on a stepped clock, then several Ray actors against
the test server enforcing the same limits."""

import time

import pytest

from graphrag_ray.config import LLMConfig
from graphrag_ray.llm.client import ChatClient
from graphrag_ray.llm.rate_limiter import RateBudget, cluster_rate_limiter
from graphrag_ray.testing.llm_server import run_test_server


def _admitted_per_window(budget: RateBudget, tokens: int, seconds: float, step: float = 0.01):
    times, now = [], 0.0
    while now < seconds:
        lease, _ = budget.try_acquire(tokens, now)
        if lease is not None:
            times.append(now)
            budget.release(lease.id, tokens, now)
        else:
            now += step
    return times


def test_request_rate_stays_under_the_limit_in_every_window():
    budget = RateBudget(requests_per_minute=600, tokens_per_minute=None, max_concurrency=100,
                        headroom=0.95, burst_seconds=1.0, now=0.0)
    times = _admitted_per_window(budget, tokens=1, seconds=120)
    for start in range(0, 60):
        in_window = sum(1 for t in times if start <= t < start + 60)
        assert in_window <= 600
    assert len(times) >= 0.94 * 600 * 2  # and it does use the budget


def test_token_budget_reconciles_with_reported_usage():
    budget = RateBudget(None, tokens_per_minute=6000, max_concurrency=10, burst_seconds=1.0,
                        headroom=1.0, now=0.0)
    lease, _ = budget.try_acquire(100, 0.0)
    assert lease is not None and budget.tokens == pytest.approx(0.0)
    assert budget.try_acquire(100, 0.0)[0] is None  # bucket empty until refund or refill
    budget.release(lease.id, used_tokens=40, now=0.0)  # estimate 100, used 40: 60 back
    assert budget.tokens == pytest.approx(60.0)


def test_rate_limited_release_halves_concurrency_pauses_and_recovers():
    budget = RateBudget(None, None, max_concurrency=16, backoff_cooldown_s=2.0, now=0.0)
    lease, _ = budget.try_acquire(1, 0.0)
    budget.release(lease.id, 0, 0.0, rate_limited=True, retry_after=1.5)
    assert budget.concurrency_limit == 8
    assert budget.try_acquire(1, 1.0) == (None, pytest.approx(0.5))  # paused by Retry-After
    lease, _ = budget.try_acquire(1, 1.6)
    budget.release(lease.id, 0, 1.6, rate_limited=True)  # inside the cooldown: no second halving
    assert budget.concurrency_limit == 8
    for step in range(40):  # additive increase: about +1 per `limit` successes
        lease, _ = budget.try_acquire(1, 10.0 + step)
        budget.release(lease.id, 1, 10.0 + step)
    assert 11 < budget.concurrency_limit <= 16


def test_concurrency_cap():
    budget = RateBudget(None, None, max_concurrency=2, now=0.0)
    assert budget.try_acquire(1, 0)[0] and budget.try_acquire(1, 0)[0]
    assert budget.try_acquire(1, 0)[0] is None


def test_several_actors_share_one_budget(ray_session):
    ray = ray_session
    calls_per_actor, actors = 20, 3

    @ray.remote(num_cpus=0.1)
    class Caller:
        def __init__(self, config, limiter):
            self.client = ChatClient(config, limiter=limiter)

        def run(self, n, tag):
            for i in range(n):
                self.client.complete([{"role": "user", "content": f"{tag} {i}"}], max_tokens=5)
            return self.client.usage.as_dict()

    # The server enforces 600 requests/min over a 5 s window (50 per 5 s); the budget paces
    # at 95% with a 0.2 s burst, which stays under it in any window of that length.
    with run_test_server(rpm_limit=600, limit_window_s=5.0) as server:
        config = LLMConfig(api_base=server.url, model="test-model", requests_per_minute=600,
                           rate_limit_headroom=0.95, burst_seconds=0.2, max_retries=0)
        limiter = cluster_rate_limiter(config, f"test-several-actors-{time.time()}")
        callers = [Caller.remote(config, limiter) for _ in range(actors)]
        usages = ray.get([c.run.remote(calls_per_actor, f"actor{i}") for i, c in enumerate(callers)])
        stats = server.stats()
        # Pacing is measured where the provider sees it: from first to last admission, so the
        # actors' start-up (process spawn, imports) on a busy machine does not count.
        admitted = [t for t, _, status, _ in server.request_log() if status == 200]
        span = max(admitted) - min(admitted)
    total = calls_per_actor * actors
    assert sum(u["calls"] for u in usages) == total
    assert stats["by_status"] == {"200": total}  # not a single 429
    assert span >= (total - 2) / 10  # paced: the limit is 10 requests/s
    assert span <= total / 9.5 + 4  # and close to it


def test_output_estimate_learns_from_replies_of_the_same_template():
    budget = RateBudget(None, tokens_per_minute=60_000, max_concurrency=10, now=0.0)
    assert budget.estimate(100, 2000, "extract") == 2100  # nothing seen yet: max output
    for _ in range(4):
        lease, _ = budget.try_acquire(budget.estimate(100, 2000, "extract"), 0.0, "extract")
        budget.release(lease.id, 300, 0.0, completion_tokens=200, tag="extract")
    assert budget.estimate(100, 2000, "extract") == 100 + 251  # 1.25 x largest reply
    assert budget.estimate(100, 2000, "report") == 2100  # other templates learn separately


def test_providers_that_count_requested_tokens_get_no_refund():
    budget = RateBudget(None, tokens_per_minute=6000, max_concurrency=10, headroom=1.0,
                        now=0.0, count_requested=True)
    assert budget.estimate(100, 2000, "t") == 2100
    lease, _ = budget.try_acquire(50, 0.0)
    budget.release(lease.id, used_tokens=10, now=0.0, completion_tokens=5, tag="t")
    assert budget.tokens == pytest.approx(50.0)  # 100 cap - 50 reserved, nothing returned
    assert budget.estimate(100, 2000, "t") == 2100  # never learns a smaller output
