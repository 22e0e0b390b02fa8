"""Benchmark the query service (`graphrag-ray serve`, Ray Serve) as clients meet it: the
`openai` client at several concurrencies, per method; the first answer after start; each
replica's memory; then, under 32 concurrent clients, a newly published version and a killed
replica, counting the requests that failed.

    python scripts/bench_serve.py                                   # Carol and podcast, both
    python scripts/bench_serve.py --corpora carol --modes offline --requests 50

Indexes are built once under --work (offline, and through the project's test LLM server for
`llm`), then served by the CLI in a process of its own with --replicas; an `llm` index is
served against a test server in this process (instant: the figures are the service's own).
Loopback only; every loop is bounded by its request count.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit

import openai  # noqa: E402

from graphrag_ray.config import load_config  # noqa: E402
from graphrag_ray.index.build import build_index  # noqa: E402
from graphrag_ray.query.methods import QUERY_METHODS  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402
from graphrag_testkit.llm_server import run_test_server  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPORA = {"carol": SHARED / "corpora" / "christmas_carol",
           "podcast": SHARED / "corpora" / "podcast" / "input"}
CAROL_QUESTIONS = ["Who is Scrooge?", "What does Marley's ghost warn of?",
                   "How does Scrooge change?", "Who are the Cratchits?",
                   "What are the main themes of the story?"]


def llm_overrides(url: str) -> list[str]:
    return [f"llm.api_base={url}", "llm.model=test-model", f"embeddings.api_base={url}",
            "embeddings.model=test-embedding", "embeddings.dimensions=256"]


def questions_of(corpus: str) -> list[str]:
    if corpus == "podcast":
        import csv

        with open(SHARED / "corpora" / "podcast" / "questions.csv", encoding="utf-8-sig") as f:
            return [row["question_text"] for row in csv.DictReader(f)]
    return CAROL_QUESTIONS


def ensure_index(path: Path, corpus: str, mode: str, server_url: str) -> float | None:
    """Builds the index unless it is there; returns the build's seconds (None: reused)."""
    try:
        IndexStore(str(path)).open().read_manifest()
        return None
    except Exception:  # noqa: BLE001 - not built yet
        pass
    overrides = ["extraction.method=llm", *llm_overrides(server_url)] if mode == "llm" else []
    started = time.perf_counter()
    build_index(str(CORPORA[corpus]), str(path), load_config(None, overrides),
                progress=lambda _: None)
    return time.perf_counter() - started


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


class Served:
    """`graphrag-ray serve` in a process of its own (a session of its own: stopped whole)."""

    def __init__(self, index: Path, port: int, replicas: int, overrides: list[str],
                 engine: str = "ray", autoscale: str | None = None):
        self.url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "graphrag_ray", "serve", "--index", str(index),
                   "--port", str(port), "--set", "serve.poll_s=1", "--engine", engine]
        if engine == "ray":
            command += ["--autoscale", autoscale] if autoscale else ["--replicas", str(replicas)]
        for override in overrides:
            command += ["--set", override]
        env = {k: v for k, v in os.environ.items() if k != "GRAPHRAG_SERVE_API_KEYS"}
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True, env=env)
        self.output: list[str] = []
        threading.Thread(target=lambda: self.output.extend(
            iter(self.process.stdout.readline, "")), daemon=True).start()
        while not any(line.startswith("serving ") for line in self.output):
            if self.process.poll() is not None or time.perf_counter() - self.started > 300:
                raise SystemExit("the service did not start:\n" + "".join(self.output)[-3000:])
            time.sleep(0.1)
        self.ready_s = time.perf_counter() - self.started

    def replica_pids(self, replicas: int) -> dict[str, int]:
        found: dict[str, int] = {}
        for _ in range(200):
            health = get(self.url + "/healthz")
            found[health["replica"]] = health["pid"]
            if len(found) >= replicas:
                break
        return found

    def stop(self) -> None:
        from graphrag_testkit.local_cluster import descendants

        below = descendants(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def ask(client, method: str, question: str) -> tuple[float, str | None, str | None]:
    started = time.perf_counter()
    try:
        reply = client.chat.completions.with_raw_response.create(
            model=f"graphrag-{method}", messages=[{"role": "user", "content": question}])
        fingerprint = reply.parse().system_fingerprint
        return time.perf_counter() - started, None, fingerprint
    except Exception as exc:  # noqa: BLE001 - counted
        return time.perf_counter() - started, type(exc).__name__, None


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def load(url: str, method: str, questions: list[str], requests: int, concurrency: int,
         retries: int = 2, stop: threading.Event | None = None) -> dict:
    """`requests` asked by `concurrency` clients (or fewer, if `stop` is set first)."""
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=retries,
                           timeout=300)
    counter = iter(range(requests))
    lock = threading.Lock()
    results = []

    def client_loop():
        while stop is None or not stop.is_set():
            with lock:
                i = next(counter, None)
            if i is None:
                return
            results.append(ask(client, method, questions[i % len(questions)]))

    started = time.perf_counter()
    clients = [threading.Thread(target=client_loop) for _ in range(concurrency)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    wall = time.perf_counter() - started
    latencies = [r[0] for r in results if r[1] is None]
    errors = [r[1] for r in results if r[1] is not None]
    return {"requests": len(results), "concurrency": concurrency, "errors": len(errors),
            "error_kinds": sorted(set(errors)), "wall_s": round(wall, 2),
            "rps": round(len(results) / wall, 2),
            "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
            "p95_ms": round(1000 * percentile(latencies, 0.95), 1) if latencies else None,
            "p99_ms": round(1000 * percentile(latencies, 0.99), 1) if latencies else None,
            "versions": sorted({r[2] for r in results if r[2]})}


def disruption(served: Served, index: Path, corpus: str, questions: list[str],
               replicas: int) -> dict:
    """32 clients asking while (a) a new version is built and published to the URL served
    (no retries: every failure counts) and (b) a replica is killed (without retries, then
    with the client's default 2). Each phase asks until 3 s after the service recovered:
    every replica on the new version, or a replacement replica answering."""
    figures = {}
    for phase, retries in (("version_switch", 0), ("replica_kill_no_retries", 0),
                           ("replica_kill_with_retries", 2)):
        box: dict = {}
        stop = threading.Event()
        runner = threading.Thread(target=lambda box=box, retries=retries, stop=stop: box.update(
            load(served.url, "local", questions, 1_000_000, 32, retries=retries, stop=stop)))
        runner.start()
        time.sleep(2)
        before = served.replica_pids(replicas)
        started = time.perf_counter()
        if phase == "version_switch":
            version = build_index(str(CORPORA[corpus]), str(index), load_config(
                None, ["runtime.engine=local", "chunks.size=700"]), progress=lambda _: None
                ).version
            box["publish_s"] = round(time.perf_counter() - started, 1)
            while time.perf_counter() - started < 120:
                answering = {get(served.url + "/healthz")["version"] for _ in range(20)}
                if answering == {version}:
                    break
                time.sleep(0.2)
        else:
            os.kill(next(iter(before.values())), signal.SIGKILL)
            while time.perf_counter() - started < 120:
                if set(served.replica_pids(replicas)) - set(before):
                    break
                time.sleep(0.2)
        box["recovered_s"] = round(time.perf_counter() - started, 1)
        time.sleep(3)
        stop.set()
        runner.join()
        figures[phase] = box
    return figures


def autoscaling(index: Path, port: int, bounds: str, questions: list[str],
                seconds: float) -> dict:
    """`--autoscale MIN:MAX` under 32 clients for `seconds`: the replicas answering, sampled
    every 5 s (Serve adds one after its upscale delay, 30 s by default)."""
    served = Served(index, port, 1, [], "ray", autoscale=bounds)
    try:
        stop = threading.Event()
        box: dict = {}
        runner = threading.Thread(target=lambda: box.update(
            load(served.url, "local", questions, 1_000_000, 32, stop=stop)))
        runner.start()
        started, samples = time.perf_counter(), []
        while time.perf_counter() - started < seconds:
            time.sleep(5)
            answering = {get(served.url + "/healthz")["replica"] for _ in range(40)}
            samples.append((round(time.perf_counter() - started), len(answering)))
        stop.set()
        runner.join()
        return {"bounds": bounds, "replicas_over_time": samples, "load": box}
    finally:
        served.stop()


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpora", default="carol,podcast")
    parser.add_argument("--modes", default="offline,llm")
    parser.add_argument("--methods", default=",".join(QUERY_METHODS))
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--run-seconds", type=float, default=90,
                        help="a run stops after this long even short of --requests")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--engine", choices=("ray", "local"), default="ray",
                        help="local: the same app in one process (no Ray), for comparison")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--work", default="/tmp/bench-serve")
    parser.add_argument("--no-disruption", action="store_true")
    parser.add_argument("--autoscale", metavar="MIN:MAX",
                        help="then serve the first corpus's offline index autoscaled under "
                        "32 clients and sample the replicas")
    parser.add_argument("--autoscale-seconds", type=float, default=90)
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the service this started is stopped with its Ray.
    signal.signal(signal.SIGTERM, _interrupt)
    work = Path(args.work)
    figures = []
    with run_test_server() as server:
        for corpus in args.corpora.split(","):
            if not CORPORA[corpus].exists():
                print(f"skipped {corpus}: {CORPORA[corpus]} not found")
                continue
            questions = questions_of(corpus)
            for mode in args.modes.split(","):
                index = work / f"{corpus}-{mode}"
                built = ensure_index(index, corpus, mode, server.url)
                overrides = llm_overrides(server.url) if mode == "llm" else []
                replicas = args.replicas if args.engine == "ray" else 1
                served = Served(index, args.port, replicas, overrides, args.engine)
                try:
                    row = {"corpus": corpus, "mode": mode, "engine": args.engine,
                           "replicas": replicas, "build_s": built,
                           "ready_s": round(served.ready_s, 1), "first_ms": {}, "runs": []}
                    for method in args.methods.split(","):
                        row["first_ms"][method] = round(1000 * ask(openai.OpenAI(
                            base_url=served.url + "/v1", api_key="unused"), method,
                            questions[0])[0], 1)
                    pids = served.replica_pids(replicas)
                    for method in args.methods.split(","):
                        for concurrency in map(int, args.concurrency.split(",")):
                            # At most --requests, and no longer than --run-seconds (a slow
                            # method's run reports the requests it got through).
                            stop = threading.Event()
                            timer = threading.Timer(args.run_seconds, stop.set)
                            timer.start()
                            run = load(served.url, method, questions, args.requests,
                                       concurrency, stop=stop)
                            timer.cancel()
                            run["method"] = method
                            row["runs"].append(run)
                            print(f"{corpus:8} {mode:8} {method:7} c={concurrency:<3} "
                                  f"p50 {run['p50_ms']} ms  p95 {run['p95_ms']}  p99 "
                                  f"{run['p99_ms']}  {run['rps']} req/s  errors "
                                  f"{run['errors']}", flush=True)
                    row["replica_rss_mb"] = {r: rss_mb(p) for r, p in pids.items()}
                    row["llm_server"] = {"chat_requests": server.stats().get("requests")}
                    if not args.no_disruption and mode == "offline" and args.engine == "ray":
                        row["disruption"] = disruption(served, index, corpus, questions,
                                                       replicas)
                        print(json.dumps(row["disruption"]), flush=True)
                    figures.append(row)
                    print(json.dumps({k: v for k, v in row.items() if k != "runs"}),
                          flush=True)
                finally:
                    served.stop()
    if args.autoscale:
        corpus = args.corpora.split(",")[0]
        scaled = autoscaling(work / f"{corpus}-offline", args.port, args.autoscale,
                             questions_of(corpus), args.autoscale_seconds)
        print(json.dumps(scaled), flush=True)
        figures.append({"autoscaling": scaled})
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
