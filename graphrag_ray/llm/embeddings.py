"""How the embedding methods make vectors: an OpenAI-compatible /embeddings endpoint, signed
feature hashing, or the local sentence model (chosen in `embedding_methods.py`).

Hashing is signed feature hashing (the "hashing trick") of content words and adjacent word
pairs, weighted 1 + log(count) and L2-normalised. It needs no model download, so the
offline default stays offline, and is deterministic across processes (blake2b, not
Python's salted hash). It matches by shared vocabulary, not meaning: good for finding the
entities and passages a question names, weaker than a neural model for paraphrase.

Endpoint calls go through the same lease / retry / usage machinery as chat calls, under the
embeddings section's own rate limits, and each text's vector is cached by content.
"""

from __future__ import annotations

import base64
from collections import Counter
from functools import lru_cache
from hashlib import blake2b

import numpy as np

from graphrag_ray.config import EmbeddingsConfig
from graphrag_ray.llm.cache import cache_key
from graphrag_ray.llm.client import LLMCallError, _EndpointClient
from graphrag_ray.terms import content_terms
from graphrag_ray.tokens import count_tokens, truncate_to_tokens


# The name an index records for its offline embeddings. It changes with the word rules of
# `content_terms` (2: words of every script, accents folded, Chinese character pairs), so an
# update re-embeds (`settings_fingerprint`) and a query can tell an index made before.
HASHING_MODEL = "hashing-2"


@lru_cache(maxsize=1 << 20)
def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    value = int.from_bytes(blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return value % dimensions, 1.0 if value >> 63 else -1.0


def hashing_embed(texts: list[str], dimensions: int) -> np.ndarray:
    """The texts' feature hashes, added into their cells in one `np.add.at` (feature by
    feature in Python, the additions were most of embedding an update's texts); the same
    float32 sums, in the same order."""
    rows, columns, values = [], [], []
    for row, text in enumerate(texts):
        words = content_terms(text)
        features = Counter(words + [f"{a} {b}" for a, b in zip(words, words[1:])])
        counts = np.fromiter(features.values(), dtype=np.float64, count=len(features))
        buckets = [_bucket(feature, dimensions) for feature in features]
        rows.append(np.full(len(buckets), row, dtype=np.int64))
        columns.append(np.fromiter((column for column, _ in buckets), dtype=np.int64,
                                   count=len(buckets)))
        values.append(np.fromiter((sign for _, sign in buckets), dtype=np.float64,
                                  count=len(buckets)) * (1.0 + np.log(counts)))
    vectors = np.zeros((len(texts), dimensions), dtype=np.float32)
    if texts:
        np.add.at(vectors, (np.concatenate(rows), np.concatenate(columns)),
                  np.concatenate(values))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def vector_entry(embedding: list[float] | str) -> dict:
    """What the response cache keeps of a text's vector: float32 bytes in base64 (an
    endpoint's vector comes as floats, or already as base64 with `encoding_format`)."""
    if isinstance(embedding, str):
        embedding = np.frombuffer(base64.b64decode(embedding), dtype=np.float32)
    raw = np.asarray(embedding, dtype=np.float32).tobytes()
    return {"vector": base64.b64encode(raw).decode("ascii")}


LOCAL_DIMENSIONS = 384


def local_model_name(config: EmbeddingsConfig) -> str:
    """The name an index records for vectors of the local model at its precision."""
    from graphrag_ray.llm.sentence_model import MODEL_NAME

    return f"{MODEL_NAME}-{config.local_precision}"


def local_embed(texts: list[str], config: EmbeddingsConfig, summary: bool = False) -> np.ndarray:
    from graphrag_ray.llm.sentence_model import sentence_model

    model = sentence_model(config.local_precision, config.local_threads)
    return model.embed(texts, max_tokens=config.local_summary_tokens if summary else None)


class EmbeddingClient(_EndpointClient):
    def embed(self, texts: list[str]) -> np.ndarray:
        """`batch` (`embeddings.batch`): the texts the cache lacks are deferred to a batch,
        one request each, before the call stops (`batch.BatchMode.misses`)."""
        config: EmbeddingsConfig = self.config
        # Endpoints reject empty and over-long inputs.
        texts = [truncate_to_tokens(t, config.max_input_tokens, self.encoding) or " "
                 for t in texts]
        params = {"dimensions": config.dimensions} if config.dimensions else {}
        keys = [cache_key(config.model, [{"role": "input", "content": t}], params, "embedding")
                if self.cache else None for t in texts]
        vectors: list[np.ndarray | None] = [None] * len(texts)
        for i, key in enumerate(keys):
            hit = self.cache.get(key) if key else None
            if hit is not None:
                vectors[i] = np.frombuffer(base64.b64decode(hit["vector"]), dtype=np.float32)
                self._count(cache_hits=1)
        missing = [i for i, v in enumerate(vectors) if v is None]
        if self.batch is not None and self.cache is not None:
            self.batch.misses({keys[i]: (lambda text=texts[i]: {
                "model": config.model, "input": text, **params}) for i in missing})
        for start in range(0, len(missing), config.batch_size):
            batch = missing[start:start + config.batch_size]
            inputs = [texts[i] for i in batch]
            response, lease = self._admitted(
                lambda _lease: self._client.embeddings.create(model=config.model,
                                                              input=inputs, **params),
                sum(count_tokens(t, self.encoding) for t in inputs), 0, "embedding")
            usage = self.reported_usage(response.usage)
            try:
                if len(response.data) != len(batch):
                    raise LLMCallError(f"the embeddings endpoint returned "
                                       f"{len(response.data)} vectors for {len(batch)} inputs")
                for item in sorted(response.data, key=lambda d: d.index):
                    i = batch[item.index]
                    vectors[i] = np.asarray(item.embedding, dtype=np.float32)
                    if keys[i]:
                        self.cache.put(keys[i], {"model": config.model,
                                                 **vector_entry(vectors[i])})
            finally:  # settled once cached (see `_settle`)
                self._settle(lease, usage, response.usage is not None)
        if not vectors:
            return np.zeros((0, 0), dtype=np.float32)
        matrix = np.vstack(vectors)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)
