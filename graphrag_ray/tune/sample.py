"""The chunks prompt-tune reads: the corpus read and cut as a build cuts it (the configured
readers and chunking), then a few of them chosen.

- `random`: a seeded draw, for a corpus of many unlike documents;
- `top`: the first chunks in file order, for a corpus whose opening is representative;
- `auto`: those nearest the centroid of every chunk's embedding (the configured embeddings:
  the offline hashing method, or the endpoint), the corpus's most typical text.
"""

from __future__ import annotations

import random
from typing import Callable

import numpy as np

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.index.chunks.chunking import chunk_documents
from graphrag_ray.input.loader import load_documents

SAMPLINGS = ("auto", "random", "top")
# `auto` embeds at most this many chunks (a seeded draw beyond it): the centroid of a few
# thousand is the centroid of the corpus, and a big corpus must not be embedded to tune it.
AUTO_MAX_EMBEDDED = 2000


def corpus_chunks(input_url: str, config: GraphRagConfig) -> list[str]:
    """Every chunk of the corpus's text, in file order."""
    documents = load_documents(input_url, config.input).documents
    chunks = chunk_documents(documents, config.chunks, config.tokenizer.encoding)
    return [text for text in chunks.column("text").to_pylist() if text.strip()]


def choose(chunks: list[str], how: str, count: int, seed: int = 0,
           embed: Callable[[list[str]], np.ndarray] | None = None) -> list[int]:
    """The places of the chosen chunks, in corpus order."""
    if how not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {', '.join(SAMPLINGS)}, not {how!r}")
    if count >= len(chunks):
        return list(range(len(chunks)))
    if how == "top":
        return list(range(count))
    draw = random.Random(seed)
    if how == "random":
        return sorted(draw.sample(range(len(chunks)), count))
    if embed is None:
        raise ValueError("auto sampling needs embeddings")
    pool = sorted(draw.sample(range(len(chunks)), min(len(chunks), AUTO_MAX_EMBEDDED)))
    vectors = np.asarray(embed([chunks[i] for i in pool]), dtype=np.float64)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    centroid = vectors.mean(axis=0)
    nearest = np.argsort(-(vectors @ centroid), kind="stable")[:count]
    return sorted(pool[i] for i in nearest)
