"""Embedding methods: how texts become vectors (`embeddings.method`).

`api` sends them to the embeddings provider (`embeddings.provider`, the OpenAI-compatible
client by default), under the embeddings budget, the response cache and the Batch API. Every
other method runs where the build or the question is, without calls: `hashing` (signed
feature hashing, no model at all) and `local` (a sentence model on the CPU) are the two that
ship, registered here like any other.

An offline method is an object with two calls (`EmbeddingMethod`): `model(config)`, the name
an index records for its vectors (change it when the vectors change, so an update re-embeds
and a question is embedded alike), and `embed(texts, config, summary)`, one unit vector per
text. It is named by its registration here (`register_embedding_method`), by an installed
package's entry point in the `graphrag_ray.embedding_methods` group, or as
`module:attribute`, which every Ray worker imports too. Its own settings go in
`embeddings.options`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from graphrag_ray import processes
from graphrag_ray.config import EmbeddingsConfig
from graphrag_ray.errors import ConfigError
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.llm.embeddings import (HASHING_MODEL, LOCAL_DIMENSIONS, EmbeddingClient,
                                         hashing_embed, local_embed, local_model_name)
from graphrag_ray.plugins import find_plugin

ENTRY_POINT_GROUP = "graphrag_ray.embedding_methods"

# The method that sends texts to the embeddings provider (not a plugin of this registry: the
# provider is, `llm/providers.py`).
API = "api"


class EmbeddingMethod(Protocol):
    def model(self, config: EmbeddingsConfig) -> str:
        """The name an index records for vectors made this way with `config`."""

    def embed(self, texts: list[str], config: EmbeddingsConfig, summary: bool) -> np.ndarray:
        """One unit vector per text (float32, one row each). `summary`: the texts name and
        describe something, whose opening says what it is (a method may read less of
        them)."""


class HashingMethod:
    """Signed feature hashing of words and word pairs (`embeddings.hashing_embed`)."""

    def model(self, config: EmbeddingsConfig) -> str:
        return HASHING_MODEL

    def embed(self, texts: list[str], config: EmbeddingsConfig, summary: bool) -> np.ndarray:
        # In a worker process: it is Python end to end, and the build's threads keep going.
        return processes.run(hashing_embed, texts, config.hashing_dimensions)


class LocalMethod:
    """all-MiniLM-L6-v2 on this machine's CPU (`sentence_model.py`)."""

    def model(self, config: EmbeddingsConfig) -> str:
        return local_model_name(config)

    def embed(self, texts: list[str], config: EmbeddingsConfig, summary: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, LOCAL_DIMENSIONS), np.float32)
        return local_embed(texts, config, summary)  # (ONNX Runtime's threads: every core)


EMBEDDING_METHODS: dict[str, EmbeddingMethod] = {"hashing": HashingMethod(),
                                                 "local": LocalMethod()}


def register_embedding_method(name: str, method: EmbeddingMethod) -> None:
    if name in (API, "auto"):
        raise ConfigError(f"embedding method {name!r} is reserved")
    EMBEDDING_METHODS[name] = method


def embedding_method(name: str) -> EmbeddingMethod:
    """The offline method `name` names: registered, an entry point, or `module:attribute`."""
    return find_plugin("embedding method", name, EMBEDDING_METHODS, ENTRY_POINT_GROUP)


def is_embedding_method(name: str | None) -> bool:
    """Whether `name` is a method a question can be embedded with (an adopted index records
    none of them: its vectors came from an endpoint)."""
    if name == API:
        return True
    try:
        return bool(name) and embedding_method(name) is not None
    except ConfigError:
        return False


def vectors_model(config: EmbeddingsConfig, method: str) -> str:
    """The name an index records for vectors of `method` with `config`."""
    return config.model if method == API else embedding_method(method).model(config)


class Embedder:
    """Texts -> unit vectors, by the configured method; one per worker. `services`: the
    job's embeddings budget, cache and batch mode (`LLMServices`; none: no budget, no
    cache); `stage` names the budget's ledger entry."""

    def __init__(self, config: EmbeddingsConfig, services: LLMServices | None = None,
                 stage: str = "embed", method: str | None = None):
        """`method`: the one an index's vectors were made with (its manifest's), which a
        question must be embedded with too; by default, the config's."""
        self.config = config
        self.method = method or config.resolved_method()
        services = services or LLMServices()
        self.client = (EmbeddingClient(config, limiter=services.embedding_limiter,
                                       cache=services.cache, stage=stage,
                                       batch=services.batch_for(stage))
                       if self.method == API else None)
        self.offline = None if self.client else embedding_method(self.method)

    @property
    def usage(self):
        return self.client.usage if self.client else None

    def embed(self, texts: list[str], summary: bool = False) -> np.ndarray:
        """One vector per text; identical texts are embedded once."""
        distinct = list(dict.fromkeys(texts))
        vectors = self.client.embed(distinct) if self.client \
            else self.offline.embed(distinct, self.config, summary)
        if len(distinct) == len(texts):
            return vectors
        row = {text: i for i, text in enumerate(distinct)}
        return vectors[[row[text] for text in texts]]

    def scoped(self) -> "Embedder":
        clone = object.__new__(Embedder)
        clone.__dict__.update(self.__dict__)
        clone.client = self.client.scoped() if self.client else None
        return clone
