"""The query service's HTTP application: the same FastAPI app under uvicorn in one process
and in every Ray Serve replica.

Routes: `POST /v1/chat/completions` and `GET /v1/models` (OpenAI-compatible),
`POST /v1/query` (JSON with resolved citations), `GET /v1/index`, `GET /healthz`,
`GET /metrics` and the explorer's site under `/explore/`.

Limits are the replica's own: API keys (`Authorization: Bearer`, every route but /healthz),
the body's size (413), the question's length (413), requests answered at once (429 with
Retry-After: a client backs off instead of queueing behind work that will time out) and a
deadline per request (504). A search runs in a thread of its own and keeps its slot until it
returns, even after its request timed out, so timeouts cannot pile up work. Errors are
OpenAI-style JSON bodies; no key or config secret is ever in a body or a log line.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    StreamingResponse,
)

from graphrag_ray.errors import GraphRagError, LLMError, environment_error
from graphrag_ray.serve import chat, citations
from graphrag_ray.serve.chat import QueryRequest, RequestError
from graphrag_ray.serve.live_index import LiveIndex

log = logging.getLogger("graphrag_ray.serve")

API_KEYS_VARIABLE = "GRAPHRAG_SERVE_API_KEYS"
VERSION_HEADER = "X-Graphrag-Version"
REPLICA_HEADER = "X-Graphrag-Replica"


@dataclass(frozen=True)
class Limits:
    api_keys: frozenset[str]
    max_body_bytes: int
    max_concurrent_requests: int
    request_timeout_s: float


def api_keys_from(value: str | None) -> frozenset[str]:
    """`GRAPHRAG_SERVE_API_KEYS`: keys separated by commas (or whitespace)."""
    return frozenset(k for k in (value or "").replace(",", " ").split() if k)


class Metrics:
    """Where a replica reports its requests and reads the service's totals; `record` and
    `text` are given by the runner (this process's counts, or the Ray actor's sums)."""

    def __init__(self, record: Callable[..., None], text: Callable[[str | None], str]):
        self.record = record
        self.text = text


def _error(status: int, message: str, kind: str = "invalid_request_error",
           param: str | None = None, code: str | None = None,
           headers: dict | None = None) -> JSONResponse:
    return JSONResponse(chat.error_body(message, kind, param, code), status_code=status,
                        headers=headers)


class Service:
    """One replica's state: its live index, limits, metrics, threads and explorer sites."""

    def __init__(self, live: LiveIndex, limits: Limits, metrics: Metrics):
        self.live = live
        self.limits = limits
        self.metrics = metrics
        self.active = 0  # searches running (touched on the event loop only)
        # Which replica answered (a header on every response): spread and failover are seen.
        self.replica = uuid.uuid4().hex[:8]
        self._threads = ThreadPoolExecutor(limits.max_concurrent_requests,
                                           thread_name_prefix="graphrag-serve")
        self._sites: dict[str, Path] = {}
        self._site_lock = threading.Lock()
        self._site_root = Path(tempfile.mkdtemp(prefix="graphrag-serve-explore-"))

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
        self.live.close()
        shutil.rmtree(self._site_root, ignore_errors=True)

    # -- requests ---------------------------------------------------------------------------

    def authorized(self, request: Request) -> bool:
        if not self.limits.api_keys:
            return True
        header = request.headers.get("authorization", "")
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key:
            return False
        return any(hmac.compare_digest(key.strip().encode(), known.encode())
                   for known in self.limits.api_keys)

    async def body(self, request: Request) -> dict:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.limits.max_body_bytes:
            raise RequestError(413, f"the body has {int(declared):,} bytes; the limit is "
                               f"{self.limits.max_body_bytes:,} (serve.max_body_bytes)",
                               code="request_too_large")
        received = bytearray()
        async for piece in request.stream():
            received += piece
            if len(received) > self.limits.max_body_bytes:
                raise RequestError(413, f"the body is over the limit of "
                                   f"{self.limits.max_body_bytes:,} bytes (serve.max_body_bytes)",
                                   code="request_too_large")
        try:
            return json.loads(received or b"null")
        except ValueError as exc:
            raise RequestError(400, f"the body is not JSON: {exc}") from None

    def start(self, query: QueryRequest, on_token=None,
              then: Callable | None = None) -> tuple[asyncio.Future, str]:
        """Starts the search in a thread, on the current version (held until the thread
        returns, as is its slot); returns the future of (result, `then(index, result)`) and
        the version. 429 when every slot is taken."""
        if self.active >= self.limits.max_concurrent_requests:
            raise RequestError(429, f"this replica is answering "
                               f"{self.limits.max_concurrent_requests} requests already "
                               "(serve.max_concurrent_requests); retry shortly",
                               kind="rate_limit_error", code="too_many_requests")
        held = self.live.acquire()
        index = held.index
        too_long = chat.question_too_long(query.question, index.config.query.max_question_chars)
        if too_long:
            self.live.release(held)
            raise RequestError(413, too_long, param="messages", code="question_too_long")
        options = dict(query.options)
        if on_token is not None:
            options["on_token"] = on_token
        self.active += 1

        def run():
            result = index.search(query.method, query.question,
                                  history=query.history or None, **options)
            return result, (then(index, result) if then and result.answer.strip() else None)

        future = asyncio.get_running_loop().run_in_executor(self._threads, run)

        def release(_):
            self.active -= 1
            self.live.release(held)

        future.add_done_callback(release)
        return future, index.manifest.version

    async def answer(self, query: QueryRequest, then: Callable | None = None):
        future, version = self.start(query, then=then)
        try:
            result, extra = await asyncio.wait_for(asyncio.shield(future),
                                                     self.limits.request_timeout_s)
        except asyncio.TimeoutError:
            raise RequestError(504, f"no answer within {self.limits.request_timeout_s:g} s "
                               "(serve.request_timeout_s)", kind="timeout",
                               code="timeout") from None
        _check_answer(result)
        return result, version, extra


def _check_answer(result) -> None:
    missing = chat.no_answer(result)
    if missing:
        raise RequestError(502, missing, kind="api_error", code="no_answer")


def _sse(data) -> bytes:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def make_app(service: Service) -> FastAPI:
    app = FastAPI(title="graphrag-ray", docs_url=None, redoc_url=None, openapi_url=None)
    _add_guard(app, service)
    _add_error_handlers(app)
    _add_facts(app, service)
    _add_answers(app, service)
    _add_explorer(app, service)
    return app


def _add_guard(app: FastAPI, service: Service) -> None:
    """Every request: its key checked, an environment failure as a 503, the answering
    version and replica named, and its figures counted."""

    @app.middleware("http")
    async def guard(request: Request, call_next):
        began = time.perf_counter()
        path = request.url.path
        endpoint = path if not path.startswith("/explore") else "/explore/"
        request.state.method = ""
        request.state.llm_tokens = 0
        if path != "/healthz" and not service.authorized(request):
            response = _error(401, "a valid API key is required (Authorization: Bearer KEY; "
                              f"the keys are in the service's {API_KEYS_VARIABLE})",
                              code="invalid_api_key")
        else:
            try:
                response = await call_next(request)
            except Exception as exc:  # noqa: BLE001 - the environment's 503, a bug's 500
                message = environment_error(exc)
                if message is None:
                    log.exception("%s %s failed", request.method, path)
                    response = _error(500, "the service failed on this request (logged)",
                                      kind="server_error")
                else:
                    response = _error(503, message, kind="server_error")
        # The version that answered (a switch may have happened since), else the current one.
        version = getattr(request.state, "version", None) or service.live.version
        if version:
            response.headers[VERSION_HEADER] = version
        response.headers[REPLICA_HEADER] = service.replica
        seconds = time.perf_counter() - began
        # A stream is counted when its last event is sent, with its own status.
        if not getattr(request.state, "streaming", False) or response.status_code != 200:
            service.metrics.record(endpoint, request.state.method, response.status_code,
                                   seconds, request.state.llm_tokens)
        log.info("%s %s %s %.3fs", request.method, path, response.status_code, seconds)
        return response


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError):
        headers = {"Retry-After": "1"} if exc.status == 429 else None
        if exc.status == 504:
            # The timed-out search still runs and holds its slot: a retry would start a
            # second one beside it (the `openai` client honours this header; it retries
            # 504s otherwise).
            headers = {"x-should-retry": "false"}
        return _error(exc.status, str(exc), exc.kind, exc.param, exc.code, headers)

    @app.exception_handler(LLMError)
    async def llm_failed(request: Request, exc: LLMError):
        # The endpoint behind the service failed (retries spent): a gateway's error.
        return _error(502, str(exc), kind="api_error", code="llm_failed")

    @app.exception_handler(GraphRagError)
    async def user_error(request: Request, exc: GraphRagError):
        return _error(400, str(exc))


def _add_facts(app: FastAPI, service: Service) -> None:
    """What the service is and serves: health, metrics, the models (one per query method)
    and the index's facts."""
    started = int(time.time())

    @app.get("/healthz")
    async def healthz():
        if service.live.version is None:
            return _error(503, "the index is not loaded yet", kind="server_error")
        return {"status": "ok", "version": service.live.version, "active": service.active,
                "replica": service.replica, "pid": os.getpid()}

    @app.get("/metrics")
    async def metrics():
        text = await asyncio.to_thread(service.metrics.text, service.live.version)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    @app.get("/v1/models")
    async def models():
        return chat.models_listing(started)

    @app.get("/v1/models/{model}")
    async def model(model: str):
        chat.method_of(model)
        return next(m for m in chat.models_listing(started)["data"]
                    if m["id"] == chat.MODEL_PREFIX + chat.method_of(model))

    @app.get("/v1/index")
    async def index_facts():
        with service.live.lease() as index:
            manifest = index.manifest
            return {"version": manifest.version, "created_at": manifest.created_at,
                    "pinned": service.live.pinned is not None,
                    "tables": manifest.tables, "levels": manifest.levels,
                    "communities_per_level": manifest.communities_per_level,
                    "embeddings": manifest.embeddings.model_dump(),
                    "pipeline": manifest.pipeline.model_dump(),
                    "prompt_versions": manifest.prompt_versions,
                    "settings": _without_secrets(manifest.config),
                    "models": chat.model_names(),
                    "version_switches": service.live.switches}


def _add_answers(app: FastAPI, service: Service) -> None:
    @app.post("/v1/query")
    async def query(request: Request):
        body = await service.body(request)
        parsed = chat.parse_query(body)
        request.state.method = parsed.method
        limit = body.get("max_citations", 20)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise RequestError(400, "`max_citations` must be a non-negative integer",
                               param="max_citations")
        # The rows come from the version that answered, while it is still held.
        result, version, cited = await service.answer(parsed, then=lambda index, result: (
            citations.resolve(index.table, index.rows, index.has_table, result.sources,
                              limit)))
        request.state.version = version
        request.state.llm_tokens = result.usage.prompt_tokens + result.usage.completion_tokens
        return {"answer": result.answer, "method": result.method, "version": version,
                "citations": cited, "sources": result.sources.as_dict(),
                "context_tokens": result.context_tokens, "llm_calls": result.llm_calls,
                "usage": chat.usage_of(result), "notes": result.notes,
                "failures": result.failures, "details": result.details}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        parsed = chat.parse_chat(await service.body(request))
        request.state.method = parsed.method
        if parsed.stream:
            return await _stream(service, parsed, request)
        result, version, _ = await service.answer(parsed)
        request.state.version = version
        request.state.llm_tokens = result.usage.prompt_tokens + result.usage.completion_tokens
        return chat.completion(parsed, result, version, chat.completion_id())


def _add_explorer(app: FastAPI, service: Service) -> None:
    @app.get("/favicon.ico")
    async def favicon():  # browsers ask; the explorer has no icon
        return Response(status_code=204)

    @app.get("/explore")
    async def explore_root():
        return RedirectResponse("/explore/")

    @app.get("/explore/{path:path}")
    async def explore(path: str):
        site = await asyncio.to_thread(_site, service)
        target = (site / (path or "index.html")).resolve()
        if site not in target.parents and target != site or not target.is_file():
            return _error(404, f"no such file in the explorer: {path}", code="not_found")
        return FileResponse(target)


async def _stream(service: Service, query: QueryRequest, request: Request):
    """SSE chunks as the answer is written: the role, the pieces, the closing chunk with the
    answer's sources, the usage chunk if asked, then [DONE]. The deadline covers the wait for
    the first piece (504 before any byte is sent); after that, an error event ends it."""
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue = asyncio.Queue()
    began = time.perf_counter()
    deadline = time.monotonic() + service.limits.request_timeout_s
    future, version = service.start(
        query, lambda piece: loop.call_soon_threadsafe(pieces.put_nowait, piece))
    request.state.version = version
    first = asyncio.ensure_future(pieces.get())
    done, _ = await asyncio.wait({first, future}, timeout=service.limits.request_timeout_s,
                                 return_when=asyncio.FIRST_COMPLETED)
    if not done:
        first.cancel()
        raise RequestError(504, f"no answer within {service.limits.request_timeout_s:g} s "
                           "(serve.request_timeout_s)", kind="timeout", code="timeout")
    if future in done and first not in done:
        first.cancel()
        _check_answer(future.result()[0])  # a failure before any piece: its own status
    ident, created = chat.completion_id(), int(time.time())

    async def events():
        status, tokens = 200, 0
        written = []
        try:
            yield _sse(chat.chunk(query, ident, created, version,
                                  delta={"role": "assistant", "content": ""}))
            if first.done() and not first.cancelled():
                written.append(first.result())
                yield _sse(chat.chunk(query, ident, created, version,
                                      delta={"content": first.result()}))
            while True:
                getter = asyncio.ensure_future(pieces.get())
                done, _ = await asyncio.wait({getter, future},
                                             timeout=max(0.0, deadline - time.monotonic()),
                                             return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    written.append(getter.result())
                    yield _sse(chat.chunk(query, ident, created, version,
                                          delta={"content": getter.result()}))
                    continue
                getter.cancel()
                if not done:
                    status = 504
                    yield _sse(chat.error_body(
                        f"the answer was not finished within "
                        f"{service.limits.request_timeout_s:g} s (serve.request_timeout_s)",
                        "timeout", code="timeout"))
                    break
                result = future.result()[0]
                tokens = result.usage.prompt_tokens + result.usage.completion_tokens
                for event in _closing(query, ident, created, version, pieces, written, result):
                    yield event
                break
        except Exception as exc:  # noqa: BLE001 - the stream is open: an error event ends it
            status = getattr(exc, "status", 502 if isinstance(exc, LLMError) else 500)
            message = str(exc) if isinstance(exc, GraphRagError) else (
                environment_error(exc) or "the service failed on this request (logged)")
            if not isinstance(exc, GraphRagError):
                log.exception("streamed %s answer failed", query.method)
            yield _sse(chat.error_body(message, "server_error"))
        yield b"data: [DONE]\n\n"
        service.metrics.record("/v1/chat/completions", query.method, status,
                               time.perf_counter() - began, tokens)

    request.state.streaming = True
    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})


def _closing(query: QueryRequest, ident: str, created: int, version: str,
             pieces: asyncio.Queue, written: list[str], result) -> list[bytes]:
    """The events after the answer is done: the pieces still queued (or the whole answer,
    for a method that writes it at once, as offline ones do), the closing chunk with the
    sources, and the usage chunk if asked."""
    events = []
    while not pieces.empty():
        written.append(pieces.get_nowait())
        events.append(_sse(chat.chunk(query, ident, created, version,
                                      delta={"content": written[-1]})))
    if not "".join(written).strip() and result.answer:
        events.append(_sse(chat.chunk(query, ident, created, version,
                                      delta={"content": result.answer})))
    events.append(_sse(chat.chunk(query, ident, created, version, finish="stop",
                                  graphrag=chat.extras(result, version))))
    if query.include_usage:
        events.append(_sse(chat.chunk(query, ident, created, version,
                                      usage=chat.usage_of(result))))
    return events


def _site(service: Service) -> Path:
    """The explorer's site for the version being served, built on first request."""
    with service.live.lease() as index:
        version = index.manifest.version
        with service._site_lock:
            if version not in service._sites:
                from graphrag_ray.explore.site import build_site

                out = service._site_root / version
                build_site(index.store, out)
                for old, folder in list(service._sites.items()):
                    shutil.rmtree(folder, ignore_errors=True)
                    del service._sites[old]
                service._sites[version] = out.resolve()
            return service._sites[version]


def _without_secrets(settings):
    """The build's settings as served: masked at build already (`public_dict`); any key
    named like a credential is dropped here too."""
    if isinstance(settings, dict):
        return {k: _without_secrets(v) for k, v in settings.items()
                if not any(word in k.lower() for word in ("api_key", "secret", "password"))}
    if isinstance(settings, list):
        return [_without_secrets(v) for v in settings]
    return settings
