"""The build keeps the provider busy whatever the corpus's shape: calls in flight follow the
rate budget (not files or batches), embeddings overlap extraction, and the manifest's usage is
what the provider billed."""

import pytest

from graphrag_ray.index.build import build_index
from graphrag_testkit.llm_server import run_test_server

from conftest import llm_config

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_one_file_still_fills_the_budget_with_calls_in_flight(engine, carol_excerpt, tmp_path,
                                                              request):
    """One input file used to make one read bundle, hence one actor task and at most 4 calls
    in flight (mean 2.8) under a budget that allowed far more."""
    if engine == "ray":
        request.getfixturevalue("ray_session")
    with run_test_server(latency_ms=500) as server:
        config = llm_config(server, f"runtime.engine={engine}", "extraction.max_gleanings=0",
                            "llm.requests_per_minute=6000", "llm.tokens_per_minute=10000000")
        manifest = build_index(str(carol_excerpt), str(tmp_path / "index"), config,
                               progress=lambda _: None)
        stats = server.stats()
    chunks = manifest.extraction.chunks
    assert chunks >= 20 and manifest.extraction.failed_chunks == 0
    # Every chunk's call at once is what this budget allows at 0.5 s a call. (On Ray, the read
    # task's chunks once reached the pool as one block: one extraction call at a time.)
    assert stats["peak_in_flight_by_kind"]["extract_graph"] >= 16
    billed = stats["usage_by_model"]["test-model"]
    total = manifest.llm_usage.total
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (
        billed["calls"], billed["prompt_tokens"], billed["completion_tokens"])


def test_text_unit_embeddings_run_while_extraction_does(carol_excerpt, tmp_path):
    with run_test_server(latency_ms=300) as server:
        config = llm_config(server, "runtime.engine=local", "extraction.max_gleanings=0",
                            f"embeddings.api_base={server.url}", "embeddings.batch_size=4",
                            "llm.requests_per_minute=120")
        manifest = build_index(str(carol_excerpt), str(tmp_path / "index"), config,
                               progress=lambda _: None)
        log = server.request_log()
    first_embedding = min(t for t, kind, status, _ in log if kind == "embeddings")
    last_extraction = max(t for t, kind, status, _ in log if kind == "extract_graph")
    assert first_embedding < last_extraction
    assert manifest.tables["embeddings_text_unit_text"] == manifest.extraction.chunks


def test_usage_is_what_the_provider_billed_through_429s_and_5xx(carol_excerpt, tmp_path):
    with run_test_server(rate_429=0.1, rate_5xx=0.1, retry_after_s=0.01, seed=3) as server:
        config = llm_config(server, "runtime.engine=local", "extraction.max_gleanings=1",
                            "llm.retry_base_delay_s=0.01")
        manifest = build_index(str(carol_excerpt), str(tmp_path / "index"), config,
                               progress=lambda _: None)
        stats = server.stats()
    total = manifest.llm_usage.total
    billed = stats["usage_by_model"]["test-model"]
    assert total.calls == billed["calls"] == stats["by_status"]["200"]
    assert total.rate_limited == stats["by_status"]["429"]
    assert total.prompt_tokens == billed["prompt_tokens"]
    assert total.cached_tokens == billed["cached_tokens"] > 0  # gleaning turns
