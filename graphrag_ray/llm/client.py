"""Chat calls to any OpenAI-compatible endpoint through the official `openai` client.

Each call: response cache lookup -> a lease from the shared rate budget (estimate = prompt
tokens + expected output, see rate_limiter) -> the request -> the lease reconciled with the
reported usage -> cache write.
Failures that can pass (429, 408, 409, 5xx, timeouts, connection errors) are retried with
exponential backoff and full jitter, waiting exactly what Retry-After / retry-after-ms /
x-ratelimit-reset-* say when the provider says it; 429s also shrink the shared concurrency.
Errors no retry can fix raise `FatalLLMError` at once (bad key, unknown model, bad request); a
prompt too long for the model, or retries exhausted, raise `LLMCallError` for that item only.

`openai` is imported by the functions that call it, not with this module: every worker
imports this module, and an offline build's workers (or a cached rerun's) then never pay its
import, once per Ray worker process.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import threading
from dataclasses import asdict, dataclass
from typing import Callable, TypeVar


from graphrag_ray import stopping
from graphrag_ray.config import EmbeddingsConfig, LLMConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.llm.cache import ResponseCache, cache_key
from graphrag_ray.llm.providers import (
    ProviderError, open_provider, provider_factory, register_provider)
from graphrag_ray.llm.rate_limiter import Settlement
from graphrag_ray.llm.replies import visible_reply, visible_stream
from graphrag_ray.llm.request_kinds import REQUEST_ABOUT_HEADER, REQUEST_KIND_HEADER
from graphrag_ray.llm.request_shape import (
    RequestShape, adopt, learn, send_shaped, shape_for, wire_logit_bias)
from graphrag_ray.tokens import count_tokens

T = TypeVar("T")

# The client requires a key; local servers (vLLM, Ollama, llama.cpp) ignore it.
_PLACEHOLDER_KEY = "not-needed"
_MAX_BACKOFF_S = 60.0
_RETRYABLE_STATUS = {408, 409, 429}
# Parameters a rejection can teach us about (request_shape): one reshape each, and a margin.
_MAX_RESHAPES = 4


_models_ready = threading.Lock()
_models_built = False


def _build_response_models() -> None:
    """Parse one response before any thread does. The openai models build their pydantic
    schemas lazily, and threads racing through the first parse in a fresh process can see a
    half-built model ("BaseModel cannot be instantiated directly"); seen in new Ray actors."""
    global _models_built
    with _models_ready:
        if _models_built:
            return
        from openai._models import construct_type
        from openai.types.chat import ChatCompletion

        construct_type(type_=ChatCompletion, value={
            "id": "warm-up", "object": "chat.completion", "created": 0, "model": "warm-up",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": ""}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})
        _models_built = True


def _openai_client(config: LLMConfig, timeout: float, max_retries: int) -> openai.OpenAI:
    import openai
    _build_response_models()
    key = config.api_key.get_secret_value() or _PLACEHOLDER_KEY
    if config.api_version:
        return openai.AzureOpenAI(azure_endpoint=config.api_base, api_version=config.api_version,
                                  api_key=key, timeout=timeout, max_retries=max_retries)
    return openai.OpenAI(base_url=config.api_base, api_key=key, timeout=timeout,
                         max_retries=max_retries)


register_provider("openai", lambda config: _openai_client(config, config.request_timeout,
                                                          max_retries=0))


class LLMCallError(LLMError):
    """A call that failed for this item (retries exhausted, prompt too long)."""


class MalformedReply(LLMError):
    """Every attempt's reply was one the caller could not read."""


class FatalLLMError(LLMError):
    """A failure every further call would repeat (401/403, unknown model, bad request)."""


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    rate_limited: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens the provider served from its prompt cache (part of prompt_tokens; priced
    # lower where the price table says so).
    cached_tokens: int = 0

    def add(self, other: "Usage | dict") -> None:
        values = other if isinstance(other, dict) else asdict(other)
        for key in asdict(self):
            setattr(self, key, getattr(self, key) + int(values.get(key, 0) or 0))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


USAGE_FIELDS = tuple(asdict(Usage()))


class LLMServices:
    """What a worker needs besides config to call the LLM: the shared budget and the cache.
    Travels to Ray actors (the limiter as an actor handle, the cache as its URL)."""

    def __init__(self, limiter=None, cache: ResponseCache | None = None,
                 embedding_limiter=None, batch=None, declared: dict | None = None):
        self.limiter = limiter
        self.cache = cache
        # What every chat request says of itself besides its kind (`request_kinds`): the
        # language the prompts ask replies in (`prompts.language`).
        self.declared = declared or {}
        # Embeddings have their own limits (their own model and keys in the config).
        self.embedding_limiter = embedding_limiter
        # `llm.batch`: the stages whose requests go by batch, and where they wait
        # (`batch.BatchMode`); None: every request online.
        self.batch = batch

    def chat(self, config: LLMConfig, stage: str = "") -> "ChatClient":
        """`stage` names the build stage the budget's ledger counts these calls under."""
        return ChatClient(config, limiter=self.limiter, cache=self.cache, stage=stage,
                          batch=self.batch_for(stage), declared=self.declared)

    def batch_for(self, stage: str):
        """The batch mode a client of `stage` runs in (None: its requests go online)."""
        return self.batch if self.batch is not None and stage in self.batch.stages else None

    def batched(self, batch) -> "LLMServices":
        """These services with `batch` for its stages (a batch round's pass, or the run
        after the last round)."""
        clone = object.__new__(LLMServices)
        clone.__dict__.update(self.__dict__)
        clone.batch = batch
        return clone

    def ledger(self, **settle) -> dict[str, dict[str, int]]:
        """Per stage, every request that reached the chat and embeddings endpoints, as the
        budgets counted them (true under worker retries; see rate_limiter). `settle_s`: how
        long to wait for the settlements of calls in flight."""
        ledger: dict[str, dict[str, int]] = {}
        for limiter in (self.limiter, self.embedding_limiter):
            if limiter is not None:
                for stage, counts in limiter.ledger(**settle).items():
                    total = ledger.setdefault(stage, dict.fromkeys(counts, 0))
                    for key, value in counts.items():
                        total[key] += value
        return ledger

    def stop(self) -> None:
        """No budget admits another call, on any node (`stopping` covers this process)."""
        for limiter in (self.limiter, self.embedding_limiter):
            if limiter is not None:
                limiter.stop()

    def close(self) -> None:
        for limiter in (self.limiter, self.embedding_limiter):
            if limiter is not None:
                limiter.close()


def config_section(config: LLMConfig) -> str:
    """The settings section an endpoint's config comes from, for messages."""
    return "embeddings" if isinstance(config, EmbeddingsConfig) else "llm"


def require_api_base(config: LLMConfig) -> None:
    if not config.api_base:
        raise LLMError(f"{config_section(config)}.api_base is not set: give the endpoint URL "
                       "(e.g. http://host:8000/v1)")


class _EndpointClient:
    """What chat and embeddings calls share: the budget lease, retries, usage counting."""

    def __init__(self, config: LLMConfig, limiter=None, cache: ResponseCache | None = None,
                 encoding: str = "cl100k_base", stage: str = "", batch=None,
                 declared: dict | None = None):
        if config.provider == "openai":
            require_api_base(config)
        self.config = config
        self.stage = stage
        self.declared = declared or {}
        self.batch = batch
        self.limiter = limiter
        self.cache = cache
        self.encoding = encoding
        # The provider's client (`providers.py`); we retry ourselves, under the shared budget.
        self._client = open_provider(config)
        self._lock = threading.Lock()
        self.usage = Usage()
        # Set once the endpoint has answered anything (shared by scoped clones): until then a
        # refused connection means it is not there, and waiting on retries helps nobody.
        self._reached = threading.Event()

    def scoped(self):
        """A client sharing this one's connection pool, budget and cache, with its own usage."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._lock = threading.Lock()
        clone.usage = Usage()
        return clone

    def note_reply(self, usable: bool, sample: str, look_at: str) -> None:
        """Whether this stage's reply was usable (`reply_check`): raises UnusableReplies once
        the stage's first replies say it should stop."""
        if self.limiter is not None and hasattr(self.limiter, "note_reply"):
            self.limiter.note_reply(self.stage, usable, sample, look_at)

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for key, value in deltas.items():
                setattr(self.usage, key, getattr(self.usage, key) + value)

    def _admitted(self, request, prompt_estimate: int, max_tokens: int, tag: str,
                  reshape=None, urgency: int = 0):
        """`request(lease)` under a lease, retried as the failure allows; returns the response
        and its lease, which the caller settles with the usage the response reports.
        `urgency`: how much later work waits on this one (its place in the budget's line).
        `reshape(exc, lease)`: for a 400, the request shape to send instead (chat), or None;
        a reshaped request goes again at once, not counted as a retry."""
        import openai
        attempt = reshapes = 0
        while True:
            stopping.check()
            lease = (self.limiter.acquire(prompt_estimate, max_tokens, tag, self.stage,
                                          urgency) if self.limiter else None)
            if stopping.stop_requested():  # asked while the call waited in the budget's line
                if lease is not None:
                    self.limiter.release(lease, Settlement(0))
                stopping.check()
            try:
                response = request(lease)
                self._reached.set()
                return response, lease
            except (openai.APIError, ErrorInBody, ProviderError) as exc:
                status = getattr(exc, "status_code", None)
                learned = reshape(exc, lease) if reshape and _teaches_shape(exc) \
                    and reshapes < _MAX_RESHAPES else None
                if learned is not None:
                    reshapes += 1
                    if lease is not None:
                        self.limiter.release(lease, Settlement(0, learned_shape=learned))
                    continue
                retry_after = retry_after_seconds(exc)
                retryable = isinstance(exc, (openai.APIConnectionError, ErrorInBody,
                                             ProviderError)) or \
                    status in _RETRYABLE_STATUS or (status is not None and status >= 500)
                if unreachable(exc) and not self._reached.is_set():
                    retryable = False
                final = not retryable or attempt == self.config.max_retries
                outcome = {"rate_limited": int(status == 429),
                           "failed_calls" if final else "retries": 1}
                if lease is not None:
                    self.limiter.release(lease, Settlement(
                        0 if status == 429 else lease.tokens, rate_limited=status == 429,
                        retry_after=retry_after, usage=outcome))
                self._count(**outcome)
                if final:
                    raise classify_error(exc, self.config) from None
                stopping.wait(backoff_delay(attempt, retry_after, self.config.retry_base_delay_s))
                attempt += 1

    @staticmethod
    def reported_usage(reported) -> Usage:
        """One call's usage as the response reports it (nothing when it reports none)."""
        usage = Usage(calls=1)
        if reported is not None:
            usage.prompt_tokens = reported.prompt_tokens or 0
            usage.completion_tokens = getattr(reported, "completion_tokens", 0) or 0
            details = getattr(reported, "prompt_tokens_details", None)
            usage.cached_tokens = (getattr(details, "cached_tokens", 0) or 0) if details else 0
        return usage

    def _settle(self, lease, usage: Usage, reported: bool) -> None:
        """The lease reconciled with the call's usage (all of its estimate when the response
        reports none). Called once the reply is in the cache: a process killed between the
        two would otherwise have a settled call that its rerun sends again."""
        counts = {key: value for key, value in usage.as_dict().items() if value}
        if lease is not None:
            self.limiter.release(lease, Settlement(
                usage.prompt_tokens + usage.completion_tokens if reported else lease.tokens,
                usage.completion_tokens if reported else None, usage=counts))
        self._count(**counts)


class ErrorInBody(Exception):
    """A 200 whose body is an error, not a completion (some proxies and local servers answer
    an overload so): retried like a 5xx."""


class ChatClient(_EndpointClient):
    def _headers(self, kind: str | None, about: dict | None = None) -> dict[str, str]:
        """The headers saying what a request is: its kind, what it holds, and what every
        request of this job declares; none unless `llm.declare_requests` asks (they are no
        part of any provider's API)."""
        if not getattr(self.config, "declare_requests", False):
            return {}
        return _request_headers(kind, {**self.declared, **(about or {})})

    def _prepare(self, messages: list[dict], max_tokens: int,
                 logit_bias: dict[int, int] | None, cache_tag: str) -> str | None:
        """The cache key: of the request as we ask it, whatever shape the endpoint takes."""
        params: dict = {"max_tokens": max_tokens, "temperature": self.config.temperature}
        if logit_bias:
            params["logit_bias"] = wire_logit_bias(logit_bias)
        return cache_key(self.config.model, messages, params, cache_tag) if self.cache else None

    def _shape(self, lease) -> RequestShape:
        """The newer of the job's learned shape (it comes with the lease) and this
        process's."""
        learned = getattr(lease, "shape", None)
        return adopt(self.config, learned) if learned is not None else shape_for(self.config)

    def takes_logit_bias(self) -> bool:
        return shape_for(self.config).logit_bias

    def _create(self, sent: list, lease, messages: list[dict], max_tokens: int,
                logit_bias: dict[int, int] | None, **extra):
        """One request, shaped as the endpoint takes it; `sent` gets the shape it went
        with (for `_reshape`)."""
        def prepare():
            shape = self._shape(lease)
            sent[:] = [shape]
            wire = shape.wire_parameters(self.config, max_tokens, logit_bias)
            return wire, lambda: self._client.chat.completions.create(
                model=self.config.model, messages=messages, **wire, **extra)

        reshape = self._reshape(sent, max_tokens, logit_bias)
        response = send_shaped(self.config, prepare, learn_from=lambda exc: reshape(exc, lease)
                               if _teaches_shape(exc) else None)
        if extra.get("stream"):
            # An error body where the events should be reads as an empty stream: it is
            # told apart before the first piece, so that it can still be retried.
            chunks = iter(response)
            first = next(chunks, None)
            if first is None:
                raise ErrorInBody("the endpoint answered 200 with no events")
            return itertools.chain([first], chunks)
        if not response.choices:
            error = (getattr(response, "model_extra", None) or {}).get("error")
            raise ErrorInBody(f"the endpoint answered 200 without a completion"
                              f"{f': {error}' if error else ''}"[:300])
        return response

    def _reshape(self, sent: list, max_tokens: int, logit_bias: dict[int, int] | None):
        """For `_admitted`: the shape a 400 to the request sent as `sent[0]` teaches."""
        def reshape(exc, lease) -> RequestShape | None:
            if not sent:
                return None
            body = getattr(exc, "body", None)
            param = body.get("param") if isinstance(body, dict) else None
            new = sent[0].after_rejection(str(getattr(exc, "message", exc)), param,
                                          sent[0].wire_parameters(self.config, max_tokens,
                                                                  logit_bias))
            if new is not None:
                learn(self.config, new, _short(exc))
            return new
        return reshape

    def _cached(self, key: str | None) -> str | None:
        if key is None:
            return None
        hit = self.cache.get(key)
        if hit is None:
            return None
        self._count(cache_hits=1)
        return hit["content"]

    def _prompt_estimate(self, messages: list[dict]) -> int:
        return sum(count_tokens(m.get("content") or "", self.encoding) + 4 for m in messages)

    def _output_estimate(self, max_tokens: int) -> int:
        return max_tokens + shape_for(self.config).reasoning_allowance

    def _store(self, key: str | None, content: str, usage: Usage) -> None:
        if key is not None:
            self.cache.put(key, {"content": content, "model": self.config.model,
                                 "usage": {"prompt_tokens": usage.prompt_tokens,
                                           "completion_tokens": usage.completion_tokens}})

    def complete(self, messages: list[dict], *, max_tokens: int,
                 logit_bias: dict[int, int] | None = None, cache_tag: str = "",
                 kind: str | None = None, about: dict | None = None,
                 urgency: int = 0) -> str:
        """The reply's answer (`replies.visible_reply`: no reasoning block, no fence).
        `kind`: what the request is, `about`: what it holds (`request_kinds`; None: it does
        not say); `urgency`: how much later work waits on its answer (`rate_limiter._rank`)."""
        key = self._prepare(messages, max_tokens, logit_bias, cache_tag)
        hit = self._cached(key)
        if hit is not None:
            return hit
        if self.batch is not None and key is not None:
            self.batch.miss(key, lambda: self._batch_body(messages, max_tokens, logit_bias))
        sent: list = []
        response, lease = self._admitted(
            lambda lease: self._create(sent, lease, messages, max_tokens, logit_bias,
                                       extra_headers=self._headers(kind, about)),
            self._prompt_estimate(messages), self._output_estimate(max_tokens), cache_tag,
            reshape=self._reshape(sent, max_tokens, logit_bias), urgency=urgency)
        usage = self.reported_usage(response.usage)
        content = visible_reply(response.choices[0].message.content or "")
        try:
            self._store(key, content, usage)
        finally:
            self._settle(lease, usage, response.usage is not None)
        return content

    def _batch_body(self, messages: list[dict], max_tokens: int,
                    logit_bias: dict[int, int] | None) -> dict:
        """The request as a Batch API line's body, shaped as the endpoint takes it."""
        wire = shape_for(self.config).wire_parameters(self.config, max_tokens, logit_bias)
        return {"model": self.config.model, "messages": messages, **wire}

    def complete_parsed(self, messages: list[dict], parse: Callable[[str], T], *,
                        max_tokens: int, cache_tag: str = "", retries: int | None = None,
                        kind: str | None = None, urgency: int = 0) -> T:
        """`parse(reply)`; a reply it rejects (ValueError, KeyError, TypeError) is requested
        again, up to `retries` times (default `llm.max_parse_retries`), then MalformedReply.
        Each attempt has a cache key of its own, so a malformed reply in the cache is never
        served again as the retry's answer (and a rerun replays the attempt that worked):
        `cache_tag` may hold `{attempt}`; without it, attempt 0 uses `cache_tag` as given and
        attempt n `cache_tag:retry-n`. Errors of the call itself (LLMError) are raised at once."""
        attempts = (self.config.max_parse_retries if retries is None else retries) + 1
        problem = ""
        for attempt in range(attempts):
            if "{attempt}" in cache_tag:
                tag = cache_tag.replace("{attempt}", str(attempt))
            else:
                tag = f"{cache_tag}:retry-{attempt}" if attempt else cache_tag
            reply = self.complete(messages, max_tokens=max_tokens, cache_tag=tag, kind=kind,
                                  urgency=urgency)
            try:
                return parse(reply)
            except (ValueError, KeyError, TypeError) as exc:
                problem = f"{type(exc).__name__}: {exc}" if isinstance(exc, KeyError) \
                    else str(exc)
        raise MalformedReply(f"no readable reply in {attempts} attempts: {problem}")

    def stream(self, messages: list[dict], *, max_tokens: int, cache_tag: str = "",
               kind: str | None = None):
        """The reply piece by piece as the endpoint sends it (a cached reply comes whole),
        without a leading reasoning block. Retries happen before the first piece; a stream
        that breaks later raises."""
        import openai
        if not getattr(self._client, "streams", True):  # (a provider that answers whole)
            yield self.complete(messages, max_tokens=max_tokens, cache_tag=cache_tag, kind=kind)
            return
        key = self._prepare(messages, max_tokens, None, cache_tag)
        hit = self._cached(key)
        if hit is not None:
            yield hit
            return
        sent: list = []
        stream, lease = self._admitted(
            lambda lease: self._create(sent, lease, messages, max_tokens, None, stream=True,
                                       stream_options={"include_usage": True},
                                       extra_headers=self._headers(kind)),
            self._prompt_estimate(messages), self._output_estimate(max_tokens), cache_tag,
            reshape=self._reshape(sent, max_tokens, None))
        pieces: list[str] = []
        reported = None

        def received():
            nonlocal reported
            for chunk in stream:
                if chunk.usage is not None:
                    reported = chunk.usage
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content

        try:
            for piece in visible_stream(received()):
                pieces.append(piece)
                yield piece
        except openai.APIError as exc:
            raise LLMCallError(f"the answer stream from {self.config.api_base} broke: "
                               f"{_short(exc)}") from None
        except BaseException:
            self._settle(lease, self.reported_usage(reported), reported is not None)
            raise
        usage = self.reported_usage(reported)
        try:
            self._store(key, "".join(pieces), usage)
        finally:
            self._settle(lease, usage, reported is not None)


def _request_headers(kind: str | None, about: dict | None = None) -> dict[str, str]:
    headers = {REQUEST_KIND_HEADER: kind} if kind else {}
    if about:
        headers[REQUEST_ABOUT_HEADER] = json.dumps(about, ensure_ascii=True)
    return headers


def backoff_delay(attempt: int, retry_after: float | None, base: float) -> float:
    """The provider's word when given (plus a little jitter so callers do not stampede);
    otherwise exponential backoff with full jitter."""
    if retry_after is not None:
        return retry_after * random.uniform(1.0, 1.1)
    return random.uniform(0, min(_MAX_BACKOFF_S, base * 2 ** attempt))


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(value: str) -> float | None:
    """'20ms', '1.5s', '6m0s', '1h2m' -> seconds; a bare number is seconds."""
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(value)
    if not parts:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit] for number, unit in parts)


def retry_after_seconds(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    if headers.get("retry-after-ms"):
        try:
            return float(headers["retry-after-ms"]) / 1000
        except ValueError:
            pass
    if headers.get("retry-after"):
        seconds = parse_duration(headers["retry-after"])
        if seconds is not None:
            return seconds
    resets = [parse_duration(headers[h]) for h in ("x-ratelimit-reset-requests",
                                                   "x-ratelimit-reset-tokens") if headers.get(h)]
    resets = [r for r in resets if r is not None]
    if resets and getattr(exc, "status_code", None) == 429:
        return max(resets)
    return None


def classify_error(exc: openai.APIError, config: LLMConfig) -> LLMError:
    import openai
    endpoint = config.api_base or f"provider {config.provider}"
    if isinstance(exc, openai.APITimeoutError):
        return LLMCallError(f"request to {endpoint} timed out after {config.request_timeout:g}s "
                            f"({config.max_retries} retries)")
    if isinstance(exc, openai.APIConnectionError):
        kind = "LLM" if config_section(config) == "llm" else "embeddings"
        return LLMCallError(f"cannot reach {kind} endpoint {endpoint}: {exc}")
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return FatalLLMError(f"{endpoint} rejected the API key (HTTP {exc.status_code}); "
                             "check llm.api_key")
    if isinstance(exc, openai.NotFoundError):
        return FatalLLMError(f"{endpoint} does not know model {config.model!r} or the path "
                             f"(HTTP 404): {_short(exc)}")
    if isinstance(exc, openai.BadRequestError):
        if _is_context_length(exc):
            return LLMCallError(f"the prompt exceeds {config.model!r}'s context window "
                                f"(HTTP 400): {_short(exc)}")
        return FatalLLMError(f"{endpoint} refused the request (HTTP 400): {_short(exc)}")
    status = getattr(exc, "status_code", None)
    return LLMCallError(f"{endpoint} failed after {config.max_retries} retries "
                        f"(HTTP {status}): {_short(exc)}")


def _is_context_length(exc: openai.APIError) -> bool:
    code = getattr(exc, "code", None) or ""
    text = f"{code} {exc}".lower()
    return "context_length" in text or "context length" in text or "maximum context" in text


def _teaches_shape(exc: Exception) -> bool:
    """A 400 that is not about the prompt's length may be about a parameter."""
    return getattr(exc, "status_code", None) == 400 and not _is_context_length(exc)


def _short(exc: Exception) -> str:
    return str(exc)[:300]


def unreachable(exc: BaseException) -> bool:
    """A connection refused or a host name that does not resolve: nothing listens there (a
    timeout, by contrast, may be a busy server, and keeps its retries)."""
    import socket

    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        if isinstance(exc, (ConnectionRefusedError, socket.gaierror)):
            return True
        text = str(exc)
        if "Connection refused" in text or "Name or service not known" in text \
                or "nodename nor servname" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def check_endpoint(config: LLMConfig) -> None:
    """Fail before any work when the endpoint is unset, unreachable or rejects the key: a
    refused connection at once, a timeout after one more try. (Another provider's client
    is its own to check: its first call tells.)"""
    import openai
    if config.provider != "openai":
        provider_factory(config.provider)  # (a name that does not load is said now)
        return
    require_api_base(config)
    client = _openai_client(config, min(config.request_timeout, 15.0), max_retries=0)
    for attempt in range(2):
        try:
            client.models.list()
            return
        except openai.APIConnectionError as exc:
            if attempt or unreachable(exc):
                raise classify_error(exc, config) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise classify_error(exc, config) from None
        except openai.APIError:
            return  # Some compatible servers do not implement /models; the first call tells.


def parse_json_object(text: str) -> dict:
    """The first JSON object in a reply, tolerating code fences and surrounding prose."""
    text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip(), flags=re.MULTILINE)
    start = text.find("{")
    end = text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the reply")
    value = json.loads(text[start:end + 1])
    if not isinstance(value, dict):
        raise ValueError("the reply's JSON is not an object")
    return value
