"""Model providers: what sends one chat or embeddings request (`llm.provider`,
`embeddings.provider`).

A provider is a factory `(config) -> client`, where the client answers the two calls the rest
of the project makes, in the OpenAI SDK's shapes (the most widely implemented model API):
`client.chat.completions.create(model=, messages=, stream=, **parameters)` returning a
completion (`chat_reply` builds one) or, with `stream=True`, its chunks, and
`client.embeddings.create(model=, input=, **parameters)` returning vectors
(`embeddings_reply`). Everything around the call stays ours whatever the provider: the
response cache, the shared rate budget, retries, usage and cost, the batch queue. A provider
that cannot stream sets `streams = False` on its client (the answer then comes whole); one
whose call fails raises `ProviderError` (retried as a server error).

A provider is named by its registration here (`register_provider`), by an installed
package's entry point in the `graphrag_ray.providers` group, or as `module:attribute`, which
every Ray worker imports too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphrag_ray.plugins import find_plugin

ENTRY_POINT_GROUP = "graphrag_ray.providers"

PROVIDERS: dict[str, Callable[[Any], Any]] = {}


class ProviderError(Exception):
    """A provider's call failed; retried within `max_retries` like a server's error."""


def register_provider(name: str, factory: Callable[[Any], Any]) -> None:
    PROVIDERS[name] = factory


def provider_factory(name: str) -> Callable[[Any], Any]:
    """The factory `name` names: registered, an entry point, or `module:attribute`."""
    return find_plugin("provider", name, PROVIDERS, ENTRY_POINT_GROUP)


def open_provider(config) -> Any:
    """The client of `config.provider` for `config` (an LLM or embeddings section)."""
    return provider_factory(config.provider)(config)


def chat_reply(content: str, model: str, prompt_tokens: int, completion_tokens: int):
    """A completion in the OpenAI SDK's type, for a provider that builds its own."""
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate({
        "id": "provider", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}})


def embeddings_reply(vectors: list[list[float]], model: str, prompt_tokens: int):
    """Vectors in the OpenAI SDK's type, for a provider that builds its own."""
    from openai.types import CreateEmbeddingResponse

    return CreateEmbeddingResponse.model_validate({
        "object": "list", "model": model,
        "data": [{"object": "embedding", "index": i, "embedding": list(vector)}
                 for i, vector in enumerate(vectors)],
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}})
