"""Stopping paid work when the user (Ctrl-C) or a scheduler (SIGTERM: `ray job stop`,
Kubernetes, systemd) asks: once asked, no new request leaves this process for a provider.

The request is process-wide, not passed around, because what must obey it runs in threads
that no caller can reach in time: an extraction's gleaning loop, a retry's back-off, a call
waiting in the rate budget's line. Each of them asks `check()` before it pays for anything,
and waits with `wait()` so that a stop wakes it. What raises is `StopRequested`, a
BaseException: no `except Exception` that records a failed chunk or retries a call may
swallow it, so nothing is recorded as done or as failed that was only stopped.
"""

from __future__ import annotations

import threading

_requested = threading.Event()
_reason: list[str] = []


class StopRequested(BaseException):
    """Raised where work would pay for a request after a stop was asked for."""


def request_stop(reason: str = "stopped") -> None:
    """Ask every thread of this process to send no further request (safe in a signal
    handler: it only sets an event)."""
    if not _reason:
        _reason.append(reason)
    _requested.set()


def stop_requested() -> bool:
    return _requested.is_set()


def stop_reason() -> str:
    return _reason[0] if _reason else ""


def check() -> None:
    """Raise `StopRequested` when a stop was asked for: call before paying for a request."""
    if _requested.is_set():
        raise StopRequested(stop_reason())


def wait(seconds: float) -> None:
    """Sleep up to `seconds`, woken at once by a stop (which then raises)."""
    if _requested.wait(max(0.0, seconds)):
        raise StopRequested(stop_reason())


def clear() -> None:
    """A new job in a process that stopped one (the Python API, a test): it may pay again."""
    _reason.clear()
    _requested.clear()
