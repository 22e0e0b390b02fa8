"""The Batch API as the test server plays it, in OpenAI's shapes (Azure's paths too):

    POST /v1/files (multipart, purpose=batch)      GET /v1/files/{id}/content
    POST /v1/batches                                GET /v1/batches/{id}, GET /v1/batches
    POST /v1/batches/{id}/cancel

A batch validates, runs and finalizes by the clock (`batch_delay_s` from its creation to its
completion), answering each line as the chat or embeddings endpoint would (no latency, no
429s: the batch pool is separate); a line whose `url` is not the batch's endpoint fails
validation, as OpenAI's does. Switches make it fail as providers do: a share of lines answered with an
error (`batch_failed_lines`), batches that expire with a share of lines unanswered
(`batch_expired_lines`), the first batches failing validation (`batch_fail_validation`), and
an enqueued-token limit per model (`batch_queue_tokens`) with the provider's error body.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from collections import Counter
from typing import Callable


TERMINAL = ("completed", "failed", "expired", "cancelled")
_VALIDATION_S = 0.05


class BatchAPI:
    def __init__(self, switches, answer: Callable[[str, dict], dict],
                 fraction: Callable[..., float], tokens: Callable[[dict], int]):
        """`answer(endpoint, body)`: the reply a request body gets (a chat completion, or
        vectors for `/v1/embeddings`); `fraction(*parts)`: the server's seeded hash, which
        decides which lines fail; `tokens(body)`: a request's prompt tokens as the server
        counts them (for the enqueued-token limit)."""
        self.switches = switches
        self._answer = answer
        self._fraction = fraction
        self._tokens = tokens
        self._lock = threading.Lock()
        self._files: dict[str, dict] = {}
        self._batches: dict[str, dict] = {}
        self._numbers = itertools.count(1)
        self.stats = Counter()
        self.lines_seen: Counter = Counter()  # custom_id -> times submitted in any batch
        self.lines_answered: Counter = Counter()  # custom_id -> times answered

    # -- files ------------------------------------------------------------------------------

    def upload(self, content_type: str, raw: bytes) -> tuple[int, dict]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
        fields, data, name = {}, None, "upload.jsonl"
        for part in message.iter_parts():
            field = part.get_param("name", header="content-disposition")
            if part.get_filename():
                data, name = part.get_payload(decode=True), part.get_filename()
            elif field:
                fields[field] = part.get_payload(decode=True).decode()
        if data is None or fields.get("purpose") != "batch":
            return 400, {"error": {"message": "a file and purpose=batch are required",
                                   "type": "invalid_request_error"}}
        with self._lock:
            file_id = f"file-{next(self._numbers):06d}"
            self._files[file_id] = {"bytes": data, "filename": name, "purpose": "batch"}
            self.stats["files"] += 1
        return 200, self._file_object(file_id)

    def _file_object(self, file_id: str) -> dict:
        f = self._files[file_id]
        return {"id": file_id, "object": "file", "bytes": len(f["bytes"]), "created_at":
                int(time.time()), "filename": f["filename"], "purpose": f["purpose"],
                "status": "processed"}

    def content(self, file_id: str) -> bytes | None:
        with self._lock:
            f = self._files.get(file_id)
        return None if f is None else f["bytes"]

    # -- batches ----------------------------------------------------------------------------

    def create(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            source = self._files.get(body.get("input_file_id", ""))
        if source is None:
            return 400, {"error": {"message": f"No such file: {body.get('input_file_id')}",
                                   "type": "invalid_request_error"}}
        lines = [json.loads(line) for line in source["bytes"].decode().splitlines()
                 if line.strip()]
        now = time.time()
        with self._lock:
            number = next(self._numbers)
            batch_id = f"batch_{number:06d}"
            self.stats["batches"] += 1
            self.stats["lines"] += len(lines)
            for line in lines:
                self.lines_seen[line.get("custom_id")] += 1
            batch = {
                "id": batch_id, "object": "batch", "endpoint": body.get("endpoint"),
                "input_file_id": body["input_file_id"], "completion_window":
                body.get("completion_window", "24h"), "status": "validating", "errors": None,
                "output_file_id": None, "error_file_id": None, "created_at": int(now),
                "in_progress_at": None, "finalizing_at": None, "completed_at": None,
                "failed_at": None, "expired_at": None, "cancelled_at": None,
                "expires_at": int(now) + 86400, "metadata": body.get("metadata"),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "_lines": lines, "_created": now,
                "_tokens": sum(self._tokens(line.get("body") or {}) for line in lines),
                "_model": (lines[0].get("body") or {}).get("model") if lines else None}
            self._batches[batch_id] = batch
        return 200, self._public(batch)

    def retrieve(self, batch_id: str) -> tuple[int, dict]:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": f"No batch {batch_id}",
                                       "type": "invalid_request_error"}}
            self._advance(batch)
            return 200, self._public(batch)

    def cancel(self, batch_id: str) -> tuple[int, dict]:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": f"No batch {batch_id}"}}
            self._advance(batch)
            if batch["status"] not in TERMINAL:
                batch["status"] = "cancelled"
                batch["cancelled_at"] = int(time.time())
            return 200, self._public(batch)

    def listing(self, limit: int = 20, after: str | None = None) -> dict:
        with self._lock:
            ids = sorted(self._batches, reverse=True)
            if after in ids:
                ids = ids[ids.index(after) + 1:]
            page = ids[:limit]
            for batch_id in page:
                self._advance(self._batches[batch_id])
            return {"object": "list", "data": [self._public(self._batches[i]) for i in page],
                    "first_id": page[0] if page else None, "last_id": page[-1] if page else None,
                    "has_more": len(ids) > len(page)}

    # -- the clock --------------------------------------------------------------------------

    def _advance(self, batch: dict) -> None:
        """Move `batch` on by the time passed (caller holds the lock)."""
        s = self.switches
        if batch["status"] in TERMINAL:
            return
        elapsed = time.time() - batch["_created"]
        if batch["status"] == "validating":
            if elapsed < _VALIDATION_S:
                return
            if self.stats["failed_validation"] < s.batch_fail_validation:
                self.stats["failed_validation"] += 1
                return self._fail(batch, "invalid_request", "The batch input file is invalid "
                                  "(test server: batch_fail_validation)")
            wrong = [line for line in batch["_lines"] if line.get("url") != batch["endpoint"]]
            if wrong:
                return self._fail(batch, "invalid_url", (
                    f"The URL provided for this request does not match the batch endpoint "
                    f"{batch['endpoint']}: {wrong[0].get('url')}"))
            if s.batch_queue_tokens and self._enqueued(batch) + batch["_tokens"] > \
                    s.batch_queue_tokens:
                self.stats["queue_limited"] += 1
                return self._fail(batch, "token_limit_exceeded", (
                    f"Enqueued token limit reached for {batch['_model']} in organization "
                    f"org-test. Limit: {s.batch_queue_tokens:,} enqueued tokens. Please try "
                    "again once some in_progress batches have been completed."))
            batch["status"] = "in_progress"
            batch["in_progress_at"] = int(time.time())
        if batch["status"] == "in_progress" and elapsed >= s.batch_delay_s:
            self._finish(batch)

    def _enqueued(self, batch: dict) -> int:
        return sum(b["_tokens"] for b in self._batches.values()
                   if b is not batch and b["status"] == "in_progress"
                   and b["_model"] == batch["_model"])

    def _fail(self, batch: dict, code: str, message: str) -> None:
        batch["status"] = "failed"
        batch["failed_at"] = int(time.time())
        batch["errors"] = {"object": "list", "data": [
            {"code": code, "message": message, "param": None, "line": None}]}

    def _finish(self, batch: dict) -> None:
        s = self.switches
        output, errors = [], []
        expired = 0
        for line in batch["_lines"]:
            custom_id = line.get("custom_id")
            roll = self._fraction("batch-line", s.seed, custom_id,
                                  self.lines_seen[custom_id])
            if roll < s.batch_expired_lines:
                expired += 1
                errors.append({"id": f"batch_req_{custom_id}", "custom_id": custom_id,
                               "response": None, "error": {
                                   "code": "batch_expired",
                                   "message": "This line could not be executed before the "
                                              "completion window expired."}})
                continue
            if roll < s.batch_expired_lines + s.batch_failed_lines:
                errors.append({"id": f"batch_req_{custom_id}", "custom_id": custom_id,
                               "response": {"status_code": 500, "request_id": custom_id,
                                            "body": {"error": {"message": "The server had an "
                                                               "error processing the line"}}},
                               "error": None})
                continue
            body = self._answer(batch["endpoint"], line.get("body") or {})
            self.lines_answered[custom_id] += 1
            output.append({"id": f"batch_req_{custom_id}", "custom_id": custom_id,
                           "response": {"status_code": 200, "request_id": custom_id,
                                        "body": body}, "error": None})
        now = int(time.time())
        batch["status"] = "expired" if expired else "completed"
        batch["finalizing_at"] = now
        batch["expired_at" if expired else "completed_at"] = now
        batch["request_counts"] = {"total": len(batch["_lines"]), "completed": len(output),
                                   "failed": len(errors)}
        self.stats["lines_answered"] += len(output)
        self.stats["lines_failed"] += len(errors)
        for kind, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{next(self._numbers):06d}"
                self._files[file_id] = {"bytes": "".join(json.dumps(x) + "\n"
                                                         for x in lines).encode(),
                                        "filename": f"{batch['id']}_{kind[:-8]}.jsonl",
                                        "purpose": "batch_output"}
                batch[kind] = file_id

    @staticmethod
    def _public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def summary(self) -> dict:
        with self._lock:
            # A line answered twice was paid twice: what a resumed build must never cause.
            return {**self.stats, "repeated_answers": sum(
                n - 1 for n in self.lines_answered.values() if n > 1),
                "resubmitted_lines": sum(n - 1 for n in self.lines_seen.values() if n > 1)}

