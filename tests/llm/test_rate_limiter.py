"""The shared rate budget: unit behaviour on a stepped clock, then several Ray actors against
the test server enforcing the same limits."""

import math
import time

import numpy as np
import pytest

from graphrag_ray.config import LLMConfig
from graphrag_ray.llm.client import ChatClient
from graphrag_ray.distributed.shared_budget import cluster_rate_limiter
from graphrag_ray.llm.rate_limiter import RateBudget, Settlement
from graphrag_testkit.llm_server import run_test_server


def _admitted_per_window(budget: RateBudget, tokens: int, seconds: float, step: float = 0.01):
    times, now = [], 0.0
    while now < seconds:
        lease, _ = budget.try_acquire(tokens, now)
        if lease is not None:
            times.append(now)
            budget.settle(lease, Settlement(tokens), now)
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
    assert lease is not None and budget.token_pace.sustained == pytest.approx(0.0)
    assert budget.try_acquire(100, 0.0)[0] is None  # bucket empty until refund or refill
    budget.settle(lease, Settlement(40), 0.0)  # estimate 100, used 40: 60 back
    assert budget.token_pace.sustained == pytest.approx(60.0)


def test_rate_limited_release_halves_concurrency_pauses_and_recovers():
    budget = RateBudget(None, None, max_concurrency=16, backoff_cooldown_s=2.0, now=0.0)
    lease, _ = budget.try_acquire(1, 0.0)
    budget.settle(lease, Settlement(0, rate_limited=True, retry_after=1.5), 0.0)
    assert budget.concurrency_limit == 8
    assert budget.try_acquire(1, 1.0) == (None, pytest.approx(0.5))  # paused by Retry-After
    lease, _ = budget.try_acquire(1, 1.6)
    # Inside the cooldown: no second halving.
    budget.settle(lease, Settlement(0, rate_limited=True), 1.6)
    assert budget.concurrency_limit == 8
    for step in range(40):  # additive increase: about +1 per `limit` successes
        lease, _ = budget.try_acquire(1, 10.0 + step)
        budget.settle(lease, Settlement(1), 10.0 + step)
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
    # at 95% with a 0.2 s burst and no catch-up, which stays under it in any window of that
    # length.
    with run_test_server(rpm_limit=600, limit_window_s=5.0) as server:
        config = LLMConfig(api_base=server.url, model="test-model", requests_per_minute=600,
                           rate_limit_headroom=0.95, burst_seconds=0.2, max_retries=0,
                           catch_up_factor=1.0)
        limiter = cluster_rate_limiter(config, f"test-several-actors-{time.time()}")
        callers = [Caller.remote(config, limiter) for _ in range(actors)]
        try:
            usages = ray.get([c.run.remote(calls_per_actor, f"actor{i}")
                              for i, c in enumerate(callers)])
        finally:
            for caller in callers:  # ours: gone with the test, not left to the session
                ray.kill(caller)
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


def _admit_until(budget: RateBudget, start: float, end: float, step: float = 0.05
                 ) -> list[float]:
    """Admission times of a caller always ready from `start` to `end` (instant replies)."""
    admitted, now = [], start
    while now < end:
        lease, _ = budget.try_acquire(1, now)
        if lease is None:
            now += step
            continue
        budget.settle(lease, Settlement(1, completion_tokens=0), now)
        admitted.append(now)
    return admitted


def test_budget_left_idle_is_caught_up_without_any_minute_going_over():
    # 60 requests/min; a stage drains and nobody calls from 10 s to 40 s.
    budget = RateBudget(60, None, max_concurrency=100, headroom=1.0, now=0.0,
                        catch_up_factor=2.0)
    before = _admit_until(budget, 0.0, 10.0)
    after = _admit_until(budget, 40.0, 120.0)
    admitted = before + after
    # At most twice the rate while catching up ...
    assert all(sum(1 for t in admitted if start <= t < start + 5) <= 11
               for start in range(0, 120))
    # ... never more than the limit in any 60 s ...
    assert all(sum(1 for t in admitted if start <= t < start + 60) <= 60
               for start in np.arange(0.0, 120.0, 0.25))
    # ... and the idle half minute is caught up (strict pacing: 30 calls in the first minute,
    # 90 in two; at most 120).
    assert sum(1 for t in admitted if t < 60) >= 50
    assert len(admitted) >= 108


def test_a_429_turns_catch_up_off():
    budget = RateBudget(60, None, max_concurrency=100, headroom=1.0, now=0.0,
                        catch_up_factor=2.0)
    lease, _ = budget.try_acquire(1, 0.0)
    budget.settle(lease, Settlement(None, rate_limited=True), 0.5)
    admitted = _admit_until(budget, 1.0, 21.0)
    assert len(admitted) <= 21  # the per-minute rate, no more
    assert budget.report()["catch_up_off_after_s"] == 0.5


def test_output_estimate_learns_from_replies_of_the_same_template():
    budget = RateBudget(None, tokens_per_minute=60_000, max_concurrency=10, now=0.0)
    assert budget.estimate(100, 2000, "extract") == 2100  # nothing seen yet: max output
    for _ in range(4):
        lease, _ = budget.try_acquire(budget.estimate(100, 2000, "extract"), 0.0, "extract")
        budget.settle(lease, Settlement(300, completion_tokens=200), 0.0)
    assert budget.estimate(100, 2000, "extract") == 100 + 251  # 1.25 x largest reply
    assert budget.estimate(100, 2000, "report") == 2100  # other templates learn separately


def test_providers_that_count_requested_tokens_get_no_refund():
    budget = RateBudget(None, tokens_per_minute=6000, max_concurrency=10, headroom=1.0,
                        now=0.0, count_requested=True)
    assert budget.estimate(100, 2000, "t") == 2100
    lease, _ = budget.try_acquire(50, 0.0, "t")
    budget.settle(lease, Settlement(10, completion_tokens=5), 0.0)
    assert budget.token_pace.sustained == pytest.approx(50.0)  # 100 cap - 50 reserved, nothing returned
    assert budget.estimate(100, 2000, "t") == 2100  # never learns a smaller output


def test_in_flight_target_follows_littles_law_from_what_was_seen():
    # 600 requests/min is 10 calls/s; tokens do not bind. Replies take 2 s each: 20 calls in
    # flight keep the limit busy, twice that (+1) is allowed.
    budget = RateBudget(requests_per_minute=600, tokens_per_minute=None, max_concurrency=200,
                        headroom=1.0, now=0.0)
    assert budget.in_flight_target() is None
    for i in range(8):
        lease, _ = budget.try_acquire(100, float(i))
        budget.settle(lease, Settlement(100, completion_tokens=10), float(i) + 2.0)
    assert budget.in_flight_target() == 41
    # Tokens bind when calls are large: 60k tokens/min = 1,000/s over 500-token calls = 2/s.
    budget = RateBudget(None, tokens_per_minute=60_000, max_concurrency=200, headroom=1.0,
                        now=0.0)
    for i in range(8):
        lease, _ = budget.try_acquire(500, 100.0 * i)
        budget.settle(lease, Settlement(500, completion_tokens=50), 100.0 * i + 4.0)
    assert budget.in_flight_target() == 17  # 2/s x 4 s x 2 + 1
    # Never above max_concurrency.
    budget.max_concurrency = 10
    assert budget.in_flight_target() == 10


def test_planned_in_flight_sizes_callers_from_the_limits():
    from graphrag_ray.llm.rate_limiter import PLANNED_LATENCY_S, planned_in_flight

    config = LLMConfig(api_base="http://x/v1", requests_per_minute=500,
                       tokens_per_minute=200_000)
    # 200k tokens/min over 2,000-token calls: 1.67 calls/s for up to 30 s each, with headroom.
    # (The planned figure uses the slow end of latencies; the budget's own cap, the seen one.)
    expected = math.ceil(200_000 / 60 / 2000 * PLANNED_LATENCY_S * 2) + 1
    assert planned_in_flight(config, 2000) == expected
    # A bigger tier asks for more callers, up to max_concurrency.
    bigger = config.model_copy(update={"requests_per_minute": 10_000,
                                       "tokens_per_minute": 2_000_000})
    assert planned_in_flight(bigger, 2000) == bigger.max_concurrency
    # No limit to size from: the unlimited setting.
    assert planned_in_flight(LLMConfig(api_base="http://x/v1"), 2000) == 32


def test_ledger_counts_every_request_per_stage_and_the_mean_in_flight():
    budget = RateBudget(None, None, max_concurrency=10, now=0.0)
    first, _ = budget.try_acquire(10, 0.0, stage="extract")
    second, _ = budget.try_acquire(10, 1.0, stage="extract")
    budget.settle(first, Settlement(0, rate_limited=True,
                                    usage={"rate_limited": 1, "retries": 1}), 2.0)
    budget.settle(second, Settlement(30, completion_tokens=10, usage={
        "calls": 1, "prompt_tokens": 20, "completion_tokens": 10}), 3.0)
    third, _ = budget.try_acquire(10, 3.0, stage="reports")
    budget.settle(third, Settlement(5, completion_tokens=1, usage={
        "calls": 1, "prompt_tokens": 4, "completion_tokens": 1}), 4.0)
    assert budget.ledger["extract"] == {"calls": 1, "retries": 1, "rate_limited": 1,
                                        "failed_calls": 0, "prompt_tokens": 20,
                                        "completion_tokens": 10, "cached_tokens": 0}
    assert budget.ledger["reports"]["calls"] == 1
    report = budget.report()
    # 1 in flight over [0,1), 2 over [1,2), 1 over [2,4): 5 call-seconds in 4 busy seconds.
    assert report["peak_in_flight"] == 2 and report["mean_in_flight"] == 1.25


def test_prompt_estimates_learn_the_providers_token_count():
    """Another tokenizer counts more tokens than ours: reservations grow to match, so the
    provider's window is not overrun before the refunds come back."""
    budget = RateBudget(None, tokens_per_minute=600_000, max_concurrency=10, now=0.0)
    assert budget.estimate(1000, 0, "t") == 1000
    for i in range(3):
        tokens = budget.estimate(1000, 0, "t")
        lease, _ = budget.try_acquire(tokens, float(i), "t", prompt_tokens=1000)
        budget.settle(lease, Settlement(1100 + 50 * i + 10, completion_tokens=10), float(i) + 1)
    assert budget.estimate(1000, 0, "t") == 1200  # the largest ratio seen: 1.2


def test_calls_larger_than_the_bucket_never_overrun_a_60s_window():
    """Embedding batches of 77k tokens against 200k tokens/min: the bucket alone (which may go
    into debt for a call larger than itself) admitted three within 46 s."""
    budget = RateBudget(None, tokens_per_minute=200_000, max_concurrency=10, now=0.0)
    admitted, now = [], 0.0
    while now < 240:
        lease, wait = budget.try_acquire(77_000, now)
        if lease is None:
            now += max(wait, 0.01)
            continue
        admitted.append(now)
        budget.settle(lease, Settlement(77_000), now + 1.0)
    for start in admitted:
        in_window = sum(77_000 for t in admitted if start <= t < start + 60)
        assert in_window <= 0.98 * 200_000
    assert len(admitted) >= 8  # two a minute: it still uses the budget


def test_the_window_counts_what_the_provider_counted():
    budget = RateBudget(None, tokens_per_minute=60_000, max_concurrency=10, headroom=1.0,
                        burst_seconds=60.0, now=0.0)
    first, _ = budget.try_acquire(50_000, 0.0)
    budget.settle(first, Settlement(5_000, completion_tokens=10), 1.0)  # reserved 50k, used 5k
    assert budget.window_tokens == 5_000
    assert budget.try_acquire(50_000, 1.0)[0] is not None


def test_waiting_callers_are_admitted_in_the_order_of_the_critical_path():
    """Calls waiting on an empty request bucket are let in one a second: first a report
    others wait on, then the summaries as they came, then other calls (extraction: a chunk's
    first call, then gleanings by the reply before them, longest first; a call that says
    nothing last), and last the report nobody waits on; a newcomer does not pass the line,
    and a place whose caller stopped asking is given up."""
    budget = RateBudget(60, None, max_concurrency=100, headroom=1.0, now=0.0)
    budget.request_pace.take(budget.request_pace.sustained)  # nothing left this second
    calls = {"leaf": ("reports", 0), "s1": ("summarize", 0), "x": ("extract", 0),
             "glean_short": ("extract", 300), "held": ("reports", 2), "s2": ("summarize", 0),
             "glean_long": ("extract", 1500), "mid": ("reports", 1), "first": ("extract", 8000)}
    places = {}
    for name, (stage, urgency) in calls.items():
        assert budget.try_acquire(1, 0.0, stage=stage, urgency=urgency)[0] is None
        places[name] = budget.line_up(stage, 0.0, urgency)
    admitted, now = [], 0.0
    while len(admitted) < len(calls) and now < 20:
        now += 0.25
        for name, place in places.items():
            stage, urgency = calls[name]
            if name not in admitted and budget.try_acquire(
                    1, now, stage=stage, place=place, urgency=urgency)[0] is not None:
                admitted.append(name)
        assert budget.try_acquire(1, now, stage="summarize")[0] is None  # no passing
    assert admitted == ["held", "mid", "s1", "s2", "first", "glean_long", "glean_short", "x",
                        "leaf"]
    assert budget.waiting() == 0
    # A caller that stops asking holds nobody up for long.
    budget.line_up("summarize", now)
    assert budget.try_acquire(1, now + 1.5, stage="extract")[0] is None
    assert budget.try_acquire(1, now + 3.0, stage="extract")[0] is not None


def test_a_429_at_the_windows_edge_keeps_the_catch_up():
    """Admitted with the window nearly full, a call the provider refused was counted at its
    edge of the minute: the pacing keeps its catch-up; a second 429 within the minute turns
    it off."""
    budget = RateBudget(100, None, max_concurrency=100, headroom=1.0, now=0.0,
                        catch_up_factor=2.0)
    leases, now = [], 0.0
    while len(leases) < 95:
        lease, wait = budget.try_acquire(1, now)
        if lease is None:
            now += max(wait, 0.01)
        else:
            leases.append(lease)
    assert now < 45
    budget.settle(leases[-1], Settlement(None, rate_limited=True), now)
    assert budget.request_pace.factor == 2.0
    assert budget.report()["window_edge_429s"] == 1
    budget.settle(leases[-2], Settlement(None, rate_limited=True), now + 2.0)
    assert budget.request_pace.factor == 1.0


def test_the_window_frees_a_call_only_after_the_providers_edge():
    budget = RateBudget(None, tokens_per_minute=1000, max_concurrency=10, headroom=1.0,
                        burst_seconds=60.0, now=0.0)
    lease, _ = budget.try_acquire(1000, 0.0)
    budget.settle(lease, Settlement(1000, completion_tokens=10), 1.0)
    assert budget.try_acquire(500, 60.5)[0] is None  # the provider may count it until ~61 s
    assert budget.try_acquire(500, 61.1)[0] is not None


def test_the_cluster_budgets_actor_admits_its_line_in_order_and_misses_no_wake_up():
    """The Ray actor's acquire loop, run on an event loop without Ray: calls that wait on an
    exhausted request budget are let in by rank then arrival (a report others wait on first,
    summaries before the report nobody waits on), each woken by the admission or release
    before it, with nothing left waiting."""
    import asyncio

    from graphrag_ray.distributed.shared_budget import RateLimiterActor

    config = LLMConfig(api_base="http://127.0.0.1:1/v1", model="m", requests_per_minute=600,
                       rate_limit_headroom=1.0, burst_seconds=0.1, catch_up_factor=1.0)

    async def run():
        actor = RateLimiterActor(config)
        first = await actor.acquire(10, 10, stage="extract")  # the second's only call
        order = []

        async def call(name, stage, dependents=0):
            lease = await actor.acquire(10, 10, stage=stage, urgency=dependents)
            order.append(name)
            await actor.release(lease, Settlement(20, completion_tokens=10))

        tasks = []
        for name, stage, dependents in (("leaf", "reports", 0), ("s1", "summarize", 0),
                                        ("held", "reports", 1), ("s2", "summarize", 0)):
            tasks.append(asyncio.create_task(call(name, stage, dependents)))
            await asyncio.sleep(0.01)  # each stands in line before the next comes
        await actor.release(first, Settlement(20, completion_tokens=10))
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
        return order, actor._budget.waiting()

    order, waiting = asyncio.run(run())
    assert order == ["held", "s1", "s2", "leaf"] and waiting == 0
