"""The test LLM as a provider plugin (`llm.provider: graphrag_testkit.in_process:provider`):
the test server's answers and hashed embeddings, made in this process with no HTTP, through
the provider seam a third-party SDK would use (`graphrag_ray.llm.providers`). It declares no
streaming, so the seam's whole-answer path is taken too."""

from __future__ import annotations

from types import SimpleNamespace

from graphrag_ray.llm.providers import ProviderError, chat_reply, embeddings_reply
from graphrag_testkit.llm_server import (
    Switches, _content, _embeddings_reply, embedding_tokens, prompt_tokens_of, request_kind)


class _Chat:
    def __init__(self, calls: list):
        self.calls = calls

    def create(self, *, model: str, messages: list[dict], stream: bool = False, **parameters):
        if stream:
            raise ProviderError("this provider does not stream")
        kind, _ = request_kind(None, messages)
        content, completion_tokens = _content(kind, messages, parameters, Switches(), set())
        self.calls.append(kind)
        return chat_reply(content, model, prompt_tokens_of(messages), completion_tokens)


class _Embeddings:
    def __init__(self, calls: list):
        self.calls = calls

    def create(self, *, model: str, input, **parameters):
        body = {"input": input, "model": model, **parameters}
        reply = _embeddings_reply(body, embedding_tokens(input))
        self.calls.append("embeddings")
        return embeddings_reply([d["embedding"] for d in reply["data"]], model,
                                reply["usage"]["prompt_tokens"])


# Every call any client of this process made, by kind (the tests read it).
CALLS: list[str] = []


def provider(config) -> SimpleNamespace:
    """A client for `config` (an LLM or embeddings section): chat and embeddings calls."""
    return SimpleNamespace(chat=SimpleNamespace(completions=_Chat(CALLS)),
                           embeddings=_Embeddings(CALLS), streams=False)
