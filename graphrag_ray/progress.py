"""Progress for long stages: a live line on a terminal, periodic log lines elsewhere
(`ray job logs`, CI, files), each with count, rate and ETA."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
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
        self.last_shown = 0.0

    def line(self) -> str:
        elapsed = max(1e-9, time.monotonic() - self.started)
        rate = self.done / elapsed
        remaining = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta = "?" if remaining == float("inf") else f"{remaining:.0f}s"
        return (f"[{self.label}] {self.done}/{self.total} {self.unit} "
                f"{rate:.1f}/s elapsed {elapsed:.0f}s ETA {eta}")

    def update(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if self.interactive:
            if now - self.last_shown >= 0.1 or self.done >= self.total:
                self.stream.write("\r" + self.line().ljust(79))
                self.stream.flush()
                self.last_shown = now
        elif now - self.last_shown >= self.log_every_s and self.done < self.total:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self.last_shown = now

    def close(self) -> None:
        self.stream.write(("\r" + self.line().ljust(79) if self.interactive else self.line()) + "\n")
        self.stream.flush()
