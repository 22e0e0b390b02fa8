"""A multi-node Ray cluster on this machine, with the job server, for tests and benchmarks.

    python -m graphrag_testkit.local_cluster --workers 1 --dashboard-port 8265

Prints one JSON line (`{"gcs": ..., "dashboard": ..., "nodes": [...]}`) once every node is
up, then keeps the cluster until its stdin closes (or a line "remove-worker" arrives, which
kills the first worker node without warning, as a lost machine would: its Ray processes
and every worker process they started, all at once). Every node inherits
this process's environment: set RAY_AUTH_MODE/RAY_AUTH_TOKEN and any storage credentials
before starting it, and give `ray job submit` the same token.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from graphrag_testkit import kit_env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_ports(count: int, taken: int | None = None) -> list[int]:
    """`count` distinct free ports, not `taken`: each socket is held until all are picked.
    A port picked and let go can be handed out again at once: the dashboard's and a node's
    metrics port were once the same, and Ray refused to start the cluster."""
    sockets, ports = [], []
    try:
        while len(ports) < count:
            sock = socket.socket()
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            if port != taken and port not in ports:
                ports.append(port)
    finally:
        for sock in sockets:
            sock.close()
    return ports


AGENT_PORTS = ("dashboard_agent_listen_port", "runtime_env_agent_port", "metrics_export_port")


def _agent_ports(ports) -> dict[str, int]:
    """A node's agents on free ports (`ports`: an iterator of them): the defaults are fixed
    numbers, taken by any other Ray instance on this machine, and a node whose agent cannot
    bind cannot take jobs."""
    return {name: next(ports) for name in AGENT_PORTS}


def _wait_for_job_server(address: str, timeout_s: float = 120) -> None:
    """Until a no-op job runs: the job server answers before its agent can take jobs."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client = JobSubmissionClient(address)
            job = client.submit_job(entrypoint="true")
            break
        except (RuntimeError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    while client.get_job_status(job) not in (JobStatus.SUCCEEDED, JobStatus.FAILED,
                                             JobStatus.STOPPED):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the no-op job on {address} did not finish")
        time.sleep(0.2)


def descendants(pid: int) -> list[int]:
    """The processes `pid` started, and theirs (from /proc; empty when it is gone)."""
    found = []
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for thread in threads:
        try:
            children = (thread / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *descendants(child)]
    return found


def gone(pid: int) -> bool:
    """Exited, or a zombie: its descriptors are closed."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def _lose_node(cluster, node, timeout_s: float = 60) -> None:
    """Kill a node the way a lost machine goes: its Ray processes and their worker processes
    at once. A worker left to notice its raylet died could still take a reply, then die before
    recording it: a lost machine has no such moment."""
    started = [info.process.pid for infos in node.all_processes.values() for info in infos]
    pids = [pid for root in started for pid in descendants(root)]
    cluster.remove_node(node, allow_graceful=False)
    kill_at_once(pids, timeout_s)


def kill_at_once(pids: list[int], timeout_s: float) -> None:
    """SIGKILL every one of `pids` (processes we started), then wait until all are gone."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


class ClusterProcess:
    """This module's cluster run in a child process, for a test or a benchmark: `info` is its
    JSON line (gcs, dashboard, nodes), `remove_worker()` loses a worker node, `close()`
    shuts it down. Its dashboard takes a free port (another Ray on the machine has the
    default); every node gets `env` (token auth, storage credentials)."""

    def __init__(self, workers: int, env: dict[str, str], cwd: str | Path | None = None):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graphrag_testkit.local_cluster", "--workers",
             str(workers), "--dashboard-port", str(free_port())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=kit_env(env), cwd=cwd)
        self.info = json.loads(self.process.stdout.readline())

    def remove_worker(self) -> None:
        self.process.stdin.write("remove-worker\n")
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        if reply != {"removed": True}:
            raise RuntimeError(f"the cluster did not remove a worker node: {reply}")

    def close(self, timeout_s: float = 120) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=timeout_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=1, help="worker nodes besides the head")
    parser.add_argument("--head-cpus", type=float, default=1)
    parser.add_argument("--worker-cpus", type=float, default=1)
    parser.add_argument("--dashboard-port", type=int, default=8265)
    args = parser.parse_args(argv)

    from ray.cluster_utils import Cluster

    ports = iter(free_ports(len(AGENT_PORTS) * (1 + args.workers), args.dashboard_port))
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": args.head_cpus, "include_dashboard": True,
        "dashboard_host": "127.0.0.1", "dashboard_port": args.dashboard_port,
        **_agent_ports(ports)})
    workers = [cluster.add_node(num_cpus=args.worker_cpus, **_agent_ports(ports))
               for _ in range(args.workers)]
    cluster.wait_for_nodes()
    dashboard = f"http://127.0.0.1:{args.dashboard_port}"
    _wait_for_job_server(dashboard)
    print(json.dumps({"gcs": cluster.address,
                      "dashboard": dashboard,
                      "nodes": [cluster.head_node.node_id, *(w.node_id for w in workers)]}),
          flush=True)
    try:
        for line in sys.stdin:
            if line.strip() == "remove-worker" and workers:
                _lose_node(cluster, workers.pop(0))
                print(json.dumps({"removed": True}), flush=True)
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
