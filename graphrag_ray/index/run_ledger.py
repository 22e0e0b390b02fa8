"""What every run of a build paid for, kept beside the index's versions so that a run that
never published (stopped, killed, failed) is still on the bill: the version a later run
publishes counts it (`llm_usage.earlier_runs`), and the bill matches the provider's log.

Each run writes `<output>/_runs/<run id>.json` (the budgets' ledger: calls, tokens per
stage) when it starts, every `FLUSH_S` seconds while it runs (a SIGKILL loses at most that),
and when it ends with its outcome. The run that publishes takes every earlier run's record
not yet counted, adds them to its manifest and marks them counted by its version.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from datetime import datetime, timezone

import fsspec

from graphrag_ray.llm.client import LLMServices, Usage
from graphrag_ray.storage.atomic import write_atomically

RUNS = "_runs"
FLUSH_S = 5.0


class RunLedger:
    """This run's record, kept up to date by a thread while `services` spend."""

    def __init__(self, output_url: str, services: LLMServices, command: str):
        self.fs, root = fsspec.core.url_to_fs(output_url)
        self.folder = f"{root.rstrip('/')}/{RUNS}"
        self.run = f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
        self.services = services
        self.record = {"run": self.run, "command": command, "status": "running",
                       "started_at": datetime.now(timezone.utc).isoformat(), "stages": {},
                       "host": socket.gethostname(), "pid": os.getpid()}
        self._stop = threading.Event()
        self._thread = None
        if services.limiter is not None or services.embedding_limiter is not None:
            self._write()
            self._thread = threading.Thread(target=self._run, name="run-ledger", daemon=True)
            self._thread.start()

    def _path(self, run: str | None = None) -> str:
        return f"{self.folder}/{run or self.run}.json"

    def _write(self, settle_s: float = 0.0) -> None:
        try:
            self.record["stages"] = self.services.ledger(settle_s=settle_s)
        except Exception:  # noqa: BLE001 - a budget gone (a stopped Ray): keep what was read
            pass
        self.record["written_at"] = time.time()
        write_atomically(self.fs, self._path(), json.dumps(self.record).encode("utf-8"))

    def _run(self) -> None:
        while not self._stop.wait(FLUSH_S):
            try:
                self._write()
            except Exception:  # noqa: BLE001 - the record must never fail the build
                return

    def close(self, status: str, version: str | None = None) -> None:
        """The run's outcome written (its calls settled first); the thread stopped."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self.record.update(status=status, ended_at=datetime.now(timezone.utc).isoformat())
        if version is not None:
            self.record["counted_by"] = version
        try:  # calls sent whose replies never came (a stop abandoned them): billed or not
            self.record["unsettled_calls"] = sum(
                limiter.stats().get("unsettled_calls", 0) for limiter in
                (self.services.limiter, self.services.embedding_limiter) if limiter is not None)
        except Exception:  # noqa: BLE001 - a budget gone: none known
            pass
        self._write(settle_s=1.0)

    def earlier(self) -> list[dict]:
        """The records of runs before this one that no published version counted yet."""
        try:
            paths = self.fs.ls(self.folder, detail=False)
        except FileNotFoundError:
            return []
        records = []
        for path in sorted(paths):
            if not path.endswith(".json") or path.endswith(f"/{self.run}.json"):
                continue
            record = json.loads(self.fs.cat_file(path))
            if not record.get("counted_by") and (record.get("status") != "running"
                                                 or _gone(record)):
                records.append(record)
        return records

    def count(self, records: list[dict], version: str) -> None:
        """`records` counted by `version`: no later version counts them again."""
        for record in records:
            record["counted_by"] = version
            write_atomically(self.fs, self._path(record["run"]),
                             json.dumps(record).encode("utf-8"))


# A record marked running that was not written for this long: its run was killed (a live
# run writes every FLUSH_S seconds).
STALE_S = 60.0


def _gone(record: dict) -> bool:
    """Whether the run of a record still marked running is dead (killed): its process, on
    this machine; elsewhere, a record not written for `STALE_S`."""
    if record.get("host") == socket.gethostname() and record.get("pid"):
        try:
            os.kill(int(record["pid"]), 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, another user's
            return False
        return int(record["pid"]) == os.getpid()  # (this process ran it, and ended it)
    return time.time() - float(record.get("written_at") or 0) > STALE_S


def unsettled_calls(records: list[dict]) -> int:
    return sum(int(record.get("unsettled_calls") or 0) for record in records)


def earlier_usage(records: list[dict]) -> dict[str, Usage]:
    """Per stage, what the `records`' runs paid for, summed."""
    stages: dict[str, Usage] = {}
    for record in records:
        for stage, counts in (record.get("stages") or {}).items():
            stages.setdefault(stage, Usage()).add(counts)
    return stages
