"""Append-only JSON-lines files: what makes a long evaluation resumable. Each finished item is
one line, flushed at once; a rerun skips the keys already there. A line cut short by a crash
is ignored (its item runs again)."""

from __future__ import annotations

import json
import threading
from pathlib import Path


class RecordFile:
    def __init__(self, path: Path, key_fields: tuple[str, ...]):
        self.path = Path(path)
        self.key_fields = key_fields
        self._lock = threading.Lock()

    def key(self, record: dict) -> tuple:
        return tuple(record[f] for f in self.key_fields)

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        records = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        return records

    def done_keys(self) -> set[tuple]:
        return {self.key(r) for r in self.read()}

    def append(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a+b") as handle:
                if handle.tell():
                    handle.seek(-1, 2)
                    if handle.read(1) != b"\n":  # a line a crash cut short: end it
                        handle.write(b"\n")
                handle.write(line.encode("utf-8") + b"\n")
