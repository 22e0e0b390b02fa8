"""`llm.batch: extraction` end to end, through the openai client to the test server playing
the Batch API: rounds of extraction and gleaning by batch, the same index as the online build,
failed and expired lines sent again then counted, the enqueued-token limit, a build killed
mid-round that re-attaches to its batches and submits nothing twice."""

import os
import signal
import subprocess
import sys
import time

import pytest

from graphrag_ray import load_config, schema
from graphrag_ray.index.build import build_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server

from conftest import carol_input, descendants

# Each test builds an index (several batch rounds); the quick suite leaves them to the full one.
pytestmark = pytest.mark.slow

COMPARED = {schema.ENTITIES: ["title", "type", "description", "text_unit_ids"],
            schema.RELATIONSHIPS: ["source", "target", "description", "weight"],
            schema.TEXT_UNITS: ["id", "text", "extraction_status"]}


def settings(server, *more, engine="local"):
    return [f"runtime.engine={engine}", "extraction.method=llm", f"llm.api_base={server.url}",
            "llm.model=test-model", "llm.batch_poll_s=0.05", *more]


def build(server, source, out, *more, engine="local"):
    return build_index(str(source), str(out),
                       load_config(None, settings(server, *more, engine=engine)),
                       progress=lambda _: None)


def tables(out):
    version = IndexStore(str(out)).open()
    return {name: version.read_table(name, columns).sort_by(columns[0]).to_pylist()
            for name, columns in COMPARED.items()}


@pytest.fixture
def corpus(tmp_path):
    return carol_input(tmp_path / "input", 12_000)


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_extraction_by_batch_builds_the_online_index(engine, corpus, tmp_path, request):
    """On both engines: on Ray the deferring workers are actors, writing to the cache URL."""
    if engine == "ray":
        request.getfixturevalue("ray_session")
    with run_test_server() as online:
        build(online, corpus, tmp_path / "online")
        asked_online = {k: v for k, v in online.stats()["by_kind"].items()
                        if k in ("extract_graph", "glean_check", "glean_continue")}
    with run_test_server(batch_delay_s=0.2) as server:
        manifest = build(server, corpus, tmp_path / "batch", "llm.batch=extraction",
                         engine=engine)
        stats = server.stats()
    by_batch = {k.removeprefix("batch:"): v for k, v in stats["by_kind"].items()
                if k.startswith("batch:")}
    assert by_batch == asked_online  # every extraction request, by batch, none online
    assert not set(asked_online) & set(stats["by_kind"])
    assert stats["by_kind"]["summarize"] > 0  # the rest went online
    # One round per step of the chunks' conversations: extraction, then gleaning.
    phase = manifest.batch["phases"]["extract"]
    assert phase["rounds"] == 2 == stats["batch"]["batches"]
    assert phase["requests"] == sum(asked_online.values())
    assert stats["batch"]["resubmitted_lines"] == stats["batch"]["repeated_answers"] == 0
    assert tables(tmp_path / "batch") == tables(tmp_path / "online")
    assert manifest.extraction.failed_chunks == 0


def test_every_stage_by_batch_builds_the_online_index(corpus, tmp_path):
    """`llm.batch: true`: summaries and reports too; a report waits only for the batch of
    what it needs (its summaries, the sub-community reports it substitutes)."""
    priced = "llm.model=gpt-4o-mini"
    with run_test_server() as online:
        online_manifest = build(online, corpus, tmp_path / "online", priced)
    with run_test_server(batch_delay_s=0.1) as server:
        manifest = build(server, corpus, tmp_path / "batch", priced, "llm.batch=true")
        asked_online = {k for k in server.stats()["by_kind"]
                        if not k.startswith("batch:") and k != "embeddings"}
    assert asked_online == set()  # no chat call went online
    phases = manifest.batch["phases"]
    assert phases["extract"]["rounds"] == 2 and phases["summaries_and_reports"]["rounds"] >= 2
    online_stages = online_manifest.llm_usage.stages
    assert manifest.llm_usage.stages["summaries_and_reports_batch"].calls == \
        online_stages["summarize"].calls + online_stages["reports"].calls
    assert manifest.llm_usage.total.cost_usd < \
        0.7 * online_manifest.llm_usage.total.cost_usd
    reports = ["community", "title", "summary", "rank", "full_content"]
    for out in ("online", "batch"):
        assert IndexStore(str(tmp_path / out)).open().read_table(
            schema.COMMUNITY_REPORTS, reports).sort_by("community").to_pylist() == \
            IndexStore(str(tmp_path / "online")).open().read_table(
                schema.COMMUNITY_REPORTS, reports).sort_by("community").to_pylist()
    assert tables(tmp_path / "batch") == tables(tmp_path / "online")


def test_failed_and_expired_lines_go_again_then_fail_their_chunks(corpus, tmp_path):
    with run_test_server(batch_delay_s=0.1, batch_expired_lines=0.2) as server:
        manifest = build(server, corpus, tmp_path / "expired", "llm.batch=extraction")
        assert server.stats()["batch"]["lines_failed"] > 0
    phase = manifest.batch["phases"]["extract"]
    assert phase["failed_lines"] > 0 and phase["failed_for_good"] == 0
    assert manifest.extraction.failed_chunks == 0  # answered in a later round

    with run_test_server(batch_delay_s=0.1, batch_failed_lines=0.2) as server:
        manifest = build(server, corpus, tmp_path / "failing", "llm.batch=extraction",
                         "llm.batch_max_attempts=1")
        online = {k for k in server.stats()["by_kind"] if not k.startswith("batch:")}
    assert manifest.batch["phases"]["extract"]["failed_for_good"] > 0
    assert 0 < manifest.extraction.failed_chunks < manifest.extraction.chunks
    assert "extract_graph" not in online  # a failed line is not sent online instead
    units = IndexStore(str(tmp_path / "failing")).open().read_table(
        schema.TEXT_UNITS, ["extraction_status", "extraction_error"]).to_pylist()
    failed = [u for u in units if u["extraction_status"] == "failed"]
    assert failed and all("Batch API did not answer" in u["extraction_error"] for u in failed)
    # A rerun against a mended provider asks the failed chunks' requests again, by batch.
    with run_test_server(batch_delay_s=0.1) as mended:
        manifest = build(mended, corpus, tmp_path / "failing", "llm.batch=extraction",
                         "llm.batch_max_attempts=1")
        assert mended.stats()["batch"]["lines"] > 0
    assert manifest.extraction.failed_chunks == 0


def test_the_enqueued_token_limit_is_kept_or_learned(corpus, tmp_path):
    with run_test_server(batch_delay_s=0.1, batch_queue_tokens=6_000) as server:
        build(server, corpus, tmp_path / "known", "llm.batch=extraction",
              "llm.batch_queue_tokens=6000")
        assert server.stats()["batch"].get("queue_limited", 0) == 0
        assert server.stats()["batch"]["batches"] > 2  # cut to fit the limit
    with run_test_server(batch_delay_s=0.1, batch_queue_tokens=6_000) as server:
        manifest = build(server, corpus, tmp_path / "learned", "llm.batch=extraction")
        assert server.stats()["batch"]["queue_limited"] > 0  # refused, then halved
    assert manifest.extraction.failed_chunks == 0
    assert tables(tmp_path / "learned") == tables(tmp_path / "known")


@pytest.mark.parametrize("mode, killed_at", [("extraction", 2), ("true", 3)])
def test_a_build_killed_mid_round_reattaches_and_submits_nothing_twice(mode, killed_at, corpus,
                                                                      tmp_path):
    """Killed waiting on its second extraction round's batch, or (`llm.batch: true`) on the
    first round of summaries and reports."""
    out = tmp_path / "index"
    with run_test_server(batch_delay_s=4) as server:
        command = [sys.executable, "-m", "graphrag_ray", "index", "--input", str(corpus),
                   "--output", str(out), *sum((["--set", s] for s in settings(
                       server, f"llm.batch={mode}", "llm.batch_poll_s=0.2")), [])]
        victim = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        deadline = time.monotonic() + 300
        while server.stats()["batch"].get("batches", 0) < killed_at:  # waiting on it
            assert victim.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        tree = list(descendants(victim.pid))
        os.killpg(victim.pid, signal.SIGKILL)
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        victim.wait()
        # In a session of its own, as the killed run was: under Linux's autogroup scheduling a
        # build left in the test's session shares its CPU with whatever else that session
        # runs (two busy loops there made the resumed Ray build 10x slower than the first).
        finished = subprocess.run(command, capture_output=True, text=True, timeout=400,
                                  start_new_session=True)
        assert finished.returncode == 0, finished.stderr[-2000:]
        assert "re-attached to 1 batches" in finished.stderr
        stats = server.stats()["batch"]
    assert stats["resubmitted_lines"] == 0 and stats["repeated_answers"] == 0
    manifest = IndexStore(str(out)).open().read_manifest()
    phases = manifest.batch["phases"]
    # The resumed build waited on the batch it had made, then went on.
    assert stats["batches"] == sum(phase["batches"] for phase in phases.values()) + killed_at
    assert manifest.extraction.failed_chunks == 0
    if mode == "true":
        assert set(manifest.reports_by_generation) <= {"llm", "extractive"}


def test_a_dry_run_prices_extraction_at_batch_prices(corpus):
    from graphrag_ray.index.estimate import estimate_index, format_estimate

    common = ["runtime.engine=local", "extraction.method=llm", "llm.api_base=http://unused/v1",
              "llm.requests_per_minute=500"]
    online = estimate_index(str(corpus), load_config(None, common))
    batch = estimate_index(str(corpus), load_config(None, common + ["llm.batch=extraction"]))
    assert batch["stages"]["extract"]["calls"] == online["stages"]["extract"]["calls"]
    assert batch["stages"]["extract"]["cost_usd"] == pytest.approx(
        online["stages"]["extract"]["cost_usd"] / 2, rel=0.01)
    assert batch["stages"]["summarize"]["cost_usd"] == online["stages"]["summarize"]["cost_usd"]
    assert batch["batch"] == {"stages": ["extract"], "rounds": 2,
                              "online_cost_usd": online["stages"]["extract"]["cost_usd"]}
    assert batch["minutes_at_rate_limits"] < online["minutes_at_rate_limits"]
    assert "by batch (llm.batch): extract at batch prices; extraction in 2 rounds" in \
        format_estimate(batch)


def test_azure_batches_use_its_paths_and_deployment(corpus, tmp_path):
    with run_test_server(batch_delay_s=0.1, keep_requests=True) as server:
        manifest = build(server, corpus, tmp_path / "azure", "llm.batch=extraction",
                         f"llm.api_base={server.url.removesuffix('/v1')}",
                         "llm.api_version=2024-10-21", "llm.model=my-deployment")
        models = {r["model"] for r in server.chat_requests() if r.get("batch")}
    phase = manifest.batch["phases"]["extract"]
    assert phase["answered"] == phase["requests"] > 0
    assert models == {"my-deployment"} and manifest.extraction.failed_chunks == 0


def _embedding_settings(server):
    return [f"embeddings.api_base={server.url}", "embeddings.model=text-embedding-3-small",
            "embeddings.batch_size=8", "embeddings.batch_poll_s=0.05"]


def _vectors(out):
    version = IndexStore(str(out)).open()
    return {name: version.read_table(name).sort_by("id").to_pylist()
            for name in (schema.ENTITY_DESCRIPTION_EMBEDDINGS, schema.REPORT_EMBEDDINGS,
                         schema.TEXT_UNIT_EMBEDDINGS)}


def test_embeddings_by_batch_write_the_online_vectors_at_batch_prices(corpus, tmp_path):
    """`embeddings.batch: true`: once the texts are final, one round of batches to the
    embeddings endpoint (one line per text), none online; the same vectors."""
    with run_test_server() as online:
        online_manifest = build(online, corpus, tmp_path / "online", *_embedding_settings(online))
        assert online.stats()["by_kind"]["embeddings"] > 0
    with run_test_server(batch_delay_s=0.1, keep_requests=True) as server:
        manifest = build(server, corpus, tmp_path / "batch", *_embedding_settings(server),
                         "embeddings.batch=true")
        kinds = server.stats()["by_kind"]
        stats = server.stats()["batch"]
    texts = sum(len(rows) for rows in _vectors(tmp_path / "online").values())
    assert "embeddings" not in kinds  # no embeddings request went online
    assert kinds["batch:embeddings"] == stats["lines"] <= texts  # a text shared is sent once
    assert kinds["extract_graph"] > 0 and "batch:extract_graph" not in kinds  # chat online
    phase = manifest.batch["phases"]["embed"]
    assert phase["rounds"] == 1 and phase["answered"] == phase["requests"] == stats["lines"]
    stages, online_stages = manifest.llm_usage.stages, online_manifest.llm_usage.stages
    assert stages["embed"].calls == 0
    assert stages["embed_batch"].prompt_tokens == pytest.approx(
        online_stages["embed"].prompt_tokens, rel=0.05)
    assert stages["embed_batch"].cost_usd == pytest.approx(
        online_stages["embed"].cost_usd / 2, rel=0.05)
    assert _vectors(tmp_path / "batch") == _vectors(tmp_path / "online")
    assert tables(tmp_path / "batch") == tables(tmp_path / "online")


def test_embeddings_the_batch_api_failed_stop_the_build_and_a_rerun_asks_only_those(
        corpus, tmp_path):
    from graphrag_ray.errors import LLMError

    out = tmp_path / "index"
    with run_test_server(batch_delay_s=0.1, batch_failed_lines=0.3) as server:
        with pytest.raises(LLMError, match=r"did not answer \d+ embeddings requests"):
            build(server, corpus, out, *_embedding_settings(server), "embeddings.batch=true",
                  "embeddings.batch_max_attempts=1")
        failed = server.stats()["batch"]["lines_failed"]
        assert "embeddings" not in server.stats()["by_kind"]  # not sent online instead
    assert failed > 0
    with run_test_server(batch_delay_s=0.1) as mended:
        manifest = build(mended, corpus, out, *_embedding_settings(mended),
                         "embeddings.batch=true")
        assert mended.stats()["batch"]["lines"] == failed  # only the unanswered texts
    assert manifest.batch["phases"]["embed"]["answered"] == failed


def test_a_dry_run_prices_embeddings_by_batch(corpus):
    from graphrag_ray.index.estimate import estimate_index, format_estimate

    common = ["runtime.engine=local", "extraction.method=llm", "llm.api_base=http://unused/v1",
              "embeddings.api_base=http://unused/v1"]
    online = estimate_index(str(corpus), load_config(None, common))
    batch = estimate_index(str(corpus), load_config(None, common + ["embeddings.batch=true"]))
    assert batch["stages"]["embed"]["cost_usd"] == pytest.approx(
        online["stages"]["embed"]["cost_usd"] / 2, rel=0.01)
    assert batch["stages"]["extract"]["cost_usd"] == online["stages"]["extract"]["cost_usd"]
    assert batch["batch"]["stages"] == ["embed"] and batch["batch"]["rounds"] == 0
    assert "by batch (embeddings.batch): embed at batch prices; the embeddings in one round" \
        in format_estimate(batch)
