"""The version of an index a replica answers from, kept warm and swapped without downtime.

A request takes a lease on the current version and answers from it to the end. A poller
looks for a newly published version every `poll_s`; it opens and warms the new one beside
the old (reads happen before the switch, so no request waits on them), then switches with
one assignment. The old version is closed once its last lease is returned: a request never
sees two versions, and none fails because a newer one arrived.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

from graphrag_ray.errors import GraphRagError

log = logging.getLogger("graphrag_ray.serve")


class _Held:
    """One opened version and the requests answering from it."""

    def __init__(self, index):
        self.index = index
        self.leases = 0
        self.retired = False


class LiveIndex:
    """`open_version(version_or_None) -> GraphIndex` opens (and warms) a version;
    `published() -> str` names the published one. `pinned`: answer from that version only."""

    def __init__(self, open_version: Callable[[str | None], object],
                 published: Callable[[], str], poll_s: float, pinned: str | None = None):
        self._open_version = open_version
        self._published = published
        self.poll_s = poll_s
        self.pinned = pinned
        self._current: _Held | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self.switches = 0
        self.last_error: str | None = None

    def start(self) -> LiveIndex:
        """Open the first version (blocking: a replica is not ready before it), then poll."""
        self._current = _Held(self._load(self.pinned or self._published()))
        if self.pinned is None:
            self._poller = threading.Thread(target=self._poll, name="graphrag-serve-poll",
                                            daemon=True)
            self._poller.start()
        return self

    def _load(self, version: str):
        started = time.perf_counter()
        index = self._open_version(version)
        log.info("version %s loaded in %.1f s", version, time.perf_counter() - started)
        return index

    @property
    def version(self) -> str | None:
        held = self._current
        return held.index.manifest.version if held else None

    def acquire(self) -> _Held:
        """The current version, held until `release`: one request's whole life."""
        with self._lock:
            held = self._current
            if held is None:
                raise GraphRagError("the index is not loaded yet")
            held.leases += 1
            return held

    def release(self, held: _Held) -> None:
        with self._lock:
            held.leases -= 1
            closing = held.retired and held.leases == 0
        if closing:
            held.index.close()

    @contextlib.contextmanager
    def lease(self) -> Iterator[object]:
        held = self.acquire()
        try:
            yield held.index
        finally:
            self.release(held)

    def check(self) -> bool:
        """Load and switch to a newly published version; True if it switched."""
        version = self._published()
        if version == self.version:
            return False
        fresh = _Held(self._load(version))
        with self._lock:
            old, self._current = self._current, fresh
            old.retired = True
            release = old.leases == 0
            self.switches += 1
        log.info("switched from version %s to %s", old.index.manifest.version, version)
        if release:
            old.index.close()
        return True

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.check()
                self.last_error = None
            except Exception as exc:  # a failed look keeps the version being served
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("could not load the newly published version (still answering "
                            "from %s): %s", self.version, self.last_error)

    def close(self) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=self.poll_s + 5)
        with self._lock:
            held, self._current = self._current, None
        if held is not None:
            held.index.close()
