"""An autoscaling Ray cluster on this machine: Ray's own autoscaler adding and removing nodes
(its fake multi-node provider), for the autoscaling demo, benchmarks and tests.

    python -m graphrag_testkit.autoscaling_cluster --max-workers 3 --worker-cpus 1

The head advertises `CPU: 0`, as `cluster/aws.yaml`'s does, and one worker type
(`llm_workers`, min 0) is added by the autoscaler when tasks or actors ask for CPU and removed
after `--idle-timeout-s` without any. Prints one JSON line once the head is up
(`{"gcs": ..., "env": {...}}`: what a client needs to join, token included), then a line
`{"nodes": N, "at": seconds since start, "time": epoch seconds}` each time the number of live nodes changes. Reads commands on
stdin: `remove-worker` kills one worker node at once, its Ray processes and their workers, as a
lost spot instance goes (answered `{"removed": node id}`, or `{"removed": null}` when there is
none); closing stdin stops the cluster.

Ray's `AutoscalingCluster` helper would do the same but starts and stops with
`ray stop --force`, which kills every Ray process on the machine, other people's included;
this one touches only the processes it started (one process group), on ports it picked free,
with its own temporary directory and auth token.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from graphrag_testkit.local_cluster import descendants, free_ports, kill_at_once


def autoscaling_config(gcs_port: int, worker_cpus: float, max_workers: int,
                       idle_timeout_s: float, upscaling_speed: float) -> dict:
    """The launcher's cluster config, for the fake provider: a CPU-0 head and `llm_workers`."""
    return {
        "cluster_name": "graphrag-ray-local",
        "max_workers": max_workers,
        "upscaling_speed": upscaling_speed,
        "idle_timeout_minutes": idle_timeout_s / 60,
        "provider": {"type": "fake_multinode", "use_node_id_as_ip": True,
                     "disable_node_updaters": True, "disable_launch_config_check": True,
                     # Workers join this head, not a default port that another Ray may hold.
                     "gcs_address": f"127.0.0.1:{gcs_port}"},
        "available_node_types": {
            "ray.head.default": {"resources": {"CPU": 0}, "node_config": {}, "max_workers": 0},
            "llm_workers": {"resources": {"CPU": worker_cpus}, "node_config": {},
                            "min_workers": 0, "max_workers": max_workers},
        },
        "head_node_type": "ray.head.default",
        "auth": {}, "docker": {}, "file_mounts": {}, "cluster_synced_files": [],
        "file_mounts_sync_continuously": False, "rsync_exclude": [], "rsync_filter": [],
        "initialization_commands": [], "setup_commands": [], "head_setup_commands": [],
        "worker_setup_commands": [], "head_start_ray_commands": [],
        "worker_start_ray_commands": [],
    }


class AutoscalingCluster:
    """The head (`ray start --head --block` in a process group of its own) and its autoscaler;
    worker nodes are the autoscaler's children, so the group holds every process started."""

    def __init__(self, max_workers: int, worker_cpus: float = 1, idle_timeout_s: float = 10,
                 upscaling_speed: float = 1.0, env: dict | None = None):
        self.directory = Path(tempfile.mkdtemp(prefix="graphrag-autoscaling-"))
        port, agent, runtime_env, metrics = free_ports(4)
        self.gcs = f"127.0.0.1:{port}"
        # RAY_TMPDIR: the head's "current cluster" file stays in our directory, so no other
        # `ray.init()` on this machine finds (and joins) this cluster.
        self.env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                    "RAY_TMPDIR": str(self.directory)}
        config = self.directory / "autoscaling.json"
        config.write_text(json.dumps(autoscaling_config(port, worker_cpus, max_workers,
                                                        idle_timeout_s, upscaling_speed)))
        head_env = {**(env or os.environ), **self.env, "RAY_FAKE_CLUSTER": "1",
                    "AUTOSCALER_UPDATE_INTERVAL_S": "1"}
        head_env.pop("RAY_ADDRESS", None)
        self.head = subprocess.Popen(
            ["ray", "start", "--head", "--block", f"--autoscaling-config={config}",
             f"--port={port}", "--num-cpus=0", f"--temp-dir={self.directory / 'ray'}",
             "--include-dashboard=false", "--disable-usage-stats",
             f"--dashboard-agent-listen-port={agent}",
             f"--runtime-env-agent-port={runtime_env}", f"--metrics-export-port={metrics}"],
            env=head_env, stdout=(self.directory / "head.log").open("w"),
            stderr=subprocess.STDOUT, start_new_session=True)

    def worker_raylets(self) -> dict[str, int]:
        """Node id -> raylet pid of the worker nodes alive now (the head's is not listed)."""
        raylets = {}
        for pid in descendants(self.head.pid):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"/raylet") and b"--head" not in argv:
                node = next((a.split(b"=", 1)[1] for a in argv if a.startswith(b"--node_id=")),
                            b"")
                raylets[node.decode()] = pid
        return raylets

    def worker_actors(self) -> int:
        """Actor processes on worker nodes now (`ray::<Class>` workers; idle ones excluded)."""
        count = 0
        for raylet in self.worker_raylets().values():
            for pid in descendants(raylet):
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                except OSError:
                    continue
                count += title.startswith(b"ray::") and not title.startswith(b"ray::IDLE")
        return count

    def remove_worker(self) -> str | None:
        """Kill one worker node and every process it started, at once."""
        raylets = self.worker_raylets()
        if not raylets:
            return None
        node, raylet = sorted(raylets.items())[0]
        kill_at_once([raylet, *descendants(raylet)], timeout_s=30)
        return node

    def close(self) -> None:
        """SIGINT stops `ray start --block` and what it started; whatever outlives 30 s of
        that is killed (our process group only)."""
        if self.head.poll() is None:
            os.killpg(self.head.pid, signal.SIGINT)
            try:
                self.head.wait(30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.head.wait(30)
        shutil.rmtree(self.directory, ignore_errors=True)


def _watch_nodes(cluster: AutoscalingCluster, started: float, stop: threading.Event,
                 lock: threading.Lock) -> None:
    import ray

    last = None
    while not stop.is_set():
        try:
            alive = sum(1 for node in ray.nodes() if node["Alive"])
        except Exception:  # the head is going away
            return
        now = (alive, cluster.worker_actors())
        if now != last:
            with lock:
                print(json.dumps({"nodes": alive, "actors": now[1],
                                  "at": round(time.monotonic() - started, 2),
                                  "time": time.time()}), flush=True)
            last = now
        stop.wait(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-workers", type=int, default=3)
    parser.add_argument("--worker-cpus", type=float, default=1)
    parser.add_argument("--idle-timeout-s", type=float, default=10)
    parser.add_argument("--upscaling-speed", type=float, default=1.0)
    args = parser.parse_args(argv)
    cluster = AutoscalingCluster(args.max_workers, args.worker_cpus, args.idle_timeout_s,
                                 args.upscaling_speed)
    stop, lock = threading.Event(), threading.Lock()
    try:
        os.environ.update(cluster.env)  # before Ray is imported: it reads the auth mode then
        import ray

        deadline = time.monotonic() + 120
        while True:
            try:
                ray.init(address=cluster.gcs, logging_level="ERROR", log_to_driver=False)
                break
            except ConnectionError:
                if time.monotonic() > deadline or cluster.head.poll() is not None:
                    raise
                time.sleep(1)
        started = time.monotonic()
        print(json.dumps({"gcs": cluster.gcs, "env": cluster.env}), flush=True)
        watcher = threading.Thread(target=_watch_nodes, args=(cluster, started, stop, lock),
                                   daemon=True)
        watcher.start()
        for line in sys.stdin:
            if line.strip() == "remove-worker":
                removed = cluster.remove_worker()
                with lock:
                    print(json.dumps({"removed": removed}), flush=True)
    finally:
        stop.set()
        if "ray" in sys.modules and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()
        cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
