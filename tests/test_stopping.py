"""A stop (Ctrl-C, SIGTERM) ends paid work: no request leaves the process after it, threads
waiting in the budget's line or in a back-off wake, and a build exits within seconds saying
what it did, on both engines."""

import shutil
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

from graphrag_ray import stopping
from graphrag_ray.config import RuntimeConfig, load_config
from graphrag_ray.distributed.workers import PoolShape, map_table
from graphrag_ray.llm.client import ChatClient
from graphrag_ray.llm.rate_limiter import LocalRateLimiter
from graphrag_testkit.llm_server import run_test_server

from conftest import CAROL_DIR, wait_for_calls


@pytest.fixture(autouse=True)
def no_stop_left_behind():
    stopping.clear()
    yield
    stopping.clear()


def test_a_stop_raises_where_work_would_pay_and_wakes_a_wait():
    stopping.check()
    started = time.monotonic()
    stopping.wait(0.05)  # no stop: the whole wait
    assert time.monotonic() - started >= 0.05
    threading.Timer(0.1, stopping.request_stop, ["terminated"]).start()
    started = time.monotonic()
    with pytest.raises(stopping.StopRequested, match="terminated"):
        stopping.wait(30)
    assert time.monotonic() - started < 5
    with pytest.raises(stopping.StopRequested):
        stopping.check()
    assert not isinstance(stopping.StopRequested(), Exception)  # no `except Exception` eats it


def test_after_a_stop_the_client_sends_nothing():
    with run_test_server() as server:
        config = load_config(None, [f"llm.api_base={server.url}", "llm.model=test-model"]).llm
        client = ChatClient(config)
        client.complete([{"role": "user", "content": "hello"}], max_tokens=10)
        stopping.request_stop()
        with pytest.raises(stopping.StopRequested):
            client.complete([{"role": "user", "content": "again"}], max_tokens=10)
        assert server.stats()["requests"] == 1


def test_a_call_waiting_in_the_budgets_line_goes_no_further():
    """Three requests a minute: calls soon wait in the budget's line; a stop wakes them."""
    with run_test_server() as server:
        config = load_config(None, [f"llm.api_base={server.url}", "llm.model=test-model",
                                    "llm.requests_per_minute=3"]).llm
        client = ChatClient(config, limiter=LocalRateLimiter(config))
        outcome = []

        def calls():
            try:
                for n in range(10):
                    client.complete([{"role": "user", "content": f"call {n}"}], max_tokens=10)
                outcome.append("all sent")
            except stopping.StopRequested:
                outcome.append("stopped")

        caller = threading.Thread(target=calls)
        caller.start()
        sent = -1
        while sent != server.stats()["requests"]:  # until the caller waits in line
            sent = server.stats()["requests"]
            time.sleep(1.0)
        stopping.request_stop()
        caller.join(timeout=10)
        assert outcome == ["stopped"] and server.stats()["requests"] == sent < 10


def test_a_retry_waiting_out_its_back_off_goes_no_further():
    with run_test_server(fail_first=5, fail_status=503) as server:
        config = load_config(None, [f"llm.api_base={server.url}", "llm.model=test-model",
                                    "llm.max_retries=5", "llm.retry_base_delay_s=30"]).llm
        threading.Thread(target=_stop_once, args=(lambda: server.stats()["requests"],)).start()
        started = time.monotonic()
        with pytest.raises(stopping.StopRequested):
            ChatClient(config).complete([{"role": "user", "content": "hi"}], max_tokens=10)
        assert time.monotonic() - started < 10 and server.stats()["requests"] == 1


def _stop_once(happened, deadline_s: float = 60) -> None:
    """Asks for a stop once `happened()` (polled), or at the deadline."""
    deadline = time.monotonic() + deadline_s
    while not happened() and time.monotonic() < deadline:
        time.sleep(0.02)
    stopping.request_stop()


class _PaidWorker:
    """Each batch pays for a call that takes a while; the stop comes while the first four
    are in flight."""
    paid = 0
    lock = threading.Lock()

    def __call__(self, batch: pa.Table) -> pa.Table:
        stopping.check()
        with self.lock:
            type(self).paid += 1
            if type(self).paid == 4:
                stopping.request_stop()
        time.sleep(0.3)  # the call in flight, which a stop does not cut short
        return batch


def test_a_stopped_stage_pays_for_no_queued_batch():
    table = pa.table({"id": list(range(40))})
    _PaidWorker.paid = 0
    started = time.monotonic()
    with pytest.raises(stopping.StopRequested):
        map_table(table, _PaidWorker, {}, RuntimeConfig(engine="local"),
                  output_schema=table.schema, batch_size=1, shape=PoolShape(4))
    assert _PaidWorker.paid == 4 and time.monotonic() - started < 5


# The stage a signal comes in and the request kind that says the build reached it.
SIGNAL_CASES = [
    ("local", "SIGINT", "extract_graph"),
    ("local", "SIGTERM", "community_report"),
    ("ray", "SIGTERM", "extract_graph"),
    ("ray", "SIGINT", "summarize"),
]


@pytest.mark.slow
@pytest.mark.parametrize("engine, name, kind", SIGNAL_CASES)
def test_a_signal_stops_paid_work_within_seconds(tmp_path, engine, name, kind):
    """Against a provider with latency: after the signal no request arrives (one already
    on the wire may, within the first moments), the process exits within 10 s with our
    message and no stack, the cache keeps what was answered and nothing is published."""
    out = tmp_path / "index"
    # The latency where the signal comes: the stages before it run at full speed.
    with run_test_server(latency_ms=300, latency_kinds=kind) as server:
        victim = subprocess.Popen(
            [sys.executable, "-m", "graphrag_ray", "index", "--input", str(CAROL_DIR),
             "--output", str(out), "--set", "extraction.method=llm",
             "--set", f"llm.api_base={server.url}", "--set", f"runtime.engine={engine}",
             "--set", "runtime.num_cpus=2", "--set", "llm.unlimited_concurrency=8"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_calls(server, kind, 3, victim)
        signalled = time.time()
        victim.send_signal(getattr(signal, name))
        _, err = victim.communicate(timeout=120)
        exit_s = time.time() - signalled
        late = [entry for entry in server.request_log() if entry[0] > signalled + 2.0]
    assert victim.returncode == 128 + getattr(signal, name), err[-3000:]
    assert exit_s < 10, err[-3000:]
    assert late == []
    lines = err.strip().splitlines()
    assert lines[-1].startswith("interrupted: stopped" if name == "SIGINT" else
                                "terminated (SIGTERM): stopped")
    assert any(line.startswith("stopped in stage ") and "LLM calls answered" in line
               for line in lines), err[-3000:]
    assert "Traceback" not in err and "Unhandled error" not in err and "*** SIG" not in err
    assert list((out / "versions").iterdir()) == []
    assert any(p.is_file() for p in (out / "cache").rglob("*"))


@pytest.mark.slow
def test_a_second_signal_ends_the_process_at_once(tmp_path):
    """Every request hangs: the first signal stops, the second does not wait for anything."""
    with run_test_server(rate_timeout=1.0, timeout_sleep_s=120) as server:
        victim = subprocess.Popen(
            [sys.executable, "-m", "graphrag_ray", "index", "--input", str(CAROL_DIR),
             "--output", str(tmp_path / "index"), "--set", "extraction.method=llm",
             "--set", f"llm.api_base={server.url}", "--set", "runtime.engine=local"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_calls(server, "extract_graph", 2, victim)
        victim.send_signal(signal.SIGINT)
        victim.send_signal(signal.SIGINT)
        _, err = victim.communicate(timeout=60)
    assert victim.returncode == 130
    assert "Traceback" not in err
    shutil.rmtree(tmp_path / "index", ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_the_version_a_resumed_build_publishes_counts_what_the_stopped_run_paid(tmp_path, how):
    """The bill matches the provider's log: every call it answered is in the manifest, this
    run's or an earlier run's (a call in flight when the run was stopped is said apart)."""
    from graphrag_ray.storage import IndexStore

    out = tmp_path / "index"
    command = [sys.executable, "-m", "graphrag_ray", "index", "--input", str(CAROL_DIR),
               "--output", str(out), "--set", "extraction.method=llm",
               "--set", "runtime.engine=local", "--set", "llm.unlimited_concurrency=2"]
    with run_test_server(latency_ms=300) as server:  # extraction alone takes ~30 s
        command += ["--set", f"llm.api_base={server.url}"]
        victim = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        wait_for_calls(server, "extract_graph", 10, victim)
        time.sleep(6)  # a flush of the run's record (every 5 s) after the calls began
        victim.send_signal(getattr(signal, how))
        victim.communicate(timeout=120)
        server.switches.latency_ms = 0  # the resumed run: at full speed
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        billed, = server.stats()["usage_by_model"].values()
    usage = IndexStore(str(out)).open().read_manifest().llm_usage
    earlier = usage.earlier_runs
    assert earlier and len(earlier["runs"]) == 1 and earlier["total"]["calls"] > 0
    counted = usage.total.calls + earlier["total"]["calls"]
    # SIGKILL: the calls since the last flush of the record are lost with the process.
    lost = earlier["unsettled_calls"] + (2 * 20 if how == "SIGKILL" else 0)
    assert counted <= billed["calls"] <= counted + lost
    if how == "SIGTERM":
        assert usage.total.prompt_tokens + earlier["total"]["prompt_tokens"] <= \
            billed["prompt_tokens"]
    assert "earlier runs of this index that published nothing (1)" in done.stdout


@pytest.mark.slow
def test_a_killed_builds_folder_is_listed_as_unfinished_and_removed_by_the_next_build(
        tmp_path, capsys):
    from graphrag_ray.cli import main

    out = tmp_path / "index"
    offline = ["index", "--input", str(CAROL_DIR), "--output", str(out),
               "--set", "runtime.engine=local"]
    assert main(offline) == 0
    with run_test_server(latency_ms=300) as server:
        victim = subprocess.Popen(
            [sys.executable, "-m", "graphrag_ray", "index", "--input", str(CAROL_DIR),
             "--output", str(out), "--set", "extraction.method=llm", "--set",
             f"llm.api_base={server.url}", "--set", "runtime.engine=local"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_calls(server, "extract_graph", 3, victim)
        victim.kill()
        victim.wait()
    capsys.readouterr()
    assert main(["versions", "--index", str(out)]) == 0
    assert "unfinished: its build was killed" in capsys.readouterr().out
    assert len(list((out / "versions").iterdir())) == 2
    assert main(offline) == 0
    assert "removed the unfinished version" in capsys.readouterr().err
    assert main(["versions", "--index", str(out)]) == 0
    assert "unfinished" not in capsys.readouterr().out
