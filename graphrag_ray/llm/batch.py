"""The provider's Batch API (`llm.batch`): half the price, a separate rate-limit pool, replies
within a completion window.

A stage runs in rounds. In a round's pass, a request the cache cannot answer is not sent: it
is *deferred* (`BatchQueue.defer`, the request's body under its cache key) and the work that
needed it stops there (`Deferred` is an LLMError, so a chunk stops like a failed one). The
driver then sends every deferred request in as few batches as the limits allow, waits,
and writes the replies into the response cache; the next pass finds them there, and defers
only what they led to (a gleaning round after an extraction). The stage is done when a pass
defers nothing; its real run then answers everything from the cache.

Everything is kept under the cache URL (`<cache>/batches/`): the deferred requests, each
batch's record (written before the batch is created, completed with its id right after), and
the requests that failed. A build that is killed, or a job stopped and resubmitted, finds
its batches there and re-attaches to them: no request is submitted twice. Lines that fail or
expire go again in the next round, `llm.batch_max_attempts` times in all; then the request
fails like an online one (a failed chunk).

Embeddings (`embeddings.batch`) go the same way, under `<cache>/batches/embeddings/`, one
line per text (the text's own cache key as the line's id), to the `/v1/embeddings` endpoint.
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from typing import Callable

import fsspec

from graphrag_ray import stopping
from graphrag_ray.config import LLMConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import LLMCallError, _openai_client
from graphrag_ray.llm.embeddings import vector_entry
from graphrag_ray.llm.replies import visible_reply
from graphrag_ray.storage.atomic import write_atomically

TERMINAL = ("completed", "failed", "expired", "cancelled")
# OpenAI's limits per batch: 50,000 requests and a 200 MB input file.
MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 2 ** 20


# What a deferred request's error says (in a summary's error, a report's generation): the
# schedule holds back what needs it.
DEFERRED = "waiting for its batch"


class Deferred(LLMError):
    """A request that waits for its batch: the work that asked stops, and runs again once
    the batch has answered."""


class BatchQueue:
    """Deferred requests, batch records and failures, under `<cache>/batches/` (`folder`:
    a queue of its own below it, for another endpoint's requests)."""

    def __init__(self, cache_url: str, folder: str = ""):
        self.cache_url, self.folder = cache_url, folder
        self.url = f"{cache_url.rstrip('/')}/batches" + (f"/{folder}" if folder else "")
        self.fs, root = fsspec.core.url_to_fs(self.url)
        self.root = root.rstrip("/")

    def __getstate__(self) -> dict:
        return {"cache_url": self.cache_url, "folder": self.folder}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["cache_url"], state["folder"])

    def defer(self, key: str, body: dict) -> None:
        path = f"{self.root}/pending/{key}.json"
        write_atomically(self.fs, path, json.dumps({"key": key, "body": body}).encode())

    def pending(self) -> dict[str, dict]:
        found = {}
        for path in self._list("pending"):
            try:
                with self.fs.open(path, "rb") as handle:
                    entry = json.loads(handle.read())
            except (FileNotFoundError, ValueError):
                continue  # a torn write: its worker defers it again next pass
            found[entry["key"]] = entry["body"]
        return found

    def done_with(self, keys: list[str]) -> None:
        for key in keys:
            try:
                self.fs.rm(f"{self.root}/pending/{key}.json")
            except FileNotFoundError:
                pass

    def records(self) -> list[dict]:
        records = []
        for path in sorted(self._list("records")):
            with self.fs.open(path, "rb") as handle:
                records.append(json.loads(handle.read()))
        return records

    def write_record(self, record: dict) -> None:
        write_atomically(self.fs, f"{self.root}/records/{record['number']:06d}.json",
                         json.dumps(record).encode())

    def failures(self) -> dict[str, dict]:
        """key -> {"attempts", "reason"} of requests whose lines failed or expired."""
        try:
            with self.fs.open(f"{self.root}/failures.json", "rb") as handle:
                return json.loads(handle.read())
        except FileNotFoundError:
            return {}

    def given_up(self, max_attempts: int) -> dict[str, str]:
        """key -> reason of the requests whose lines failed `max_attempts` times."""
        return {key: f"{f['reason']} ({f['attempts']} attempts)"
                for key, f in self.failures().items() if f["attempts"] >= max_attempts}

    def write_failures(self, failures: dict[str, dict]) -> None:
        write_atomically(self.fs, f"{self.root}/failures.json", json.dumps(failures).encode())

    def _list(self, folder: str) -> list[str]:
        try:
            return [p for p in self.fs.ls(f"{self.root}/{folder}", detail=False)
                    if p.endswith(".json")]
        except FileNotFoundError:
            return []


@dataclass
class BatchMode:
    """What a client in a batch stage needs (it travels to Ray actors): where to defer, the
    requests that have failed for good (their reasons), and whether this pass defers (the
    stage's real run answers from the cache, and a request never asked by batch goes
    online)."""
    queue: BatchQueue
    stages: frozenset[str]
    failed: dict[str, str] = field(default_factory=dict)
    deferring: bool = True

    def miss(self, key: str, body: Callable[[], dict]) -> None:
        """Called on a cache miss in a batch stage: raises unless the request goes online."""
        self.misses({key: body})

    def misses(self, bodies: dict[str, Callable[[], dict]]) -> None:
        """`miss` for several requests one call needs (an embeddings request's texts): all
        but those failed for good are deferred before the call stops."""
        failed = [key for key in bodies if key in self.failed]
        deferred = [key for key in bodies if key not in self.failed] if self.deferring else []
        for key in deferred:
            self.queue.defer(key, bodies[key]())
        if deferred:
            raise Deferred(DEFERRED)
        if failed:
            raise LLMCallError(
                f"the Batch API did not answer this request: {self.failed[failed[0]]}")


@dataclass
class RoundReport:
    requests: int = 0
    batches: int = 0
    reattached: int = 0
    answered: int = 0
    failed_lines: int = 0
    failed_for_good: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0


class BatchRunner:
    """The driver's side: submit what a pass deferred, wait, put the replies in the cache."""

    def __init__(self, config: LLMConfig, cache: ResponseCache, queue: BatchQueue,
                 progress: Callable[[str], None], embeddings: bool = False):
        """`embeddings`: the requests are embeddings requests, one text each."""
        self.config = config
        self.embeddings = embeddings
        self.cache = cache
        self.queue = queue
        self.progress = progress
        self.client = _openai_client(config, config.request_timeout, max_retries=3)
        # The enqueued-token limit learned when the provider refused a batch for it (none
        # configured): half the refused batch's tokens, each time.
        self.learned_queue_tokens: int | None = None
        # Azure OpenAI names the endpoint without the version prefix.
        self.endpoint = ("" if config.api_version else "/v1") + (
            "/embeddings" if embeddings else "/chat/completions")

    def round(self) -> RoundReport:
        started = time.monotonic()
        report = RoundReport()
        pending = self.queue.pending()
        failures = self.queue.failures()
        answered = [key for key in pending if self.cache.get(key) is not None]
        given_up = [k for k in pending
                    if failures.get(k, {}).get("attempts", 0) >= self.config.batch_max_attempts]
        self.queue.done_with(answered + given_up)
        done = set(answered) | set(given_up)
        pending = {k: v for k, v in pending.items() if k not in done}
        records = self.queue.records()
        waiting = {key for r in records if r.get("status") not in TERMINAL for key in r["keys"]}
        fresh = {k: v for k, v in pending.items() if k not in waiting}
        report.requests = len(pending)
        report.reattached = sum(1 for r in records if r.get("status") not in TERMINAL)
        self.number = max((r["number"] for r in records), default=0)
        open_records = [r for r in records if r.get("status") not in TERMINAL]
        if report.reattached:
            self.progress(f"batch: re-attached to {report.reattached} batches submitted before")
        self._wait(open_records, self._groups(fresh), failures, report)
        report.wall_s = round(time.monotonic() - started, 3)
        return report

    def _queue_limit(self) -> int | None:
        return self.config.batch_queue_tokens or self.learned_queue_tokens

    def _submit_what_fits(self, records: list[dict], groups: list, report: RoundReport) -> None:
        """Batches from `groups` while the tokens enqueued stay within the limit (one at
        least when none is in flight)."""
        limit = self._queue_limit()
        enqueued = sum(r.get("tokens", 0) for r in records)
        while groups:
            tokens = sum(t for _, _, t in groups[0])
            if limit and records and enqueued + tokens > limit:
                return
            self.number += 1
            records.append(self._submit(self.number, groups.pop(0)))
            report.batches += 1
            enqueued += tokens

    def _groups(self, requests: dict[str, dict]) -> list[list[tuple[str, bytes, int]]]:
        """(key, line, tokens) in batches within the request, byte and enqueued-token
        limits."""
        limit_tokens = self._queue_limit()
        groups, current, size, tokens = [], [], 0, 0
        for key in sorted(requests):
            line = json.dumps({"custom_id": key, "method": "POST", "url": self.endpoint,
                               "body": requests[key]}).encode() + b"\n"
            estimate = _characters(requests[key]) // 4
            most = min(MAX_REQUESTS, self.config.batch_max_requests)
            full = current and (len(current) >= most
                                or size + len(line) > MAX_BYTES
                                or (limit_tokens and tokens + estimate > limit_tokens))
            if full:
                groups.append(current)
                current, size, tokens = [], 0, 0
            current.append((key, line, estimate))
            size += len(line)
            tokens += estimate
        if current:
            groups.append(current)
        return groups

    def _submit(self, number: int, group: list[tuple[str, bytes, int]]) -> dict:
        """Upload and create one batch; its record is written before the batch exists (with
        its input file) and again with its id, so a restart finds it either way."""
        keys = [key for key, _, _ in group]
        data = b"".join(line for _, line, _ in group)
        upload = self.client.files.create(
            file=(f"graphrag-ray-{number:06d}.jsonl", io.BytesIO(data)), purpose="batch")
        record = {"number": number, "input_file_id": upload.id, "keys": keys, "id": None,
                  "status": "creating", "submitted_at": time.time(),
                  "tokens": sum(t for _, _, t in group)}
        self.queue.write_record(record)
        batch = self.client.batches.create(
            input_file_id=upload.id, endpoint=self.endpoint,
            completion_window=self.config.batch_completion_window,
            metadata={"graphrag_ray": f"batch {number}"})
        record.update(id=batch.id, status=batch.status)
        self.queue.write_record(record)
        return record

    def _attach(self, record: dict) -> None:
        """A record written before its batch was created: find the batch by its input file
        (the listing), or create it now."""
        for batch in self.client.batches.list(limit=100):
            if batch.input_file_id == record["input_file_id"]:
                record.update(id=batch.id, status=batch.status)
                break
        else:
            batch = self.client.batches.create(
                input_file_id=record["input_file_id"], endpoint=self.endpoint,
                completion_window=self.config.batch_completion_window)
            record.update(id=batch.id, status=batch.status)
        self.queue.write_record(record)

    def _wait(self, records: list[dict], groups: list, failures: dict[str, dict],
              report: RoundReport) -> None:
        started = time.monotonic()
        self._submit_what_fits(records, groups, report)
        while records:
            for record in list(records):
                if record["id"] is None:
                    self._attach(record)
                batch = self.client.batches.retrieve(record["id"])
                record["status"] = batch.status
                if batch.status not in TERMINAL:
                    continue
                self._collect(batch, record, failures, report)
                self.queue.write_record(record)
                records.remove(record)
                self._submit_what_fits(records, groups, report)
            counts = {}
            for record in records:
                counts[record["status"]] = counts.get(record["status"], 0) + 1
            if records:
                waiting = sum(len(r["keys"]) for r in records)
                later = f", {len(groups)} batches to submit" if groups else ""
                self.progress(
                    f"batch: {', '.join(f'{n} {s}' for s, n in counts.items())} "
                    f"({waiting} requests waiting{later}); {report.answered} replies so far, "
                    f"{time.monotonic() - started:.0f} s into the round")
                stopping.wait(self.config.batch_poll_s)
        self.queue.write_failures(failures)
        report.failed_for_good = sum(1 for f in failures.values()
                                     if f["attempts"] >= self.config.batch_max_attempts)

    def _collect(self, batch, record: dict, failures: dict, report: RoundReport) -> None:
        """A finished batch's replies into the cache; its failed or missing lines counted
        (a line that fails `batch_max_attempts` times fails its request for good)."""
        keys = set(record["keys"])
        answered = set()
        if batch.output_file_id:
            for line in self.client.files.content(batch.output_file_id).text.splitlines():
                if not line.strip():
                    continue
                entry = json.loads(line)
                key = entry.get("custom_id")
                response = entry.get("response") or {}
                body = response.get("body") or {}
                cached = self._cache_entry(body) if response.get("status_code") == 200 else None
                if key in keys and cached is not None:
                    usage = body.get("usage") or {}
                    self.cache.put(key, {**cached, "model": self.config.model, "batch": True,
                                         "usage": {"prompt_tokens": usage.get("prompt_tokens", 0),
                                                   "completion_tokens": usage.get(
                                                       "completion_tokens", 0)}})
                    answered.add(key)
                    report.prompt_tokens += usage.get("prompt_tokens", 0) or 0
                    report.completion_tokens += usage.get("completion_tokens", 0) or 0
        reasons = {}
        if batch.error_file_id:
            for line in self.client.files.content(batch.error_file_id).text.splitlines():
                if line.strip():
                    entry = json.loads(line)
                    error = entry.get("error") or ((entry.get("response") or {}).get("body")
                                                   or {}).get("error") or {}
                    reasons[entry.get("custom_id")] = str(error.get("message") or error)[:300]
        if batch.status == "failed":
            errors = getattr(batch, "errors", None)
            data = getattr(errors, "data", None) or []
            message = "; ".join(str(getattr(e, "message", e)) for e in data)[:300]
            if any(getattr(e, "code", "") == "token_limit_exceeded" for e in data):
                self.learned_queue_tokens = max(1, record.get("tokens", 2) // 2)
                self.progress(f"batch {batch.id}: refused for the provider's enqueued-token "
                              "limit; its requests go again next round, within "
                              f"{self.learned_queue_tokens:,} enqueued tokens "
                              "(llm.batch_queue_tokens sets the limit)")
                return  # not the requests' fault: no attempt counted; they go again
            reasons.update({key: f"batch {batch.status}: {message}" for key in keys})
        report.answered += len(answered)
        missing = keys - answered
        for key in missing:
            entry = failures.setdefault(key, {"attempts": 0, "reason": ""})
            entry["attempts"] += 1
            entry["reason"] = reasons.get(key) or f"not answered (batch {batch.status})"
        report.failed_lines += len(missing)
        given_up = [key for key in missing
                    if failures[key]["attempts"] >= self.config.batch_max_attempts]
        self.queue.done_with(sorted(answered) + given_up)

    def _cache_entry(self, body: dict) -> dict | None:
        """What the cache keeps of a line's reply, as the online client would keep it; None
        for a reply without one."""
        if self.embeddings:
            data = body.get("data") or []
            return vector_entry(data[0]["embedding"]) if len(data) == 1 else None
        choices = body.get("choices") or []
        if not choices:
            return None
        return {"content": visible_reply(choices[0]["message"].get("content") or "")}


def _characters(body: dict) -> int:
    """A request's prompt length in characters (a chat request's messages, an embeddings
    request's input), for the enqueued-token estimate."""
    if "messages" in body:
        return sum(len(m.get("content") or "") for m in body["messages"])
    inputs = body.get("input") or ""
    return sum(len(text) for text in ([inputs] if isinstance(inputs, str) else inputs))
