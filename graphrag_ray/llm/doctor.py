"""`graphrag-ray doctor`: what the configured endpoints will do with this job's requests,
found out in a few tiny calls before a build spends money.

Each check is one line: ok, warn (the job will work, perhaps not as configured) or fail (the
job would stop). The calls go out with the job's own request shaping (`request_shape`), so
the shape a rejection teaches here is the one the job will use, and is said.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from graphrag_ray.config import GraphRagConfig, LLMConfig
from graphrag_ray.errors import GraphRagError, LLMError

# The provider's limits, as OpenAI, Azure and many proxies state them on every reply.
_LIMIT_HEADERS = {"requests_per_minute": "x-ratelimit-limit-requests",
                  "tokens_per_minute": "x-ratelimit-limit-tokens"}


@dataclass
class Check:
    status: str  # ok | warn | fail
    what: str
    seconds: float | None = None

    def line(self) -> str:
        took = f" ({self.seconds:.2f} s)" if self.seconds is not None else ""
        return f"{self.status:<4} {self.what}{took}"


def diagnose(config: GraphRagConfig) -> list[Check]:
    """The checks of the chat endpoint, then of the embeddings endpoint when one is used.
    Stops at the first failure of an endpoint: what follows would fail the same way."""
    checks = _chat_checks(config.llm, config)
    if config.llm.batch and not any(c.status == "fail" for c in checks):
        checks.append(_batch_check(config.llm, "llm"))
    if config.embeddings.resolved_method() == "api":
        embeddings = _embeddings_checks(config.embeddings)
        if config.embeddings.batch and not any(c.status == "fail" for c in embeddings):
            embeddings.append(_batch_check(config.embeddings, "embeddings"))
        checks += embeddings
    return checks


def _batch_check(config: LLMConfig, section: str) -> Check:
    """`llm.batch` / `embeddings.batch`: the endpoint lists batches (read only: nothing is
    created or billed), so a build does not find out hours in that it has no Batch API."""
    from graphrag_ray.llm.client import _openai_client, classify_error

    client = _openai_client(config, config.request_timeout, max_retries=0)
    try:
        listed, seconds = _timed(lambda: client.batches.list(limit=1))
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        reason = str(classify_error(exc, config)) if hasattr(exc, "status_code") else str(exc)
        return Check("fail", f"{section}.batch is set but the endpoint has no Batch API here "
                             f"({reason[:200]}): set {section}.batch: false, or use a provider "
                             "that offers batches (OpenAI, Azure OpenAI)")
    what = {"extraction": "extraction and gleaning", True: "every request of the build"
            if section == "llm" else "the embeddings"}[config.batch]
    return Check("ok", f"the Batch API answers ({len(listed.data)} batch(es) listed): "
                       f"{section}.batch: {config.batch} sends {what} by batch", seconds)


def _timed(call):
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started


def _reachable(config: LLMConfig, kind: str) -> list[Check]:
    """The endpoint answers and takes the key; the model is listed (when it lists any)."""
    import openai

    from graphrag_ray.llm.client import _openai_client, classify_error, require_api_base

    if config.provider != "openai":  # (its own client: the calls below are its check)
        from graphrag_ray.llm.providers import provider_factory
        try:
            provider_factory(config.provider)
        except GraphRagError as exc:
            return [Check("fail", str(exc))]
        return [Check("ok", f"{kind} provider {config.provider} loads")]
    try:
        require_api_base(config)
    except LLMError as exc:
        return [Check("fail", str(exc))]
    client = _openai_client(config, min(config.request_timeout, 15.0), max_retries=1)
    try:
        listed, seconds = _timed(lambda: [m.id for m in client.models.list()])
    except (openai.APIConnectionError, openai.AuthenticationError,
            openai.PermissionDeniedError) as exc:
        return [Check("fail", str(classify_error(exc, config)))]
    except openai.APIError:
        return [Check("ok", f"{kind} endpoint {config.api_base} answers (it lists no models)")]
    checks = [Check("ok", f"{kind} endpoint {config.api_base} answers and takes the key",
                    seconds)]
    if config.model in listed:
        checks.append(Check("ok", f"model {config.model} is listed"))
    else:
        shown = ", ".join(listed[:8]) + (", ..." if len(listed) > 8 else "")
        checks.append(Check("warn", f"model {config.model} is not among the {len(listed)} "
                                    f"listed ({shown}); deployments and some servers accept "
                                    "names they do not list"))
    return checks


def _chat_checks(llm: LLMConfig, config: GraphRagConfig) -> list[Check]:
    from graphrag_ray.llm.client import ChatClient, parse_json_object
    from graphrag_ray.llm.request_shape import describe, model_encoding, shape_for
    from graphrag_ray.tokens import yes_no_logit_bias

    checks = _reachable(llm, "chat")
    if any(check.status == "fail" for check in checks):
        return checks
    chat = ChatClient(llm)
    probe = [{"role": "user", "content": "Reply with the single word OK."}]
    try:
        reply, seconds = _timed(lambda: chat.complete(probe, max_tokens=5))
    except LLMError as exc:
        return checks + [Check("fail", f"a chat request failed: {exc}")]
    retries = chat.usage.retries
    said = f"chat request answered{'' if reply.strip() else ' with nothing'}"
    if retries:  # slow retries: say what they cost here and what the job will do
        said += (f" after {retries} retr{'y' if retries == 1 else 'ies'} ({seconds:.1f} s in "
                 f"all): the job retries each failed request up to llm.max_retries="
                 f"{llm.max_retries} times, waiting what Retry-After says or "
                 f"{llm.retry_base_delay_s:g} s doubling with each retry, so every failure "
                 "like it costs the build a call's slot and that wait")
    checks.append(Check("ok" if reply.strip() and not retries else "warn",
                        f"{said}; requests go as: {describe(shape_for(llm))}", seconds))
    quirks, raw = _raw_reply(llm)
    checks += quirks
    encoding = model_encoding(llm.model)
    if shape_for(llm).logit_bias and encoding:
        ask = [{"role": "user", "content": "Is Paris in France? Answer Y or N."}]
        try:
            answer, seconds = _timed(lambda: chat.complete(
                ask, max_tokens=1, logit_bias=yes_no_logit_bias(encoding), kind="yes_no"))
            first = answer.strip()[:1]
            if not shape_for(llm).logit_bias:
                checks.append(Check("ok", "logit_bias is refused: the gleaning check will "
                                          "parse a short reply", seconds))
            elif first in ("Y", "N"):
                checks.append(Check("ok", f"logit_bias works (the gleaning check answered "
                                          f"{first!r})", seconds))
            else:  # taken, but not obeyed: say that, not that it works
                checks.append(Check("warn", f"logit_bias is taken but not obeyed (the reply "
                                            f"was {answer.strip()[:20]!r}, not Y or N): the "
                                            "gleaning check reads the reply as it comes",
                                    seconds))
        except LLMError as exc:
            checks.append(Check("fail", f"the gleaning check's request failed: {exc}"))
    else:
        checks.append(Check("ok", "no logit_bias for this model: the gleaning check parses "
                                  "a short reply"))
    ask = [{"role": "user", "content": 'Answer with this JSON object only: {"ok": true}'}]
    try:
        reply, seconds = _timed(lambda: chat.complete(ask, max_tokens=20, kind="json_only"))
        parse_json_object(reply)
        checks.append(Check("ok", "JSON replies parse (reports, map answers)", seconds))
    except (LLMError, ValueError) as exc:
        checks.append(Check("warn", f"a JSON reply did not parse ({str(exc)[:120]}): reports "
                                    "and map answers will be re-asked or fall back"))
    checks.append(_limits(llm, raw))
    if not config.extraction.method == "llm":
        checks.append(Check("warn", "extraction.method is nlp: the index will not call this "
                                    "endpoint for extraction"))
    return checks


def _raw_reply(config: LLMConfig):
    """One request as the job sends it, read raw, without retries: what the endpoint's
    replies look like (the job copes with each quirk; the user should know which it met),
    and the reply whose headers state the limits (None when no reply came)."""
    from graphrag_ray.llm.client import _openai_client
    from graphrag_ray.llm.request_shape import shape_for

    client = _openai_client(config, min(config.request_timeout, 15.0), max_retries=0)
    ask = [{"role": "user", "content": "Reply with the single word READY."}]
    checks: list[Check] = []
    for _ in range(2):
        try:
            raw = client.chat.completions.with_raw_response.create(
                model=config.model, messages=ask,
                **shape_for(config).wire_parameters(config, 20, None))
            response = raw.parse()
        except Exception as exc:  # what follows is advice: it never stops the doctor
            return checks + [Check("warn", f"could not read a raw reply: {str(exc)[:120]}")], \
                None
        if response.choices:
            break
        error = (getattr(response, "model_extra", None) or {}).get("error")
        checks.append(Check("warn", "a request was answered HTTP 200 with an error body and no "
                                    "completion" + (f" ({str(error)[:80]})" if error else "")
                                    + ": the job retries such answers like a 5xx, each one "
                                    "costing a retry and its wait"))
    else:
        return checks, raw
    content = response.choices[0].message.content or ""
    if response.usage is None:
        checks.append(Check("warn", "replies carry no usage: the manifest's tokens and cost "
                                    "are our estimates, and the rate budget paces on them"))
    if re.match(r"\s*<think>", content):
        checks.append(Check("ok", "replies open with a <think> block (a reasoning model): the "
                                  "job reads the answer after it (llm.reasoning_allowance_tokens "
                                  "gives its reasoning room)"))
    if content.strip().startswith("```"):
        checks.append(Check("ok", "replies come inside a code fence: the job reads what is "
                                  "inside"))
    if not checks:
        checks.append(Check("ok", "replies are plain (usage reported, no reasoning block, no "
                                  "fence)"))
    return checks, raw


def _limits(config: LLMConfig, raw) -> Check:
    """The provider's stated limits (rate-limit headers of `raw`) against the configured
    ones."""
    if raw is None:
        return Check("warn", "could not read the rate-limit headers: no reply came")
    stated = {}
    for setting, header in _LIMIT_HEADERS.items():
        try:
            stated[setting] = float(raw.headers.get(header))
        except (TypeError, ValueError):
            continue
    if not stated:
        configured = [f"llm.{k}={getattr(config, k):g}" for k in _LIMIT_HEADERS
                      if getattr(config, k)]
        return Check("ok" if configured else "warn",
                     "the endpoint states no rate limits; " + (
                         ", ".join(configured) + " will pace the job" if configured else
                         "none configured: calls in flight stay at "
                         f"llm.unlimited_concurrency={config.unlimited_concurrency}"))
    advice = []
    for setting, limit in stated.items():
        ours = getattr(config, setting)
        if ours is None:
            advice.append(f"set llm.{setting}={limit:g} (the provider's) to fill it without 429s")
        elif ours > limit:
            advice.append(f"llm.{setting}={ours:g} is above the provider's {limit:g}: 429s")
    said = ", ".join(f"{k.replace('_', ' ')}: {v:g}" for k, v in stated.items())
    return Check("warn" if advice else "ok", f"provider limits ({said})"
                 + ("; " + "; ".join(advice) if advice else " match the configuration"))


def _embeddings_checks(config: LLMConfig) -> list[Check]:
    from graphrag_ray.llm.embedding_methods import Embedder

    checks = _reachable(config, "embeddings")
    if any(check.status == "fail" for check in checks):
        return checks
    try:
        vectors, seconds = _timed(lambda: Embedder(config).embed(["hello"]))
    except LLMError as exc:
        return checks + [Check("fail", f"an embeddings request failed: {exc}")]
    size = len(vectors[0]) if len(vectors) else 0
    wanted = getattr(config, "dimensions", None)
    return checks + [Check("ok" if not wanted or wanted == size else "warn",
                           f"embeddings of {size} dimensions"
                           + (f" (embeddings.dimensions is {wanted})"
                              if wanted and wanted != size else ""), seconds)]
