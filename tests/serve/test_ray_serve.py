"""`graphrag-ray serve` as a Ray Serve application, as a user starts it (the CLI in a process
of its own, a local Ray instance under it): two replicas share the load and the metrics, a
newly published version is switched to under concurrent requests with no failure, a killed
replica is replaced while the client's retries keep every request answered, and SIGTERM
stops it all."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest
from conftest import descendants, free_port
from served_index import no_serve_keys, publish_again  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.slow  # starts Ray and a subprocess


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read()), dict(response.headers)


@pytest.fixture(scope="module")
def service(small_index, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray-serve")
    index = folder / "index"
    shutil.copytree(small_index, index)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "GRAPHRAG_SERVE_API_KEYS"}
    process = subprocess.Popen(
        [sys.executable, "-m", "graphrag_ray", "serve", "--index", str(index), "--port",
         str(port), "--replicas", "2", "--set", "serve.poll_s=0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env=env)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(iter(process.stdout.readline, "")),
                              daemon=True)
    reader.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while not any(line.startswith("serving ") for line in output):
        assert process.poll() is None, "".join(output)[-4000:]
        assert time.monotonic() < deadline, "not serving after 240 s:\n" + "".join(output)[-4000:]
        time.sleep(0.2)
    try:
        yield {"url": url, "process": process, "index": index, "folder": folder,
               "output": output}
    finally:
        below = descendants(process.pid)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
        for pid in below:  # Ray's processes are not in the command's process group
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _ask(client, model="graphrag-local"):
    reply = client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": "Who is Scrooge?"}])
    return reply.headers["x-graphrag-replica"], reply.parse()


def test_two_replicas_share_requests_and_metrics(service):
    client = openai.OpenAI(base_url=service["url"] + "/v1", api_key="unused", max_retries=0)
    with ThreadPoolExecutor(8) as pool:
        answered = list(pool.map(lambda _: _ask(client), range(60)))
    replicas = {replica for replica, _ in answered}
    assert len(replicas) == 2, replicas
    assert all(reply.choices[0].message.content for _, reply in answered)
    # Any replica's /metrics counts both replicas' requests (summed by one actor).
    deadline = time.monotonic() + 20
    while True:
        with urllib.request.urlopen(service["url"] + "/metrics", timeout=30) as response:
            text = response.read().decode()
        line = next((l for l in text.splitlines() if l.startswith(
            'graphrag_serve_requests_total{endpoint="/v1/chat/completions",method="local",'
            'status="200"}')), "x 0")
        if float(line.split()[-1]) >= 60 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert float(line.split()[-1]) == 60
    assert "graphrag_serve_replicas 2" in text


def test_a_new_version_is_switched_to_under_load_with_no_failure(service):
    client = openai.OpenAI(base_url=service["url"] + "/v1", api_key="unused", max_retries=0)
    before, _ = _get(service["url"] + "/v1/index")
    seen: dict[str, set] = {}
    failures, stop = [], threading.Event()

    def keep_asking():
        while not stop.is_set():
            try:
                replica, reply = _ask(client)
                seen.setdefault(reply.system_fingerprint, set()).add(replica)
            except Exception as exc:  # noqa: BLE001 - counted: the goal is none
                failures.append(repr(exc))

    askers = [threading.Thread(target=keep_asking) for _ in range(8)]
    for asker in askers:
        asker.start()
    try:
        published = publish_again(service["index"], 20_000, service["folder"] / "input-2")
        new = f"graphrag-ray:{published}"
        deadline = time.monotonic() + 60
        while len(seen.get(new, ())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)  # requests keep arriving after both switched
    finally:
        stop.set()
        for asker in askers:
            asker.join()
    assert failures == []
    assert len(seen.get(new, ())) == 2  # both replicas answer from the new version
    assert set(seen) == {f"graphrag-ray:{before['version']}", new}


def test_a_killed_replica_is_replaced_and_retries_answer(service):
    client = openai.OpenAI(base_url=service["url"] + "/v1", api_key="unused", max_retries=3)
    health, _ = _get(service["url"] + "/healthz")
    victim = health["pid"]
    assert victim in descendants(service["process"].pid)  # ours to kill
    answered, failures, stop = [], [], threading.Event()

    def keep_asking():
        while not stop.is_set():
            try:
                answered.append(_ask(client)[0])
            except Exception as exc:  # noqa: BLE001 - counted
                failures.append(repr(exc))

    askers = [threading.Thread(target=keep_asking) for _ in range(4)]
    for asker in askers:
        asker.start()
    try:
        time.sleep(1)
        os.kill(victim, signal.SIGKILL)
        killed_at = len(answered)
        deadline = time.monotonic() + 120
        # Serve starts a replacement: a third replica id answers.
        while len(set(answered)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop.set()
        for asker in askers:
            asker.join()
    assert failures == [], failures[:3]
    assert len(set(answered[killed_at:])) >= 2 and len(set(answered)) >= 3


def _running(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for its parent does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sigterm_stops_the_service_and_its_ray(service):
    process = service["process"]
    below = descendants(process.pid)
    assert below  # Ray's processes run under it
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=90) == 0, "".join(service["output"])[-3000:]
    deadline = time.monotonic() + 30
    while [pid for pid in below if _running(pid)] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [pid for pid in below if _running(pid)] == []
