import numpy as np
import pytest

from graphrag_ray.config import EmbeddingsConfig, LLMConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import ChatClient
from graphrag_ray.llm.embedding_methods import Embedder
from graphrag_ray.llm.embeddings import EmbeddingClient, hashing_embed
from graphrag_ray.llm.rate_limiter import LocalRateLimiter
from graphrag_testkit.llm_server import run_test_server


def test_hashing_embeddings_are_deterministic_unit_vectors_that_match_by_words():
    texts = ["Ebenezer Scrooge, a covetous old miser", "Who is Ebenezer Scrooge?",
             "Bob Cratchit's small house", ""]
    vectors = hashing_embed(texts, 512)
    assert vectors.shape == (4, 512) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0) and not vectors[3].any()
    assert np.array_equal(vectors, hashing_embed(texts, 512))
    similarity = vectors @ vectors[1]
    assert similarity[0] > 0.3 > similarity[2]


def test_endpoint_embeddings_are_batched_cached_and_retried(tmp_path):
    with run_test_server(fail_first=1, retry_after_s=0.01) as server:
        config = EmbeddingsConfig(api_base=server.url, model="test-embedding", dimensions=64,
                                  batch_size=3)
        cache = ResponseCache(str(tmp_path / "cache"))
        client = EmbeddingClient(config, limiter=LocalRateLimiter(config), cache=cache)
        texts = [f"text number {i} about Marley" for i in range(7)] + [""]
        vectors = client.embed(texts)
        assert vectors.shape == (8, 64)
        assert np.allclose(vectors[:7], hashing_embed(texts[:7], 64), atol=1e-6)
        assert client.usage.calls == 3 and client.usage.retries == 3  # 8 texts in 3 requests
        again = EmbeddingClient(config, cache=cache)
        assert np.allclose(again.embed(texts), vectors)
        assert again.usage.calls == 0 and again.usage.cache_hits == 8
        assert server.stats()["by_kind"]["embeddings"] == 6


def test_embedder_picks_hashing_offline_and_needs_an_endpoint_for_api():
    assert Embedder(EmbeddingsConfig()).method == "hashing"
    assert Embedder(EmbeddingsConfig()).embed(["a b c"]).shape == (1, 1024)
    with pytest.raises(LLMError, match="embeddings.api_base"):
        Embedder(EmbeddingsConfig(method="api"))


def test_chat_stream_yields_pieces_that_join_to_the_completion(tmp_path):
    with run_test_server() as server:
        config = LLMConfig(api_base=server.url, model="test-model")
        cache = ResponseCache(str(tmp_path / "cache"))
        chat = ChatClient(config, limiter=LocalRateLimiter(config), cache=cache)
        messages = [{"role": "user", "content": "---Data tables---\n1|MARLEY|ghost\n\n"
                                                "Question: Who is Marley?\n\nAnswer:"}]
        pieces = list(chat.stream(messages, max_tokens=200))
        assert len(pieces) > 1 and chat.usage.calls == 1 and chat.usage.completion_tokens > 0
        plain = ChatClient(config).complete(messages, max_tokens=200)
        assert "".join(pieces) == plain
        # The streamed answer was cached whole: a second stream is one cached piece.
        assert list(chat.stream(messages, max_tokens=200)) == [plain]
        assert chat.usage.cache_hits == 1
