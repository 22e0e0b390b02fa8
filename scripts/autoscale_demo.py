"""Autoscaling, seen: an LLM build's demand adds worker nodes, and idle nodes go away.

Starts an autoscaling Ray cluster on this machine (tests/graphrag_testkit/autoscaling_cluster.py:
Ray's autoscaler with its local node provider; a head with `CPU: 0` and an `llm_workers` type,
min 0, as in cluster/aws.yaml), the project's test server as a provider of a big tier, and
`graphrag-ray index` joined to the cluster as a user's job. Prints the live nodes as they
change and then one line:

    nodes: start 1, peak 4, end 1 | wall 95.2 s, utilization 0.91, 429s 0.1% | ...

    python scripts/autoscale_demo.py                      # max 3 workers, 300 podcast files
    python scripts/autoscale_demo.py --max-workers 1
    python scripts/autoscale_demo.py --remove-worker-after-s 20   # lose a node mid-extraction

Every chunk must come back `ok`, and no call that had finished is asked again (finished calls
come back from the cache). With --remove-worker-after-s, the calls in flight on the lost node
are lost with it and asked again: they are counted apart (`requests_answered_twice`). The build's config
names the endpoint and the tier's limits, and the tier's connection allowance
(`llm.max_concurrency`, which bounds the calls in flight and so the actors asked for).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_throughput import PODCAST, ROOT, Provider, bound_s  # noqa: E402
from graphrag_testkit import kit_env  # noqa: E402

# A tier that needs many calls in flight (OpenAI's tier 5 for a small model allows 30,000 RPM):
# at ~10 s a call, the tokens it admits keep several hundred calls in flight, more than one
# small worker's actors hold. `max_concurrency` is raised to let the build plan for them
# (the default, 256, is what one 1-CPU worker's four actors run).
BIG_TIER = {"latency_ms": 2000, "per_token_ms": 10, "rpm": 30_000, "tpm": 10_000_000,
            "max_concurrency": 768}


class Cluster:
    """graphrag_testkit.autoscaling_cluster in its own process; its node counts arrive on
    a thread."""

    def __init__(self, max_workers: int, worker_cpus: float, idle_timeout_s: float,
                 verbose: bool = False):
        self.verbose = verbose
        # The cloud config's pace of adding nodes; its idle timeout (minutes, for VMs that
        # take minutes to boot) is the one setting a local demo shortens.
        launcher = yaml.safe_load((ROOT / "cluster" / "aws.yaml").read_text())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graphrag_testkit.autoscaling_cluster",
             "--max-workers", str(max_workers), "--worker-cpus", str(worker_cpus),
             "--idle-timeout-s", str(idle_timeout_s),
             "--upscaling-speed", str(launcher["upscaling_speed"])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
            env=kit_env())
        first = self.process.stdout.readline()
        if not first:
            raise SystemExit("the autoscaling cluster did not start")
        info = json.loads(first)
        self.gcs, self.env = info["gcs"], info["env"]
        self.events: list[dict] = []
        self.removed: list[tuple[str | None, float]] = []  # (node id, when)
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        with self._changed:  # the first count of live nodes
            self._changed.wait_for(lambda: self.events, 60)

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:  # Ray's own messages to the launcher's driver
                if self.verbose:
                    print(f"  cluster: {line.rstrip()}", flush=True)
                continue
            with self._changed:
                if "nodes" in event:
                    if not self.events or self.events[-1]["nodes"] != event["nodes"] \
                            or self.verbose:
                        print(f"  nodes: {event['nodes']}, actors on workers: "
                              f"{event['actors']} at +{event['at']:.1f} s", flush=True)
                    self.events.append(event)
                else:
                    self.removed.append((event["removed"], time.time()))
                self._changed.notify_all()

    def nodes(self) -> int:
        with self._changed:
            return self.events[-1]["nodes"] if self.events else 0

    def wait_for_nodes(self, count: int, timeout_s: float) -> bool:
        with self._changed:
            return self._changed.wait_for(
                lambda: self.events and self.events[-1]["nodes"] == count, timeout_s)

    def remove_worker(self) -> None:
        self.process.stdin.write("remove-worker\n")
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=300)  # its own shutdown: at most ~60 s, more under load


def write_config(path: Path, url: str, tier: dict, chunk_size: int) -> None:
    path.write_text(
        f"chunks:\n  size: {chunk_size}\n  overlap: {min(100, chunk_size // 10)}\n"
        "extraction:\n  method: llm\n  max_gleanings: 1\n"
        f"llm:\n  api_base: {url}\n  model: test-model\n"
        f"  requests_per_minute: {tier['rpm']}\n  tokens_per_minute: {tier['tpm']}\n"
        f"  max_concurrency: {tier['max_concurrency']}\n"
        "embeddings:\n  method: hashing\n", encoding="utf-8")


def demo_input(args, work: Path) -> Path:
    if args.input:
        return Path(args.input)
    if not PODCAST.is_dir():
        raise SystemExit(f"no corpus at {PODCAST}: pass --input DIR")
    corpus = work / "input"
    corpus.mkdir()
    for path in sorted(PODCAST.iterdir())[:args.files]:
        shutil.copy(path, corpus / path.name)
    return corpus


def run(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="autoscale-demo-"))
    tier = dict(BIG_TIER, **{k: v for k, v in (("latency_ms", args.latency_ms),
                                                ("latency_kinds", args.latency_kinds),
                                                ("rpm", args.rpm), ("tpm", args.tpm),
                                                ("max_concurrency", args.max_concurrency))
                              if v is not None})
    provider = Provider(tier)
    cluster = None
    try:
        cluster = Cluster(args.max_workers, args.worker_cpus, args.idle_timeout_s, args.verbose)
        corpus = demo_input(args, work)
        config = work / "config.yaml"
        write_config(config, provider.url, tier, args.chunk_size)
        output = work / "index"
        env = {**os.environ, **cluster.env, "RAY_ADDRESS": cluster.gcs}
        start_nodes = cluster.nodes()
        started = time.time()
        build = subprocess.Popen(
            [sys.executable, "-m", "graphrag_ray", "index", "--config", str(config),
             "--input", str(corpus), "--output", str(output)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        if args.remove_worker_after_s is not None:
            def remove_later() -> None:
                # Measured from the first extraction request, so the node holds actors.
                while build.poll() is None and not _extraction_started(provider):
                    time.sleep(0.5)
                time.sleep(args.remove_worker_after_s)
                if build.poll() is None:
                    cluster.remove_worker()
            threading.Thread(target=remove_later, daemon=True).start()
        stderr_lines: list[str] = []

        def echo() -> None:  # the build's progress, with the demo's clock
            for line in build.stderr:
                stderr_lines.append(line)
                if args.verbose:
                    print(f"  +{time.time() - started:6.1f} s | {line.rstrip()}", flush=True)
        reader = threading.Thread(target=echo, daemon=True)
        reader.start()
        try:
            build.wait(timeout=args.timeout_s)
        except subprocess.TimeoutExpired:
            build.kill()  # our own build, not left running against a cluster going away
            raise
        reader.join(timeout=10)
        stderr = "".join(stderr_lines)
        wall = time.time() - started
        if build.returncode:
            raise SystemExit(f"index failed ({build.returncode}):\n{stderr[-3000:]}")
        scaled_down = cluster.wait_for_nodes(start_nodes, args.idle_timeout_s + 90)
        return summarize(output, provider, tier, cluster, start_nodes, started, wall,
                         scaled_down)
    finally:
        try:
            if cluster is not None:
                cluster.close()
        finally:
            provider.close()
            shutil.rmtree(work, ignore_errors=True)


def _extraction_started(provider: Provider) -> bool:
    return provider.stats()["by_kind"].get("extract_graph", 0) > 0


def summarize(output: Path, provider: Provider, tier: dict, cluster: Cluster, start_nodes: int,
              started: float, wall: float, scaled_down: bool) -> dict:
    current = json.loads((output / "index.json").read_text())["version"]
    manifest = json.loads((output / "versions" / current / "manifest.json").read_text())
    stats, log = provider.stats(), provider.log()["log"]
    extraction = [t for t, kind, _, _ in log if kind in ("extract_graph", "glean_check",
                                                          "glean_continue")]
    answered: dict[str, list[float]] = {}
    for at, _, status, request_hash in log:
        if status == 200:
            answered.setdefault(request_hash, []).append(at)
    twice = [times for times in answered.values() if len(times) > 1]
    # A call answered long before a node was lost had finished (its answer cached): asking
    # it again would be a repeat. One answered in the last seconds may have been in flight
    # on that node (the provider's latency here is under 30 s): it was lost with the node.
    lost_at = [at for node, at in cluster.removed if node]
    finished_repeated = [times for times in twice
                         if not any(times[0] > at - 30 for at in lost_at)]
    events = [e for e in cluster.events if e["time"] >= started]
    peak = max([start_nodes] + [e["nodes"] for e in events])
    first_up = next((e["time"] for e in events if e["nodes"] > start_nodes), None)
    last_down = next((e["time"] for e in reversed(events) if e["nodes"] == start_nodes
                      and e["time"] > (first_up or started)), None)
    bound = bound_s(stats["usage_by_model"], tier)
    requests = stats["requests"]
    limiter = manifest["llm_usage"].get("rate_limiter", {})
    return {
        "nodes": {"start": start_nodes, "peak": peak, "end": cluster.nodes()},
        "scaled_down": scaled_down,
        # The extraction pool's actors are what the first nodes are added for: its first
        # request waits for them, so "during" is from the build's start to its last request.
        "scaled_up_during_extraction": bool(first_up and extraction
                                            and started <= first_up <= max(extraction)),
        "first_node_added_s": None if first_up is None else round(first_up - started, 1),
        "first_extraction_request_s": None if not extraction
        else round(min(extraction) - started, 1),
        "extraction_s": None if not extraction else round(max(extraction) - min(extraction), 1),
        "back_to_start_s_after_build": None if last_down is None
        else round(last_down - (started + wall), 1),
        "wall_s": round(wall, 1),
        "stages_s": {k: v for k, v in manifest["timings_s"].items() if k != "total"},
        "utilization": None if bound is None else round(bound / wall, 3),
        "http_429_share": round(stats["by_status"].get("429", 0) / max(1, requests), 4),
        "chunks": manifest["extraction"]["chunks"],
        "failed_chunks": manifest["extraction"]["failed_chunks"],
        "requests_answered_twice": len(twice),
        "finished_calls_repeated": len(finished_repeated),
        "workers_removed": [node for node, _ in cluster.removed if node],
        "peak_in_flight": limiter.get("peak_in_flight"),
        "provider_peak_in_flight": stats.get("peak_in_flight_by_kind", {}),
        "in_flight_target": limiter.get("in_flight_target"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-workers", type=int, default=3)
    parser.add_argument("--worker-cpus", type=float, default=1)
    parser.add_argument("--idle-timeout-s", type=float, default=15)
    parser.add_argument("--input", help="a corpus folder (default: the first --files podcasts)")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--chunk-size", type=int, default=1200)
    parser.add_argument("--latency-ms", type=float)
    parser.add_argument("--latency-kinds", help="the request kinds the latency is for "
                        "(comma-separated; default: all)")
    parser.add_argument("--rpm", type=float)
    parser.add_argument("--tpm", type=float)
    parser.add_argument("--max-concurrency", type=int)
    parser.add_argument("--remove-worker-after-s", type=float,
                        help="kill a worker node this long after extraction starts")
    parser.add_argument("--timeout-s", type=float, default=1800)
    parser.add_argument("--verbose", action="store_true", help="show the build's progress")
    parser.add_argument("--json", action="store_true", help="print only the figures, as JSON")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result))
        return 0 if result["failed_chunks"] == 0 and result["finished_calls_repeated"] == 0 else 1
    nodes = result["nodes"]
    print(f"nodes: start {nodes['start']}, peak {nodes['peak']}, end {nodes['end']} | "
          f"wall {result['wall_s']} s, utilization {result['utilization']}, "
          f"429s {100 * result['http_429_share']:.1f}% | chunks {result['chunks']}, "
          f"failed {result['failed_chunks']}")
    print(json.dumps(result, indent=1))
    return 0 if result["failed_chunks"] == 0 and result["finished_calls_repeated"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
