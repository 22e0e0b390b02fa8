"""Indexing through the LLM layer: warm cache, reruns after failures, crash and resume,
dry-run estimates. Engine `local` keeps these fast; the Ray path has its own tests."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from graphrag_ray import load_config, schema
from graphrag_ray.index.estimate import estimate_index, previous_rates
from graphrag_ray.index.build import build_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server
from graphrag_testkit.local_cluster import kill_at_once

from conftest import (SHARED, descendants, kill_with_no_answer_in_transit, llm_config,
                      repeated_calls, wait_for_calls)

pytestmark = pytest.mark.slow


def _build(server, source, out, *overrides):
    config = llm_config(server, "runtime.engine=local", *overrides)
    return build_index(str(source), str(out), config, progress=lambda _: None)


def test_warm_cache_rerun_makes_no_llm_call(carol_excerpt, tmp_path):
    with run_test_server() as server:
        first = _build(server, carol_excerpt, tmp_path / "i")
        calls = server.stats()["requests"]
        assert first.llm_usage.total.calls == calls > 0
        second = _build(server, carol_excerpt, tmp_path / "i", "llm.api_key=another-key")
        assert server.stats()["requests"] == calls
        assert second.llm_usage.total.calls == 0
        assert second.llm_usage.total.cache_hits == calls
        assert second.tables == first.tables
        _build(server, carol_excerpt, tmp_path / "i", "cache.enabled=false")
        assert server.stats()["requests"] == 2 * calls


def test_rerun_after_failures_calls_only_for_the_failed_chunks(carol_excerpt, tmp_path):
    overrides = ("extraction.max_gleanings=0", "llm.max_retries=0")
    with run_test_server(rate_5xx=0.3, seed=11) as flaky:
        first = _build(flaky, carol_excerpt, tmp_path / "i", *overrides)
    failed = first.extraction.failed_chunks
    assert failed > 0
    # Summaries that failed fell back to extractive ones, counted with their reason.
    assert first.summaries["extractive_fallbacks"] > 0
    assert "LLM summary failed" in first.summaries["first_fallback_reasons"][0]
    with run_test_server() as healthy:
        second = _build(healthy, carol_excerpt, tmp_path / "i", *overrides)
        assert healthy.stats()["by_kind"]["extract_graph"] == failed
    extract = second.llm_usage.stages["extract"]
    assert extract.calls == failed
    assert extract.cache_hits == first.extraction.chunks - failed
    assert second.extraction.failed_chunks == 0
    assert second.summaries["extractive_fallbacks"] == 0


@pytest.mark.parametrize("engine, kind, calls", [
    ("local", "extract_graph", 10), ("local", "summarize", 5),
    ("local", "community_report", 3), ("ray", "summarize", 5)])
def test_sigkill_then_resume_repeats_no_received_reply(carol_excerpt, tmp_path, engine, kind,
                                                       calls):
    """SIGKILL at several points of an LLM build, on both engines, then the same command:
    no request whose reply had been received is sent again (a user's kill at 132 calls
    repeated 4 replies that were settled but not yet cached). Answers in transit at the
    kill are held by the server, so every repeat would be ours."""
    out = tmp_path / "index"
    earlier = build_index(str(carol_excerpt), str(out), load_config(None, ["runtime.engine=local"]),
                          progress=lambda _: None).version
    with run_test_server(latency_ms=40) as server:
        command = [sys.executable, "-m", "graphrag_ray", "index", "--input", str(carol_excerpt),
                   "--output", str(out), "--set", "extraction.method=llm",
                   "--set", f"llm.api_base={server.url}", "--set", f"runtime.engine={engine}",
                   "--set", "llm.unlimited_concurrency=4"]
        victim = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        wait_for_calls(server, kind, calls, victim)

        def kill_driver() -> None:
            # The whole job at once, as a lost machine goes. Ray's workers are not in the
            # driver's process group: killed with the group only, they send requests for the
            # second or so until they notice, and a reply taken then can die uncached (CI saw
            # 4 such summarize repeats), a repeat no client code can prevent.
            tree = list(descendants(victim.pid))
            os.killpg(victim.pid, signal.SIGKILL)
            kill_at_once(tree, timeout_s=60)
            victim.wait()

        kill_with_no_answer_in_transit(server, kill_driver, out / "cache", roots=(victim.pid,))
        # The killed build published nothing: readers still get the earlier version, whole.
        assert IndexStore(str(out)).open().version == earlier
        assert IndexStore(str(out)).open().read_table(schema.TEXT_UNITS).num_rows > 0
        before = server.stats()
        if kind == "extract_graph":
            assert "summarize" not in before["by_kind"]  # killed mid-extraction
        killed_at = time.time()
        # In a session of its own, as the killed run was: under Linux's autogroup scheduling a
        # build left in the test's session shares its CPU with whatever else that session
        # runs (two busy loops there made the resumed Ray build 10x slower than the first).
        finished = subprocess.run(command, capture_output=True, text=True, timeout=400,
                                  start_new_session=True)
        assert finished.returncode == 0, finished.stderr[-2000:]
        after = server.stats()
        assert after["repeated_successes"] == 0, repeated_calls(server, killed_at)
    assert after["successful_requests"] > before["successful_requests"]
    units = IndexStore(str(out)).open().read_table(schema.TEXT_UNITS)
    assert len(set(units.column("id").to_pylist())) == units.num_rows
    assert set(units.column("extraction_status").to_pylist()) == {"ok"}


def test_dry_run_predicts_extraction_calls(carol_excerpt, tmp_path):
    with run_test_server() as server:
        config = llm_config(server, "runtime.engine=local", "extraction.max_gleanings=1")
        estimate = estimate_index(str(carol_excerpt), config)
        assert server.stats()["requests"] == 0  # a dry run calls nothing
        manifest = build_index(str(carol_excerpt), str(tmp_path / "i"), config,
                               progress=lambda _: None)
    predicted = estimate["stages"]["extract"]["calls"]
    actual = manifest.llm_usage.stages["extract"].calls
    assert abs(predicted - actual) <= 0.1 * actual
    assert estimate["total"]["calls"] > predicted  # summaries and reports are estimated too


def test_a_dry_run_into_a_built_index_is_within_10_percent_on_podcast_transcripts(tmp_path):
    """The check of the token model: a build of 20 podcast transcripts calibrates the dry
    run of 20 others (into the same output: its measured output per input token, summaries
    and reports per chunk, and their tokens per call), which then lands within 10% of what
    building them costs, in calls, prompt and completion tokens."""
    podcast = SHARED / "corpora" / "podcast" / "input"
    if not podcast.is_dir():
        pytest.skip("the podcast corpus (../shared) is not here")
    files = sorted(podcast.iterdir())
    for name, part in (("built", files[:20]), ("next", files[100:120])):
        (tmp_path / name).mkdir()
        for path in part:
            shutil.copyfile(path, tmp_path / name / path.name)
    with run_test_server() as server:
        config = llm_config(server, "runtime.engine=local")
        build_index(str(tmp_path / "built"), str(tmp_path / "index"), config,
                    progress=lambda _: None)
        estimate = estimate_index(str(tmp_path / "next"), config,
                                  previous_rates(str(tmp_path / "index"), config))
        actual = build_index(str(tmp_path / "next"), str(tmp_path / "fresh"), config,
                             progress=lambda _: None).llm_usage.stages
    assert estimate["calibrated_on"]["chunks"] == 20
    for key in ("calls", "prompt_tokens", "completion_tokens"):
        predicted = sum(estimate["stages"][s][key] for s in ("extract", "summarize", "reports"))
        spent = sum(getattr(actual[s], key) for s in ("extract", "summarize", "reports"))
        assert abs(predicted - spent) <= 0.1 * spent, (key, predicted, spent)


def test_unknown_model_stops_the_run_fast_with_the_message(carol_excerpt, tmp_path):
    from graphrag_ray.errors import LLMError

    with run_test_server(models="test-model") as server:
        config = llm_config(server, "runtime.engine=local", "llm.model=no-such-model",
                            "llm.unlimited_concurrency=4")
        with pytest.raises(LLMError, match="does not know model 'no-such-model'"):
            build_index(str(carol_excerpt), str(tmp_path / "i"), config, progress=lambda _: None)
        # At most the calls in flight go out before it stops calling.
        assert server.stats()["requests"] <= 4
