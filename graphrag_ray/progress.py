"""Progress for long stages: a live line on a terminal, periodic log lines elsewhere
(`ray job logs`, CI, files), each with count, rate and ETA."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Mapping, TextIO


class ProgressBar:
    """A stage's progress: a line rewritten in place on a terminal (at least every second),
    a log line every `log_every_s` otherwise, whether or not anything finished since (a
    ticker thread keeps the elapsed time and ETA moving while slow work runs)."""

    # Columns of a finished block this bar reads (`add_rows`); workers that report progress
    # as they finish send only these (`distributed.workers.map_table`).
    columns: tuple[str, ...] = ()
    TICK_S = 1.0

    def __init__(self, label: str, total: int, unit: str = "items", stream: TextIO | None = None,
                 log_every_s: float = 10.0):
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream or sys.stderr
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.log_every_s = log_every_s
        self.done = 0
        self.started = time.monotonic()
        # The first update: the ETA's rate is counted from it, as work that waits on another
        # stage (reports on summaries) finishes nothing for a while (an ETA of days).
        self.first_update: tuple[float, int] | None = None
        self.last_shown = self.started
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name=f"progress-{label}",
                                        daemon=True)
        self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.TICK_S):
            with self._lock:
                try:
                    self._show(time.monotonic())
                except (OSError, ValueError):  # the stream went away: nobody is reading
                    self._stop.set()

    def extra(self) -> str:
        """What a subclass adds to the line (calls, tokens)."""
        return ""

    def line(self) -> str:
        now = time.monotonic()
        elapsed = max(1e-9, now - self.started)
        rate = self.done / elapsed
        # An estimated total can fall short of the count: never a negative ETA.
        self.total = max(self.total, self.done)
        remaining = float("inf")
        if self.done >= self.total:
            remaining = 0.0
        elif self.first_update is not None and self.done > self.first_update[1] \
                and now > self.first_update[0]:
            recent = (self.done - self.first_update[1]) / (now - self.first_update[0])
            remaining = (self.total - self.done) / recent
        eta = "?" if remaining == float("inf") else f"{remaining:.0f}s"
        return (f"[{self.label}] {self.done}/{self.total} {self.unit}{self.extra()} "
                f"{rate:.1f}/s elapsed {elapsed:.0f}s ETA {eta}")

    def add_rows(self, block) -> None:
        """A block of finished rows (a table); subclasses learn from its columns."""
        self.update(block.num_rows)

    def update(self, count: int) -> None:
        with self._lock:
            self.done += count
            now = time.monotonic()
            if self.first_update is None and count:
                self.first_update = (now, self.done)
            self._show(now)

    def _show(self, now: float) -> None:
        if self._stop.is_set():
            return
        if self.interactive:
            if now - self.last_shown >= 0.1 or self.done >= self.total:
                self.stream.write("\r" + self.line().ljust(79))
                self.stream.flush()
                self.last_shown = now
        elif now - self.last_shown >= self.log_every_s and self.done < self.total:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self.last_shown = now

    def stop(self) -> None:
        """Stop the ticker without a last line (a stage that failed)."""
        self._stop.set()

    def close(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self._stop.set()
            self.stream.write(("\r" + self.line().ljust(79) if self.interactive
                               else self.line()) + "\n")
            self.stream.flush()


def estimated_chunks(file_bytes: int, size: int, overlap: int) -> int:
    """Token windows of a file of `file_bytes`, at ~4 bytes a token (at least one)."""
    tokens = max(1, file_bytes // 4)
    return 1 if tokens <= size else 1 + -(-(tokens - size) // max(1, size - overlap))


class ChunkProgress(ProgressBar):
    """Chunks extracted out of a total estimated per file from its size (shown "~N" until
    every file has said how many it made), corrected to the file's real chunk count as soon
    as one of its chunks is done (rows carry `seq` and `file_chunks`; `file_of(seq)` is the
    chunk's file, a key of `estimates`), with the LLM calls and tokens they took.

    `calls_source()`: the calls the provider answered so far (the rate budget's ledger of
    the stage: calls, retries and failures, tokens), read at most every `POLL_S`: an LLM
    stage's chunks finish late (extraction, then gleaning, many at once), so its rate and
    ETA come from the calls as they settle, at `calls_per_chunk` (the chunks' own once a few
    are done)."""

    columns = ("seq", "file_chunks", "calls", "prompt_tokens", "completion_tokens")
    POLL_S = 2.0
    SURE_AFTER = 5  # chunks done before their own calls per chunk replace the prior

    def __init__(self, label: str, estimates: Mapping[int, int], file_of: Callable[[int], int],
                 unit: str = "chunks", calls_source: Callable[[], dict] | None = None,
                 calls_per_chunk: float = 1.0, **kwargs):
        self.estimates = estimates
        self.file_of = file_of
        self.counted: set[int] = set()
        self.calls = self.tokens = 0
        self.calls_source, self.calls_per_chunk = calls_source, calls_per_chunk
        self._provider = (0, 0)  # requests, tokens
        self._polled = None
        super().__init__(label, sum(estimates.values()), unit, **kwargs)

    def _poll(self, now: float) -> None:
        if self.calls_source is None or (self._polled and now - self._polled < self.POLL_S):
            return
        self._polled = now
        try:
            counts = self.calls_source() or {}
        except Exception:  # noqa: BLE001 - progress must never fail the stage
            return
        requests = sum(counts.get(k, 0) for k in ("calls", "retries", "failed_calls"))
        self._provider = (requests, counts.get("prompt_tokens", 0)
                          + counts.get("completion_tokens", 0))

    def extra(self) -> str:
        calls, tokens = self._provider if self.calls_source else (self.calls, self.tokens)
        return f", {calls:,} calls, {tokens:,} tokens" if calls else ""

    def line(self) -> str:
        now = time.monotonic()
        self._poll(now)
        sure = len(self.counted) >= len([n for n in self.estimates.values() if n])
        total = self.total if sure else f"~{self.total}"
        requests = self._provider[0]
        if self.calls_source is None or not requests:
            return super().line().replace(f"/{self.total} ", f"/{total} ", 1)
        elapsed = max(1e-9, now - self.started)
        rate = requests / elapsed  # (the stage's own start: the calls begin with it)
        per_chunk = self.calls / self.done if self.done >= self.SURE_AFTER \
            else self.calls_per_chunk
        left = max(0.0, max(self.total, self.done) * per_chunk - requests)
        eta = f"{left / rate:.0f}s" if self.done < self.total else "0s"
        return (f"[{self.label}] {self.done}/{total} {self.unit}{self.extra()} "
                f"{rate:.1f} calls/s elapsed {elapsed:.0f}s ETA {eta}")

    def add_rows(self, block) -> None:
        with self._lock:
            if "file_chunks" in block.column_names:
                for seq, chunks in zip(block.column("seq").to_pylist(),
                                       block.column("file_chunks").to_pylist()):
                    file = self.file_of(seq)
                    if file not in self.counted:
                        self.counted.add(file)
                        self.total += chunks - self.estimates.get(file, 0)
            if "calls" in block.column_names:
                self.calls += sum(block.column("calls").to_pylist())
                self.tokens += sum(block.column("prompt_tokens").to_pylist()) + sum(
                    block.column("completion_tokens").to_pylist())
            self.update(block.num_rows)
