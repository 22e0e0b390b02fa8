"""The cluster path as users take it: `ray job submit --working-dir . -- python -m graphrag_ray
index ...` against a two-node local cluster with the job server and token auth, reading its
input from S3 and writing the index and cache to S3 (moto); an actor killed and a worker node
lost in the middle of extraction."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphrag_ray import GraphIndex, schema
from graphrag_ray.index.reports.report_worker import SMALL_COMMUNITY
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server
from graphrag_testkit.local_cluster import ClusterProcess

from conftest import (descendants, finish, kill_with_no_answer_in_transit, llm_config,
                      repeated_calls, wait_for_calls)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def cluster_env(s3_server):
    """Token auth on every node and for every client, as Ray 2.60 wants it; S3 credentials
    and endpoint in the nodes' environment, as instance roles would provide them."""
    env = {**os.environ, **s3_server, "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env.pop("RAY_ADDRESS", None)
    return env


def _upload_corpus(bucket: str, folder: Path) -> str:
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem()
    for path in folder.iterdir():
        fs.put(str(path), f"{bucket}/corpus/{path.name}")
    return f"s3://{bucket}/corpus/"


def _index_args(server, source: str, output: str) -> list[str]:
    return ["index", "--input", source, "--output", output, "--set", "extraction.method=llm",
            "--set", f"llm.api_base={server.url}", "--set", "llm.model=test-model",
            "--set", "extraction.max_gleanings=0", "--set", "runtime.engine=ray",
            "--set", "runtime.num_workers=2", "--set", "llm.concurrent_requests=16"]


def test_ray_job_submit_indexes_from_s3_to_s3(cluster_env, s3_bucket, carol_excerpt):
    source = _upload_corpus(s3_bucket, carol_excerpt)
    output = f"s3://{s3_bucket}/indexes/carol"
    cluster = ClusterProcess(1, cluster_env, cwd=REPO)
    try:
        address = cluster.info["dashboard"]
        with run_test_server(latency_ms=20) as server:
            job_id = f"graphrag-{secrets.token_hex(4)}"
            submitted = subprocess.run(
                ["ray", "job", "submit", "--address", address, "--submission-id", job_id,
                 "--working-dir", str(REPO), "--", "python", "-m", "graphrag_ray",
                 *_index_args(server, source, output)],
                capture_output=True, text=True, env=cluster_env, timeout=300)
            assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-3000:]
            calls = server.stats()["successful_requests"]
            logs = subprocess.run(["ray", "job", "logs", "--address", address, job_id],
                                  capture_output=True, text=True, env=cluster_env, timeout=60)
            assert "[extract] done in" in logs.stdout and "index version" in logs.stdout

            index = GraphIndex.open(output, config=llm_config(server))
            assert index.manifest.extraction.failed_chunks == 0
            assert index.manifest.config["runtime"]["engine"] == "ray"
            assert calls == index.manifest.llm_usage.total.calls > 0
            assert index.global_search("Who is Scrooge?", level=0).sources.reports

            # A client without the cluster's token is turned away.
            wrong = {**cluster_env, "RAY_AUTH_TOKEN": secrets.token_hex(32)}
            denied = subprocess.run(["ray", "job", "list", "--address", address],
                                    capture_output=True, text=True, env=wrong, timeout=60)
            assert denied.returncode != 0 and "authentication" in denied.stderr.lower()

            # A failing job exits non-zero, with our error as the last log line.
            failed = subprocess.run(
                ["ray", "job", "submit", "--address", address, "--working-dir", str(REPO), "--",
                 "python", "-m", "graphrag_ray", "index", "--input", f"s3://{s3_bucket}/nothing/",
                 "--output", output],
                capture_output=True, text=True, env=cluster_env, timeout=300)
            assert failed.returncode != 0
            assert f"error: input not found: s3://{s3_bucket}/nothing/" in failed.stdout
    finally:
        cluster.close(timeout_s=60)
    assert IndexStore(output).versions() == [index.manifest.version]  # the failure published nothing


def test_ray_job_stop_stops_paid_work_within_seconds(cluster_env, tmp_path, carol_excerpt):
    """`ray job stop` sends the driver SIGTERM and kills it 3 s later (Ray's default
    RAY_JOB_STOP_WAIT_TIME_S): within them, no worker on any node sends another request, the
    unpublished version is removed and the job says so."""
    output = tmp_path / "index"
    cluster = ClusterProcess(1, cluster_env, cwd=REPO)
    try:
        address = cluster.info["dashboard"]
        with run_test_server(latency_ms=300, latency_kinds="extract_graph") as server:
            job_id = f"graphrag-{secrets.token_hex(4)}"
            submitted = subprocess.run(
                ["ray", "job", "submit", "--no-wait", "--address", address, "--submission-id",
                 job_id, "--working-dir", str(REPO), "--", "python", "-m", "graphrag_ray",
                 *_index_args(server, str(carol_excerpt), str(output))],
                capture_output=True, text=True, env=cluster_env, timeout=300)
            assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-3000:]
            deadline = time.monotonic() + 480
            while server.stats()["by_kind"].get("extract_graph", 0) < 4:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            stopped_at = time.time()
            subprocess.run(["ray", "job", "stop", "--address", address, job_id],
                           capture_output=True, text=True, env=cluster_env, timeout=120)
            time.sleep(3)  # what a worker left running would send meanwhile
            late = [entry for entry in server.request_log() if entry[0] > stopped_at + 2.0]
            logs = subprocess.run(["ray", "job", "logs", "--address", address, job_id],
                                  capture_output=True, text=True, env=cluster_env, timeout=60)
    finally:
        cluster.close(timeout_s=60)
    assert late == []
    assert "terminated (SIGTERM): stopped" in logs.stdout, logs.stdout[-3000:]
    assert list((output / "versions").iterdir()) == []


def _extraction_actor_pids(cluster: ClusterProcess) -> list[int]:
    return [pid for pid, command in descendants(cluster.process.pid).items()
            if command.startswith("ray::") and "ExtractionWorker" in command]


def _kill_extraction_actor(cluster: ClusterProcess) -> None:
    """SIGKILL one of this cluster's extraction actors and wait until it is dead and its
    sockets are closed."""
    pids = _extraction_actor_pids(cluster)
    assert pids, "no extraction actor process found"
    os.kill(pids[0], 9)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pids[0]}/status").read_text()
        except OSError:
            break
        if "\nState:\tZ" in status:
            break
        time.sleep(0.01)
    else:
        raise AssertionError(f"actor process {pids[0]} survived SIGKILL")


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("fault, during", [("extraction actor killed", "extract_graph"),
                                           ("worker node lost", "extract_graph"),
                                           ("worker node lost", "summarize")])
def test_faults_mid_build_lose_nothing_and_repeat_no_call(fault, during, cluster_env, tmp_path,
                                                          carol_excerpt):
    """Lost mid-summaries: the pool's actors restart on the head and their calls run again,
    reading the description blocks (a block on the lost node is rebuilt from its lineage).
    Time: 31 s alone, up to 8 min beside two busy loops (Ray's workers run at nice 15); a
    run with more load than that took over 7 min after the kill with every actor still
    working (its stacks), hence 12 min for the driver to finish after it."""
    cluster = ClusterProcess(1, cluster_env, cwd=REPO)
    output = tmp_path / "index"
    try:
        # The latency where the fault comes: the other stages at full speed.
        with run_test_server(latency_ms=150, latency_kinds=during) as server:
            driver = subprocess.Popen(
                [sys.executable, "-m", "graphrag_ray", *_index_args(server, str(carol_excerpt),
                                                                    str(output))],
                env={**cluster_env, "RAY_ADDRESS": cluster.info["gcs"]}, cwd=REPO,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            wait_for_calls(server, during, 4 if during == "summarize" else 8, driver)
            killed_at = time.time()
            kill_with_no_answer_in_transit(
                server, cluster.remove_worker if fault == "worker node lost"
                else lambda: _kill_extraction_actor(cluster), output / "cache",
                roots=(cluster.process.pid, driver.pid))
            log = finish(driver, 720, cluster.process.pid)
            assert driver.returncode == 0, log[-3000:]
            stats = server.stats()
            repeats = repeated_calls(server, killed_at)
    finally:
        cluster.close(timeout_s=60)
    assert stats["repeated_successes"] == 0, repeats
    store = IndexStore(str(output)).open()
    units = store.read_table(schema.TEXT_UNITS)
    assert len(set(units.column("id").to_pylist())) == units.num_rows
    assert set(units.column("extraction_status").to_pylist()) == {"ok"}
    manifest = store.read_manifest()
    assert manifest.extraction.chunks == units.num_rows
    # Every call the provider billed is in the manifest, once, whatever Ray retried: answered
    # calls in the usage, and those whose worker died before the answer as unsettled (of
    # those, the ones killed before their request went out were never billed).
    usage = manifest.llm_usage
    billed = stats["usage_by_model"]["test-model"]["calls"]
    assert usage.total.calls <= billed \
        <= usage.total.calls + usage.rate_limiter["unsettled_calls"]
    reports = store.read_table(schema.COMMUNITY_REPORTS)
    assert reports.num_rows == store.read_table(schema.COMMUNITIES).num_rows
    # No fallback: every report by the LLM, but those of communities too small to ask for.
    assert set(reports.column("generation").to_pylist()) - {SMALL_COMMUNITY} == {"llm"}
    entities = store.read_table(schema.ENTITIES, ["description", "descriptions"])
    summarized = [d for d, many in zip(entities.column("description").to_pylist(),
                                       entities.column("descriptions").to_pylist()) if len(many) > 1]
    assert summarized and all(summarized)
