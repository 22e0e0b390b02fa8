"""Memory of this process: which allocator Arrow uses, what the manifest records per stage,
and the peak inside a block (Leiden runs in C, so RSS, not tracemalloc, is what tells its
footprint)."""

from __future__ import annotations

import gc
import os
import resource
import threading
from contextlib import contextmanager
from typing import Iterator


def use_system_allocator_for_arrow() -> None:
    """Arrow allocates with the C library's malloc in this process, unless the user chose an
    allocator (`ARROW_DEFAULT_MEMORY_POOL`). Arrow's default (mimalloc) keeps the pages a
    table freed for its next tables, and held more after the same questions.
    Only Arrow's own buffers are concerned; each buffer is freed by the allocator that made
    it, so switching while tables exist is safe."""
    import pyarrow as pa

    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        pa.set_memory_pool(pa.system_memory_pool())


# A build's driver makes millions of short-lived lists, tuples and dicts (rows turned into
# Python, per-community contexts); at Python's default (a young collection every 700
# allocations, a middle one every 10 of those) its collector runs thousands of times in a
# large update, many of them over every object; these thresholds collect a few dozen times.
BUILD_GC_THRESHOLDS = (50_000, 20, 20)


@contextmanager
def fewer_collections(thresholds: tuple[int, int, int] = BUILD_GC_THRESHOLDS
                      ) -> Iterator[None]:
    """Python's cyclic garbage collector runs less often inside (`BUILD_GC_THRESHOLDS`), and
    as before after: the build's objects are freed by reference counting as they go, few of
    them in cycles, so a collection mostly walks objects that are alive. Set back on the way
    out, so a program that builds an index (the Python API) keeps its own setting."""
    before = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def rss_mb(pid: int | str = "self") -> int | None:
    """Current resident memory of a process (Linux /proc), MB; None when unknown."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * resource.getpagesize() // 2 ** 20
    except (OSError, ValueError, IndexError):
        return None


def _status_mb(field: str) -> int | None:
    """A field of this process's /proc/self/status (Linux, in kB), MB; None when unknown."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss_mb() -> int:
    """This process's peak resident memory, MB: Linux's VmHWM, of the running program only.
    Not `getrusage`'s ru_maxrss, which Linux carries across execve from the process that was
    forked: a CLI started by a 1 GB parent (pytest late in a session, a notebook) reported
    the parent's peak as its own."""
    peak = _status_mb("VmHWM")
    return peak if peak is not None else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def driver_rss_mb() -> tuple[int, int]:
    """(current, peak) resident memory of this process, MB."""
    peak = peak_rss_mb()
    current = rss_mb()
    return (peak if current is None else current), peak


def shared_memory_mb() -> int | None:
    """The shared-memory pages in this process's RSS (Linux RssShmem), MB: on Ray, pages of
    the node's object store that the process wrote or read, counted in its RSS although the
    object store owns them (Ray's memory guide subtracts them from a worker's heap)."""
    return _status_mb("RssShmem")


class PeakRss:
    """`with PeakRss() as watch: ...` then `watch.before_mb`, `watch.peak_mb`: sampled every
    `interval_s` in a thread."""

    def __init__(self, interval_s: float = 0.05):
        self.interval_s = interval_s
        self.before_mb = self.peak_mb = rss_mb() or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak_mb = max(self.peak_mb, rss_mb() or 0)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, rss_mb() or 0)
