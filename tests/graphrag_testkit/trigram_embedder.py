"""An out-of-tree embedding method (`embeddings.method: graphrag_testkit.trigram_embedder:method`):
hashed character trigrams, of the size `embeddings.options.dimensions` asks. It shows the
seam (`graphrag_ray.llm.embedding_methods`) with nothing of the two that ship."""

from __future__ import annotations

import zlib

import numpy as np


class TrigramMethod:
    def __init__(self):
        self.texts = 0  # texts embedded in this process

    def model(self, config) -> str:
        return f"trigrams-{config.options.get('dimensions', 128)}"

    def embed(self, texts, config, summary):
        dimensions = int(config.options.get("dimensions", 128))
        vectors = np.zeros((len(texts), dimensions), np.float32)
        for row, text in enumerate(texts):
            padded = f"  {text.lower()} "
            for i in range(len(padded) - 2):
                vectors[row, zlib.crc32(padded[i:i + 3].encode()) % dimensions] += 1.0
        self.texts += len(texts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)


method = TrigramMethod()
