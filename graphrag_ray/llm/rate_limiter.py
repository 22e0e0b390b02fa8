"""One request/token budget for every caller of a model, in one process or across a Ray cluster.

`RateBudget` is the algorithm, plain and clock-driven so tests can step it:
- a log of the calls and tokens admitted in the last 60 s, reconciled with each reply's usage,
  that must stay under `headroom` x the provider's per-minute limits: that is what the
  provider counts, so no 60 s window goes over, even when an estimate fell short. A call
  leaves the log `WINDOW_EDGE_S` after it leaves the minute: the provider counted it when it
  arrived, a little after we admitted it;
- for each limit, a pair of token buckets that pace admissions within it: a sustained one
  refilled at the per-minute rate and a peak one refilled at `catch_up_factor` x that rate,
  holding `burst_seconds` of it (no bursts). The sustained bucket keeps the budget left idle
  (a stage draining its last chunks, the merge; the empty window at the start) for up to a
  minute's worth, so it is caught up rather than lost, no faster than the peak bucket
  allows: a stage's calls later in their chains (gleaning) find budget when they come, and
  the next stage's first calls fill the time the last one's drain left. A 429 sets the
  factor to 1 and drops what was kept (a provider enforcing its limits over shorter spans
  than a minute), unless it came at the window's edge: the call was admitted with the window
  nearly full, and no other 429 came in the last minute (the provider's window runs a little
  behind ours: it counts a call when the call arrives). A call larger than the bucket (an
  embeddings batch) may take it into debt;
- a call reserves its estimate up front: prompt tokens + expected output, which is the max
  output until a few replies to the same prompt template were seen, then a margin over the
  largest recent reply (learned here, from every worker's replies); when it finishes the
  reservation is reconciled with the usage the response reports;
- callers are planned by Little's law (`planned_in_flight`: the calls per second the limits
  allow times a latency at the slow end, with headroom) and the buckets pace them; the calls
  in flight are then what the limits and the latency make them (`report`: peak, mean, and the
  target Little's law gives for the latency seen). A cap on them at that target idled the
  budget whenever long calls bunched up, so the only cap is `max_concurrency`, halved on a
  429 (at most once per `backoff_cooldown_s`) and grown back by one per limit's-worth of
  successes (AIMD);
- callers that must wait stand in one line (`line_up`), admitted in the order of `_rank`,
  then of arrival: first the community reports that other reports wait on (a sub-community
  report its parent's context takes; `urgency`: the more waiting above it, the sooner),
  then summaries (every report waits on some, and each is a short call), then everything
  else (extraction: a chunk's first call before any gleaning, gleanings by the length of
  the reply before them, longest first, `urgency` again), and last the reports nobody
  waits on. So the calls that a full window pushes into the next minute are those that end
  the build one call's latency after it frees. In arrival order the gleanings admitted last
  were the longest (a chunk that took long to answer is also the one with most left to
  find), so ordering them ends extraction sooner. Without the line, whichever waiting thread
  woke first took each freed place: summaries finished in no particular order, most
  communities' last summary came late, and the reports waited for nearly all of them.
  Asking every summary before any report, or every report before the remaining summaries,
  each left chains of a summary and reports one after another at the end;
- a Retry-After from the provider pauses every caller until it passes;
- every request that reached the provider is counted here, per stage, when it is released:
  this ledger lives with the budget (on the head node on Ray), so a worker that dies and is
  retried cannot lose or double the count of the calls it made.

`LocalRateLimiter` guards it with a lock for threads; `distributed/shared_budget.py` holds the
same budget in a named async Ray actor that every worker on every node shares.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass

from graphrag_ray import stopping
from graphrag_ray.config import LLMConfig
from graphrag_ray.llm.reply_check import ReplyCheck, UnusableReplies

POLL_S = 0.02
_WINDOW_S = 60.0  # the providers' limits are per minute
# A place in line not asked about for this long is given up (its caller died or left).
_PLACE_STALE_S = 2.0
# How much later than our admission the provider's own window counts a call: the request's
# way to it (a thread's turn, a Ray round trip, the connection). A call admitted the moment
# our log freed its place was refused at the provider's edge of the minute.
WINDOW_EDGE_S = 1.0
# A 429 for a call admitted while the window held this share of a limit is the window's edge
# (accounting a little off), not a provider counting over shorter spans.
_EDGE_FULLNESS = 0.9
_OUTPUT_SAMPLES = 4
_OUTPUT_MARGIN = 1.25
_OUTPUT_WINDOW = 64
TIMELINE_BUCKET_S = 10.0  # the manifest's usage timeline: requests and tokens per 10 s
# Callers ready beyond what Little's law says the limits can use: latency varies from call to
# call, and callers sized at the mean would leave the budget idle whenever long calls bunch up.
LITTLE_HEADROOM = 2.0
# What callers plan for before any reply was seen: LLM calls take from under a second to
# about half a minute. A caller with nothing to do waits in `acquire` at the cost of a thread,
# so planning for the slow end costs little and never starves the budget.
PLANNED_LATENCY_S = 30.0


def little_in_flight(calls_per_s: float | None, latency_s: float, max_concurrency: int) -> int:
    """Calls in flight that keep `calls_per_s` going at `latency_s` each (Little's law), with
    headroom; `max_concurrency` when the rate is unlimited (None) and as the ceiling."""
    if calls_per_s is None:
        return max_concurrency
    return max(1, min(max_concurrency, math.ceil(calls_per_s * latency_s * LITTLE_HEADROOM) + 1))


def allowed_calls_per_s(requests_per_s: float | None, tokens_per_s: float | None,
                        tokens_per_call: float) -> float | None:
    """Calls per second the limits admit at `tokens_per_call`; None when nothing limits."""
    rates = [requests_per_s] if requests_per_s else []
    if tokens_per_s:
        rates.append(tokens_per_s / max(1.0, tokens_per_call))
    return min(rates) if rates else None


def planned_in_flight(config: LLMConfig, tokens_per_call: float) -> int:
    """How many callers a stage should have ready before any reply was seen."""
    per_s = [limit / 60 if limit else None
             for limit in (config.requests_per_minute, config.tokens_per_minute)]
    return little_in_flight(allowed_calls_per_s(*per_s, tokens_per_call), PLANNED_LATENCY_S,
                            config.concurrency_ceiling())


# What the ledger counts per stage: the provider-side fields of `client.Usage`.
LEDGER_FIELDS = ("calls", "retries", "rate_limited", "failed_calls", "prompt_tokens",
                 "completion_tokens", "cached_tokens")


class _Pace:
    """One limit's pair of buckets (see the module's docstring), in calls or tokens."""

    def __init__(self, rate: float, burst_seconds: float, catch_up_factor: float):
        self.rate = rate
        self.burst_seconds = burst_seconds
        self.factor = catch_up_factor
        self.sustained_cap, self.peak_cap = self._caps()
        # The provider's window starts empty: a minute's budget to spend at the peak rate.
        self.sustained, self.peak = self.sustained_cap, self.peak_cap

    def _caps(self) -> tuple[float, float]:
        burst = max(1.0, self.rate * self.burst_seconds)
        return (self.rate * _WINDOW_S if self.factor > 1 else burst,
                max(1.0, burst * self.factor))

    def set_factor(self, factor: float) -> None:
        self.factor = factor
        self.sustained_cap, self.peak_cap = self._caps()
        self.sustained = min(self.sustained, self.sustained_cap)
        self.peak = min(self.peak, self.peak_cap)

    def refill(self, elapsed: float) -> None:
        self.sustained = min(self.sustained_cap, self.sustained + elapsed * self.rate)
        self.peak = min(self.peak_cap, self.peak + elapsed * self.rate * self.factor)

    def wait_s(self, need: float) -> float:
        """Seconds until both buckets hold `need` (0: now)."""
        return max(0.0, (need - self.sustained) / self.rate,
                   (need - self.peak) / (self.rate * self.factor))

    def take(self, amount: float) -> None:
        self.sustained -= amount
        self.peak -= amount

    def give_back(self, amount: float) -> None:
        self.sustained = min(self.sustained_cap, self.sustained + amount)
        self.peak = min(self.peak_cap, self.peak + amount)


@dataclass(frozen=True)
class Settlement:
    """How a leased call ended, for its budget: the tokens the provider counted of it
    (`used_tokens`; None: unknown, the reservation stands), the reply's completion tokens
    (None: no reply; they teach the output estimate), a 429 and its Retry-After, what the
    ledger counts of the request (`usage`), and a request shape its rejection taught (every
    later lease carries it)."""
    used_tokens: int | None = None
    completion_tokens: int | None = None
    rate_limited: bool = False
    retry_after: float | None = None
    usage: dict[str, int] | None = None
    learned_shape: object = None


@dataclass
class Lease:
    id: int
    tokens: int
    tag: str = ""
    stage: str = ""
    # The request shape the job has learned (llm/request_shape.py), None while nothing was.
    shape: object = None


class RateBudget:
    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None,
                 max_concurrency: int, headroom: float = 0.98, burst_seconds: float = 1.0,
                 backoff_cooldown_s: float = 2.0, now: float | None = None,
                 count_requested: bool = False, catch_up_factor: float = 1.0):
        now = time.monotonic() if now is None else now
        self.request_rate = headroom * requests_per_minute / 60 if requests_per_minute else None
        self.token_rate = headroom * tokens_per_minute / 60 if tokens_per_minute else None
        self.window_limit = headroom * tokens_per_minute if tokens_per_minute else None
        self.window_request_limit = headroom * requests_per_minute if requests_per_minute \
            else None
        self.window: deque[list] = deque()  # [admitted at, tokens, lease id], oldest first
        self.window_tokens = 0
        self.window_entries: dict[int, list] = {}
        self.request_pace = _Pace(self.request_rate, burst_seconds, catch_up_factor) \
            if self.request_rate else None
        self.token_pace = _Pace(self.token_rate, burst_seconds, catch_up_factor) \
            if self.token_rate else None
        self.first_admission: float | None = None
        self.used_tokens = 0  # admitted, reconciled with usage
        self.max_concurrency = max_concurrency
        self.concurrency_limit = float(max_concurrency)
        # lease -> (tokens reserved, admitted at, prompt tokens as we counted them, whether
        # the window was nearly full when it was admitted)
        self.in_flight: dict[int, tuple[int, float, int, bool]] = {}
        self.last_rate_limited = -math.inf
        # Recent successful calls: seconds from admission to release, and tokens used.
        self.latencies: deque[float] = deque(maxlen=_OUTPUT_WINDOW)
        self.call_tokens: deque[int] = deque(maxlen=_OUTPUT_WINDOW)
        # The provider's prompt token count over ours, per recent call.
        self.prompt_ratios: deque[float] = deque(maxlen=_OUTPUT_WINDOW)
        self.ledger: dict[str, dict[str, int]] = defaultdict(dict.fromkeys(LEDGER_FIELDS, 0).copy)
        # Time-weighted in-flight count while anything is in flight: the mean concurrency.
        self._busy_s = 0.0
        self._in_flight_area = 0.0
        self._area_updated = now
        self.paused_until = 0.0
        self.last_backoff = -math.inf
        self.backoff_cooldown_s = backoff_cooldown_s
        self.updated = now
        self._ids = itertools.count()
        self.outputs: dict[str, list[int]] = {}  # prompt template tag -> recent completions
        # The provider charges prompt + max_tokens at admission: reserve that and keep it.
        self.count_requested = count_requested
        self.stats = {"acquired": 0, "rate_limited": 0, "min_concurrency_limit": max_concurrency,
                      "peak_in_flight": 0, "catch_up_off_after_s": None,
                      "window_edge_429s": 0}
        # What a worker learned of the endpoint's parameters, handed out with every lease.
        self.learned_shape = None
        # The callers waiting, in order: a heap of (`_rank`..., arrival, place; arrival and
        # place are the same number), and each live place's last try.
        self._line: list[tuple[int, int, int, int]] = []
        self._places: dict[int, float] = {}
        # Requests, tokens and 429s per TIMELINE_BUCKET_S since the budget opened (`stats`
        # plots them against the limits).
        self.opened = now
        self.timeline: dict[int, list[int]] = {}

    def estimate(self, prompt_tokens: int, max_output: int, tag: str) -> int:
        """Prompt tokens as the provider counts them (ours, scaled by the largest recent
        ratio of its count to ours: its tokenizer may not be ours) plus the expected output."""
        prompt = math.ceil(prompt_tokens * self.prompt_scale())
        seen = self.outputs.get(tag, [])
        if self.count_requested or len(seen) < _OUTPUT_SAMPLES:
            return prompt + max_output
        return prompt + min(max_output, int(max(seen) * _OUTPUT_MARGIN) + 1)

    def prompt_scale(self) -> float:
        return max(self.prompt_ratios) if self.prompt_ratios else 1.0

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.updated)
        self.updated = now
        for pace in (self.request_pace, self.token_pace):
            if pace:
                pace.refill(elapsed)

    def _expire_window(self, now: float) -> None:
        while self.window and self.window[0][0] <= now - _WINDOW_S - WINDOW_EDGE_S:
            expired = self.window.popleft()
            self.window_tokens -= expired[1]
            self.window_entries.pop(expired[2], None)

    def _window_nearly_full(self, tokens: int) -> bool:
        """Whether admitting `tokens` fills the window to `_EDGE_FULLNESS` of a limit."""
        return bool((self.window_limit and self.window_tokens + tokens
                     >= _EDGE_FULLNESS * self.window_limit)
                    or (self.window_request_limit and len(self.window) + 1
                        >= _EDGE_FULLNESS * self.window_request_limit))

    def in_flight_target(self) -> int | None:
        """Little's law on what was seen: the calls per second the limits allow at the mean
        tokens per call, times the mean latency, with headroom (None until a few calls have
        finished): the callers a stage needs ready, for the report."""
        if len(self.latencies) < _OUTPUT_SAMPLES:
            return None
        rate = allowed_calls_per_s(self.request_rate, self.token_rate,
                                   sum(self.call_tokens) / len(self.call_tokens))
        return little_in_flight(rate, sum(self.latencies) / len(self.latencies),
                                self.max_concurrency)

    def _track_in_flight(self, now: float) -> None:
        """Called before the in-flight set changes: integrates it over time."""
        elapsed = max(0.0, now - self._area_updated)
        self._in_flight_area += len(self.in_flight) * elapsed
        if self.in_flight:
            self._busy_s += elapsed
        self._area_updated = now

    def request(self, prompt_tokens: int, max_output: int, tag: str, stage: str,
                now: float, place: int | None = None,
                urgency: int = 0) -> tuple[Lease | None, float]:
        """`try_acquire` for a call of this prompt and output limit, its tokens estimated."""
        return self.try_acquire(self.estimate(prompt_tokens, max_output, tag), now, tag, stage,
                                prompt_tokens, place, urgency)

    def line_up(self, stage: str, now: float, urgency: int = 0) -> int:
        """A place in the line of waiting callers, for a caller of `stage` that was refused
        (`urgency`: how much later work waits on its answer, in its stage's own measure; see
        the module's docstring): it keeps it across its tries (`place=`) until it is
        admitted."""
        place = next(self._ids)
        heapq.heappush(self._line, (*_rank(stage, urgency), place, place))
        self._places[place] = now
        return place

    def waiting(self) -> int:
        """Callers standing in line."""
        return len(self._places)

    def _first_in_line(self, now: float) -> tuple[int, int, int, int] | None:
        while self._line:
            head = self._line[0]
            seen = self._places.get(head[-1])
            if seen is not None and now - seen <= _PLACE_STALE_S:
                return head
            heapq.heappop(self._line)
            self._places.pop(head[-1], None)
        return None

    def _behind_others(self, stage: str, urgency: int, place: int | None,
                       now: float) -> bool:
        """Whether a caller ranks behind someone in line (a newcomer ranks behind everyone
        of its rank and above)."""
        rank = _rank(stage, urgency)
        if place is not None:
            if place not in self._places:  # given up while its caller was slow: back in place
                heapq.heappush(self._line, (*rank, place, place))
            self._places[place] = now
        head = self._first_in_line(now)
        if head is None or head[-1] == place:
            return False
        if place is None:
            return head[:2] <= rank
        return head[:3] < (*rank, place)

    def try_acquire(self, tokens: int, now: float, tag: str = "", stage: str = "",
                    prompt_tokens: int = 0, place: int | None = None,
                    urgency: int = 0) -> tuple[Lease | None, float]:
        """A lease for `tokens` (`prompt_tokens` of them the prompt, as we counted it), or
        None and how long to wait before trying again. `place`: the caller's place in line
        (`line_up`), if it was refused before; no caller passes one ahead of it."""
        self._refill(now)
        if now < self.paused_until:
            return None, self.paused_until - now
        if self._behind_others(stage, urgency, place, now):
            # Woken when someone is admitted or released; the timeout keeps the place fresh.
            return None, _PLACE_STALE_S / 4
        if len(self.in_flight) >= max(1, int(self.concurrency_limit)):
            return None, POLL_S
        # A token bucket may go into debt for one call larger than the bucket itself: each
        # bucket needs only one unit (a call, a token) to admit.
        waits = [wait for wait in (pace.wait_s(1.0) for pace in (self.request_pace,
                                                                 self.token_pace) if pace)
                 if wait > 0]
        self._expire_window(now)
        if self.window and (
                (self.window_limit and self.window_tokens + tokens > self.window_limit)
                or (self.window_request_limit
                    and len(self.window) + 1 > self.window_request_limit)):
            waits.append(max(POLL_S, self.window[0][0] + _WINDOW_S + WINDOW_EDGE_S - now))
        if waits:
            return None, max(waits)
        if self.request_pace:
            self.request_pace.take(1)
        if self.token_pace:
            self.token_pace.take(tokens)
        lease = Lease(next(self._ids), tokens, tag, stage, self.learned_shape)
        self._places.pop(place, None)
        self._track_in_flight(now)
        self.in_flight[lease.id] = (tokens, now, prompt_tokens, self._window_nearly_full(tokens))
        if self.window_limit or self.window_request_limit:
            entry = [now, tokens, lease.id]
            self.window.append(entry)
            self.window_tokens += tokens
            self.window_entries[lease.id] = entry
        if self.first_admission is None:
            self.first_admission = now
        self.used_tokens += tokens
        self.stats["acquired"] += 1
        self.stats["peak_in_flight"] = max(self.stats["peak_in_flight"], len(self.in_flight))
        return lease, 0.0

    def settle(self, lease: Lease, settlement: Settlement, now: float) -> None:
        """Return the unused part of the estimate; on a 429 back off (AIMD) and pause. The
        request's usage goes into the ledger under the lease's stage; a learned request
        shape goes to every later lease."""
        used_tokens, completion_tokens = settlement.used_tokens, settlement.completion_tokens
        rate_limited, retry_after = settlement.rate_limited, settlement.retry_after
        learned_shape, usage = settlement.learned_shape, settlement.usage
        tag, stage, lease_id = lease.tag, lease.stage, lease.id
        self._refill(now)
        if learned_shape is not None and (self.learned_shape is None or
                                          learned_shape.generation
                                          > self.learned_shape.generation):
            self.learned_shape = learned_shape
        if usage:
            counts = self.ledger[stage]
            for key, value in usage.items():
                counts[key] += int(value or 0)
        self._on_timeline(now, used_tokens, rate_limited)
        if completion_tokens is not None:
            samples = self.outputs.setdefault(tag, [])
            samples.append(completion_tokens)
            del samples[:-_OUTPUT_WINDOW]
        self._track_in_flight(now)
        estimate, admitted, prompt_tokens, at_edge = self.in_flight.pop(lease_id,
                                                                        (0, now, 0, False))
        if used_tokens is not None and not rate_limited and completion_tokens is not None:
            self.latencies.append(now - admitted)
            self.call_tokens.append(used_tokens)
            if prompt_tokens > 0 and used_tokens > completion_tokens:
                self.prompt_ratios.append((used_tokens - completion_tokens) / prompt_tokens)
        if self.token_pace and used_tokens is not None and not self.count_requested:
            self.token_pace.give_back(estimate - used_tokens)
            self.used_tokens += used_tokens - estimate
            entry = self.window_entries.pop(lease_id, None)
            if entry is not None:  # what the provider counted when it admitted the call
                self.window_tokens += used_tokens - entry[1]
                entry[1] = used_tokens
        if rate_limited:
            self.stats["rate_limited"] += 1
            paces = [pace for pace in (self.request_pace, self.token_pace) if pace]
            edge = at_edge and now - self.last_rate_limited > _WINDOW_S
            self.last_rate_limited = now
            if edge:
                self.stats["window_edge_429s"] += 1
            elif any(pace.factor > 1 for pace in paces):  # it counts over shorter spans: pace
                for pace in paces:
                    pace.set_factor(1.0)
                self.stats["catch_up_off_after_s"] = round(now - self.first_admission, 1) \
                    if self.first_admission is not None else 0.0
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

    def report(self) -> dict:
        """The budget's figures for the manifest: counters, how many calls were in flight
        (peak, and mean while any was), the latency and Little's-law target it ended with."""
        latency = sum(self.latencies) / len(self.latencies) if self.latencies else None
        return {**self.stats, "unused_tokens": self._unused_tokens(),
                "concurrency_limit": round(self.concurrency_limit, 2),
                "mean_in_flight": round(self._in_flight_area / self._busy_s, 2)
                if self._busy_s else 0.0,
                "mean_latency_s": round(latency, 3) if latency is not None else None,
                "in_flight_target": self.in_flight_target(),
                # Leases never given back: calls whose worker died before the reply came (the
                # provider may have served them; the ledger could not count them).
                "unsettled_calls": len(self.in_flight),
                "prompt_token_scale": round(self.prompt_scale(), 3),
                "learned_request_shape": _described(self.learned_shape),
                "timeline": self.timeline_report()}

    def _on_timeline(self, now: float, used_tokens: int | None, rate_limited: bool) -> None:
        bucket = self.timeline.setdefault(int((now - self.opened) // TIMELINE_BUCKET_S),
                                          [0, 0, 0])
        bucket[0] += 1
        bucket[1] += int(used_tokens or 0) if not rate_limited else 0
        bucket[2] += int(rate_limited)

    def timeline_report(self) -> dict:
        last = max(self.timeline, default=-1)
        series = [self.timeline.get(b, [0, 0, 0]) for b in range(last + 1)]
        return {"bucket_s": TIMELINE_BUCKET_S, "requests": [s[0] for s in series],
                "tokens": [s[1] for s in series], "rate_limited": [s[2] for s in series]}

    def _unused_tokens(self) -> int | None:
        """Token budget the run left idle: what the limit allowed from the first admission to
        the last update, less what was used (None without a tokens limit)."""
        if not self.token_rate or self.first_admission is None:
            return None
        return max(0, int(self.token_rate * (self.updated - self.first_admission)
                          - self.used_tokens))


def _rank(stage: str, urgency: int) -> tuple[int, int]:
    """A waiting call's rank in line (lower first), before its arrival: see the module's
    docstring."""
    if stage == "reports":
        return (0 if urgency else 3), -urgency
    return (1 if stage == "summarize" else 2), -urgency


def _described(shape) -> str | None:
    from graphrag_ray.llm.request_shape import describe

    return describe(shape) if shape is not None else None


def budget_from_config(config: LLMConfig) -> RateBudget:
    return RateBudget(config.requests_per_minute, config.tokens_per_minute,
                      config.concurrency_ceiling(), config.rate_limit_headroom,
                      config.burst_seconds,
                      count_requested=config.tokens_counted == "requested",
                      catch_up_factor=config.catch_up_factor)


class LocalRateLimiter:
    """The budget shared by the threads of one process."""

    def __init__(self, config: LLMConfig):
        self._budget = budget_from_config(config)
        self._changed = threading.Condition()
        self._replies = ReplyCheck(config.check_replies, config.unusable_share)

    def note_reply(self, stage: str, usable: bool, sample: str, look_at: str) -> None:
        """A reply of `stage` (`reply_check`); raises UnusableReplies when it stops it."""
        with self._changed:
            verdict = self._replies.note(stage, usable, sample, look_at)
        if verdict:
            raise UnusableReplies(verdict)

    def acquire(self, prompt_tokens: int, max_output: int, tag: str = "",
                stage: str = "", urgency: int = 0) -> Lease:
        place = None
        with self._changed:
            while True:
                stopping.check()  # a call waiting in line when a stop comes goes no further
                if self._replies.verdict(stage):
                    raise UnusableReplies(self._replies.verdict(stage))
                now = time.monotonic()
                lease, wait = self._budget.request(prompt_tokens, max_output, tag, stage, now,
                                                   place, urgency)
                if lease is not None:
                    if self._budget.waiting():  # the next in line may go now
                        self._changed.notify_all()
                    return lease
                if place is None:
                    place = self._budget.line_up(stage, now, urgency)
                # A release (refund, free slot) or an admission wakes us before the refill
                # time is up.
                self._changed.wait(min(wait, 0.5))

    def release(self, lease: Lease, settlement: Settlement) -> None:
        with self._changed:
            self._budget.settle(lease, settlement, time.monotonic())
            self._changed.notify_all()

    def stats(self) -> dict:
        with self._changed:
            return self._budget.report()

    def ledger(self, settle_s: float = 0.0) -> dict[str, dict[str, int]]:
        with self._changed:
            return {stage: dict(counts) for stage, counts in self._budget.ledger.items()}

    def stop(self) -> None:
        """This process's threads obey `stopping` already; wake the calls waiting in line."""
        with self._changed:
            self._changed.notify_all()

    def close(self) -> None:
        pass
