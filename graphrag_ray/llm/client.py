"""Chat calls to any OpenAI-compatible endpoint through the official `openai` client.

Transient failures (429, 5xx, timeouts, connection errors) are retried by the client, which
honours Retry-After. What is left after retries is raised as `LLMCallError`; errors no retry can
fix (bad key, unknown model, bad request) as `FatalLLMError`, so callers can stop early.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import asdict, dataclass

import openai

from graphrag_ray.config import LLMConfig
from graphrag_ray.errors import LLMError

# The client requires a key; local servers (vLLM, Ollama, llama.cpp) ignore it.
_PLACEHOLDER_KEY = "not-needed"


class LLMCallError(LLMError):
    """A call that failed after all retries; the item it served is recorded as failed."""


class FatalLLMError(LLMError):
    """A failure every further call would repeat (401/403, unknown model, bad request)."""


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed_calls: int = 0

    def add(self, other: "Usage") -> None:
        for key, value in asdict(other).items():
            setattr(self, key, getattr(self, key) + value)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class ChatClient:
    def __init__(self, config: LLMConfig):
        if not config.api_base:
            raise LLMError("llm.api_base is not set: give the endpoint URL (e.g. http://host:8000/v1)")
        self.config = config
        self._client = openai.OpenAI(
            base_url=config.api_base,
            api_key=config.api_key.get_secret_value() or _PLACEHOLDER_KEY,
            timeout=config.request_timeout,
            max_retries=config.max_retries,
        )
        self._lock = threading.Lock()
        self.usage = Usage()

    def complete(self, messages: list[dict], *, max_tokens: int,
                 logit_bias: dict[int, int] | None = None) -> str:
        kwargs = {}
        if logit_bias:
            kwargs["logit_bias"] = {str(k): v for k, v in logit_bias.items()}
        try:
            response = self._client.chat.completions.create(
                model=self.config.model, messages=messages, max_tokens=max_tokens,
                temperature=self.config.temperature, **kwargs)
        except openai.APIError as exc:
            with self._lock:
                self.usage.failed_calls += 1
            raise classify_error(exc, self.config) from None
        usage = response.usage
        with self._lock:
            self.usage.calls += 1
            if usage is not None:
                self.usage.prompt_tokens += usage.prompt_tokens or 0
                self.usage.completion_tokens += usage.completion_tokens or 0
        if not response.choices:
            raise LLMCallError("the endpoint returned no choices")
        return response.choices[0].message.content or ""


def classify_error(exc: openai.APIError, config: LLMConfig) -> LLMError:
    endpoint = config.api_base
    if isinstance(exc, openai.APITimeoutError):
        return LLMCallError(f"request to {endpoint} timed out after {config.request_timeout:g}s "
                            f"and {config.max_retries} retries")
    if isinstance(exc, openai.APIConnectionError):
        return LLMCallError(f"cannot reach LLM endpoint {endpoint}: {exc}")
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return FatalLLMError(f"{endpoint} rejected the API key (HTTP {exc.status_code}); "
                             "check llm.api_key")
    if isinstance(exc, openai.NotFoundError):
        return FatalLLMError(f"{endpoint} does not know model {config.model!r} or the path "
                             f"(HTTP 404): {_short(exc)}")
    if isinstance(exc, openai.BadRequestError):
        return FatalLLMError(f"{endpoint} refused the request (HTTP 400): {_short(exc)}")
    status = getattr(exc, "status_code", None)
    return LLMCallError(f"{endpoint} failed after {config.max_retries} retries "
                        f"(HTTP {status}): {_short(exc)}")


def _short(exc: Exception) -> str:
    return str(exc)[:300]


def check_endpoint(config: LLMConfig) -> None:
    """Fail before any work when the endpoint is unreachable or rejects the key."""
    client = openai.OpenAI(
        base_url=config.api_base,
        api_key=config.api_key.get_secret_value() or _PLACEHOLDER_KEY,
        timeout=min(config.request_timeout, 15.0), max_retries=1)
    try:
        client.models.list()
    except (openai.APIConnectionError, openai.AuthenticationError,
            openai.PermissionDeniedError) as exc:
        raise classify_error(exc, config) from None
    except openai.APIError:
        pass  # Some compatible servers do not implement /models; the first real call tells.


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
