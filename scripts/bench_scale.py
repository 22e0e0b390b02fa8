"""Scale benchmark: index generated corpora (and the podcast corpus) offline on Ray, and
hierarchical Leiden on large planted-community graphs. Prints, per corpus: wall time per
stage, the driver's peak RSS (and after each stage), the largest Ray worker's peak RSS, table
sizes, Leiden's graph size, time and memory, and, with `--queries`, each query method on the
index: `graphrag-ray query` run as a user runs it (exit code, wall), and in a process of its
own the time to open the index, the first answer, the median of the next ones and the
process's peak RSS.

    python scripts/bench_scale.py                              # 1M, 3M, 10M + podcast
    python scripts/bench_scale.py --tokens 1000000 --no-podcast --leiden-nodes 100000
    python scripts/bench_scale.py --tokens 100000000 --no-podcast --leiden-nodes "" --queries
    python scripts/bench_scale.py --tokens 30000000 --no-podcast --leiden-nodes "" --nodes 2
    python scripts/bench_scale.py --tokens 30000000 --no-podcast --leiden-nodes "" --llm
    python scripts/bench_scale.py --tokens 100000000 --no-podcast --leiden-nodes "" \
        --real-share 0.1 --document-tokens 800 --queries

With `--nodes N` the build joins a local Ray cluster of N one-CPU nodes and the figures add,
per node, the tasks it ran and its largest worker (the driver runs beside the head). With
`--llm` the build extracts, summarizes, reports and embeds through the project's test server
in a process of its own, instant (no latency, no limits): only the endpoint is set, so the
figures are the engine's own cost per call, and the server's counts (requests and tokens by
kind) are printed. With `--real-share S` a share S of the tokens is real text (the podcast
corpus and A Christmas Carol from ../shared, copied with a preamble per copy:
`testing/real_text_mix`); `--document-tokens` sets the synthetic documents' size (800: about
200,000 files at 100M tokens). With `--update-share S` each build is followed by an update
that adds S of its tokens as new generated files (`added-*.txt`, another seed), run as a user
runs `graphrag-ray update`, then the added files are removed from the corpus again: the
update's wall time, stages and driver peak against the build's.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_throughput import CHAT_MODEL, EMBEDDING_MODEL, Provider  # noqa: E402

from graphrag_ray.resources import rss_mb  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402
from graphrag_testkit.local_cluster import ClusterProcess  # noqa: E402
from graphrag_testkit.real_text_mix import mix_real_text  # noqa: E402
from graphrag_testkit.synthetic_corpus import generate_corpus  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpora"
PODCAST = SHARED / "podcast" / "input"
CAROL = SHARED / "christmas_carol" / "book.txt"


class RayWorkerPeaks:
    """Samples every Ray worker process on this machine (`ray::...` titles), once a second:
    every 0.25 s the scan of /proc took a third of a core from the 100M build it measured."""

    def __init__(self, interval_s: float = 1.0):
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval_s,), daemon=True)

    def _run(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
                except OSError:
                    continue
                if title.startswith("ray::"):
                    rss = rss_mb(pid) or 0
                    key = f"{pid} {title[:60]}"
                    self.peaks[key] = max(self.peaks.get(key, 0), rss)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def largest(self) -> tuple[int, str]:
        if not self.peaks:
            return 0, "-"
        key = max(self.peaks, key=self.peaks.get)
        return self.peaks[key], key.split(" ", 1)[1]


def directory_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2 ** 20


def index_corpus(name: str, corpus: Path, out: Path, extra: list[str],
                 cluster: dict | None = None, update: bool = False) -> dict:
    """`cluster`: the `local_cluster` the build joins (its `gcs` address and `env`), whose
    nodes' tasks and largest workers are then counted. `update`: `graphrag-ray update` of
    the index at `out` instead of a build."""
    command = [sys.executable, "-m", "graphrag_ray", "update", "--index", str(out),
               "--input", str(corpus), "--set", "runtime.engine=ray", *extra] if update else \
        [sys.executable, "-m", "graphrag_ray", "index", "--input", str(corpus),
         "--output", str(out), "--set", "runtime.engine=ray", *extra]
    env = {**os.environ, **cluster["env"], "RAY_ADDRESS": cluster["gcs"]} if cluster else None
    started = time.perf_counter()
    with RayWorkerPeaks() as workers:
        run = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if run.returncode:
        raise SystemExit(f"{name}: index failed\n{run.stderr[-2000:]}")
    manifest = IndexStore(str(out)).read_manifest()
    worker_mb, worker = workers.largest()
    version = out / "versions" / manifest.version
    return {"name": name, "wall_s": round(wall, 1), "manifest": manifest,
            "largest_worker_mb": worker_mb, "largest_worker": worker,
            "index_mb": round(directory_mb(version), 1),
            "vectors_mb": round(directory_mb(out / "vectors"), 1),
            **({"nodes": work_per_node(cluster, workers.peaks)} if cluster else {})}


# The cluster's own dashboard, by its address: without one, Ray's state API asks the newest
# Ray session on the machine, which may be another job's.
_TASKS_BY_NODE = """
import json, sys
from ray.util.state import list_tasks
tasks = list_tasks(address=sys.argv[1], limit=1000000, raise_on_missing_output=False)
print(json.dumps([[t.node_id, t.worker_pid, t.name] for t in tasks]))
"""


def work_per_node(cluster: dict, worker_peaks: dict[str, int]) -> dict[str, dict]:
    """Per node (head first): tasks and actor tasks run, the kinds most run, and its largest
    worker's peak RSS (the worker processes the tasks ran in, as sampled)."""
    listed = subprocess.run([sys.executable, "-c", _TASKS_BY_NODE, cluster["dashboard"]],
                            capture_output=True, text=True, env={**os.environ, **cluster["env"]})
    if listed.returncode:
        return {"error": listed.stderr.strip().splitlines()[-1:]}
    peak_of_pid = {int(key.split(" ", 1)[0]): mb for key, mb in worker_peaks.items()}
    nodes = {}
    for number, node in enumerate(cluster["nodes"]):
        mine = [(pid, name) for node_id, pid, name in json.loads(listed.stdout.splitlines()[-1])
                if node_id == node]
        kinds: dict[str, int] = {}
        for _, name in mine:
            kinds[name.split(".")[-1]] = kinds.get(name.split(".")[-1], 0) + 1
        nodes["head" if number == 0 else f"worker {number}"] = {
            "tasks": len(mine), "most": sorted(kinds.items(), key=lambda kv: -kv[1])[:4],
            "largest_worker_mb": max((peak_of_pid.get(pid, 0) for pid, _ in mine), default=0)}
    return nodes


def start_cluster(nodes: int) -> ClusterProcess:
    """`--nodes N`: a Ray cluster of N one-CPU nodes on this machine, with token auth as Ray
    2.60 wants it, whose every task is listed afterwards (not the last 10,000)."""
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
           "RAY_MAX_LIMIT_FROM_API_SERVER": "1000000",
           "RAY_task_events_max_num_task_in_gcs": "1000000"}
    cluster = ClusterProcess(nodes - 1, env)
    cluster.info["env"] = env
    return cluster


QUESTIONS = ["Who are the main people and what do they do?",
             "What projects are described and who leads them?",
             "Which organizations work together?",
             "What happened in the last meeting?",
             "What are the main risks mentioned?", "Who is the chief executive?"]
# One process per method: what opening the index and answering cost, alone.
_MEASURE = """
import json, sys, time
started = time.perf_counter()
from graphrag_ray import GraphIndex
from graphrag_ray.resources import peak_rss_mb
index = GraphIndex.open(sys.argv[1])
opened = time.perf_counter() - started
times = []
for question in json.loads(sys.argv[3]):
    began = time.perf_counter()
    result = index.search(sys.argv[2], question)
    assert result.answer.strip(), question
    times.append(time.perf_counter() - began)
later = sorted(times[1:])
print(json.dumps({"open_s": round(opened, 2), "first_s": round(times[0], 2),
                  "p50_s": round(later[len(later) // 2], 2), "peak_rss_mb": peak_rss_mb()}))
"""


def query_figures(index: Path, methods: list[str]) -> dict[str, dict]:
    """Per method: the CLI's exit code and wall, then the API's open / first / p50 / RSS."""
    figures = {}
    for method in methods:
        started = time.perf_counter()
        cli = subprocess.run([sys.executable, "-m", "graphrag_ray", "query", "--index",
                              str(index), "--method", method, QUESTIONS[0]],
                             capture_output=True, text=True)
        row = {"cli_exit": cli.returncode, "cli_s": round(time.perf_counter() - started, 1)}
        measured = subprocess.run([sys.executable, "-c", _MEASURE, str(index), method,
                                   json.dumps(QUESTIONS)], capture_output=True, text=True)
        if measured.returncode == 0:
            row.update(json.loads(measured.stdout.strip().splitlines()[-1]))
        else:
            row["error"] = measured.stderr.strip().splitlines()[-1:]
        figures[method] = row
        print(f"  query {method}: {json.dumps(row)}", flush=True)
    return figures


def planted_graph_leiden(nodes: int) -> dict:
    """Leiden on a graph of ~50-node planted communities (4 edges per node inside, 1 across)."""
    import numpy as np

    from graphrag_ray.config import CommunitiesConfig
    from graphrag_ray.index.graph.communities import build_graph, hierarchical_leiden
    from graphrag_ray.resources import PeakRss

    rng = np.random.default_rng(0)
    block = rng.integers(0, max(1, nodes // 50), nodes)
    order = np.argsort(block, kind="stable")
    members = np.split(order, np.cumsum(np.bincount(block))[:-1])
    sources = [rng.choice(m, 4 * len(m)) for m in members if len(m) > 1] + \
        [rng.integers(0, nodes, nodes)]
    targets = [rng.choice(m, 4 * len(m)) for m in members if len(m) > 1] + \
        [rng.integers(0, nodes, nodes)]
    s, t = np.concatenate(sources), np.concatenate(targets)
    keep = s != t
    with PeakRss() as memory:
        started = time.perf_counter()
        graph = build_graph(nodes, s[keep], t[keep], rng.random(int(keep.sum())))
        built = time.perf_counter()
        communities = hierarchical_leiden(graph, CommunitiesConfig())
    return {"nodes": nodes, "edges": int(keep.sum()), "build_s": round(built - started, 2),
            "leiden_s": round(time.perf_counter() - built, 1), "communities": len(communities),
            "levels": max(c.level for c in communities) + 1,
            "rss_mb": f"{memory.before_mb} -> {memory.peak_mb}"}


def add_and_update(name: str, corpus: Path, index: Path, tokens: int, extra: list[str]
                   ) -> dict:
    """`tokens` of new generated files added to `corpus`, the index updated, the files
    removed again (the corpus stays what its name says)."""
    scratch = corpus.parent / f"{corpus.name}-added"
    generated = generate_corpus(scratch, tokens, seed=7, tokens_per_document=3000)
    added = []
    for path in sorted(scratch.glob("*.txt")):
        added.append(corpus / f"added-{path.name}")
        path.rename(added[-1])
    scratch.rmdir()
    print(f"added {len(added)} files ({generated.tokens:,} tokens) to {corpus}", flush=True)
    try:
        return index_corpus(name, corpus, index, extra, update=True)
    finally:
        for path in added:
            path.unlink()


def make_corpus(corpus: Path, tokens: int, real_share: float, document_tokens: int) -> None:
    real = int(tokens * real_share)
    if real and not (PODCAST.is_dir() and CAROL.is_file()):
        raise SystemExit(f"--real-share needs {PODCAST} and {CAROL}")
    generated = generate_corpus(corpus, tokens - real, tokens_per_document=document_tokens)
    print(f"generated {corpus}: {len(generated.files)} synthetic documents, "
          f"{generated.tokens:,} tokens", flush=True)
    if real:
        mixed = mix_real_text(corpus, real, [PODCAST, CAROL])
        print(f"  + {len(mixed.files)} real files, {mixed.tokens:,} tokens ({mixed.copies} "
              f"copies of {mixed.source_files} files, {mixed.source_tokens:,} tokens)",
              flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", default="1000000,3000000,10000000")
    parser.add_argument("--no-podcast", action="store_true")
    parser.add_argument("--leiden-nodes", default="100000,1000000")
    parser.add_argument("--workdir", default="/tmp/graphrag-scale")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--queries", action="store_true",
                        help="then each query method on each index (see the docstring)")
    parser.add_argument("--methods", default="local,basic,drift,lazy,global")
    parser.add_argument("--nodes", type=int, default=1,
                        help="build on a local cluster of this many one-CPU nodes")
    parser.add_argument("--llm", action="store_true",
                        help="the LLM method through the instant test server (see above)")
    parser.add_argument("--real-share", type=float, default=0.0,
                        help="share of the tokens that is real text (see above)")
    parser.add_argument("--document-tokens", type=int, default=3000,
                        help="the synthetic generator's document size")
    parser.add_argument("--update-share", type=float, default=0.0,
                        help="then an update adding this share of new tokens (see above)")
    args = parser.parse_args()
    work = Path(args.workdir)
    provider = Provider({"latency_ms": 0, "per_token_ms": 0, "rpm": 0}) if args.llm else None
    try:
        return run(args, work, provider)
    finally:
        if provider:
            provider.close()


def run(args: argparse.Namespace, work: Path, provider: Provider | None) -> int:
    assignments = list(args.set)
    if provider:
        assignments += ["extraction.method=llm", f"llm.api_base={provider.url}",
                        f"llm.model={CHAT_MODEL}", f"embeddings.api_base={provider.url}",
                        f"embeddings.model={EMBEDDING_MODEL}"]
    extra = [item for assignment in assignments for item in ("--set", assignment)]
    runs = []
    for tokens in [int(t) for t in args.tokens.split(",") if t]:
        corpus = work / (f"corpus-{tokens}" + (f"-real{args.real_share:g}" if args.real_share
                                               else "")
                         + (f"-doc{args.document_tokens}" if args.document_tokens != 3000
                            else ""))
        if not corpus.exists():
            make_corpus(corpus, tokens, args.real_share, args.document_tokens)
        cluster = start_cluster(args.nodes) if args.nodes > 1 else None
        try:
            runs.append(index_corpus(f"synthetic {tokens / 1e6:g}M", corpus,
                                     work / f"index-{tokens}", extra,
                                     cluster.info if cluster else None))
        finally:
            if cluster:
                cluster.close()
        print(json.dumps({k: v for k, v in runs[-1].items() if k != "manifest"}), flush=True)
        print(f"  vector stores: {json.dumps(runs[-1]['manifest'].vector_stores)}", flush=True)
        if provider:
            stats = provider.stats()
            provider.reset()
            runs[-1]["provider"] = {k: stats[k] for k in (
                "requests", "by_kind", "by_status", "usage_by_model", "peak_in_flight")}
            print(f"  test server: {json.dumps(runs[-1]['provider'])}", flush=True)
        if args.queries:
            runs[-1]["queries"] = query_figures(work / f"index-{tokens}",
                                                args.methods.split(","))
        if args.update_share:
            build = runs[-1]
            runs.append(add_and_update(f"update +{args.update_share:g} of {tokens / 1e6:g}M",
                                       corpus, work / f"index-{tokens}",
                                       int(tokens * args.update_share), extra))
            print(json.dumps({k: v for k, v in runs[-1].items() if k != "manifest"}),
                  flush=True)
            print(f"  update: {json.dumps(runs[-1]['manifest'].update)}", flush=True)
            print(f"time(update) / time(build) = {runs[-1]['wall_s'] / build['wall_s']:.3f}",
                  flush=True)
    if not args.no_podcast and PODCAST.exists():
        runs.append(index_corpus("podcast", PODCAST, work / "index-podcast", extra))

    stages = ["list_inputs", "extract", "merge", "communities", "summaries_and_reports",
              "write_entities_and_relationships", "write_documents_and_text_units", "embed",
              "write_communities_and_reports", "communities_table"]
    print("\n| corpus | chunks | entities | relationships | communities | wall s | "
          + " | ".join(stages) + " | driver peak MB | largest worker MB | index MB |")
    print("|" + "---|" * (11 + len(stages)))
    for run in runs:
        m = run["manifest"]
        t = m.timings_s
        print(f"| {run['name']} | {m.tables['text_units']:,} | {m.tables['entities']:,} | "
              f"{m.tables['relationships']:,} | {m.tables['communities']:,} | "
              f"{run['wall_s']} | " + " | ".join(f"{t.get(s, 0):.1f}" for s in stages)
              + f" | {m.driver_peak_rss_mb} | {run['largest_worker_mb']} | {run['index_mb']} |")
    print("\ndriver RSS after each stage / the peak so far, MB (object store pages, Arrow):")
    for run in runs:
        by_stage = run["manifest"].driver_rss_mb_by_stage
        print(f"  {run['name']}: " + ", ".join(
            f"{s} {by_stage[s]['after']:.0f}/{by_stage[s]['peak']:.0f} "
            f"({by_stage[s].get('object_store_pages')}, {by_stage[s].get('arrow')})"
            for s in stages if s in by_stage))
    print("\nLeiden inside the builds:")
    for run in runs:
        print(f"  {run['name']}: {json.dumps(run['manifest'].leiden)}")
    if len(runs) >= 2 and runs[0]["name"].startswith("synthetic"):
        base = runs[0]
        for run in runs[1:]:
            if run["name"].startswith("synthetic"):
                print(f"time({run['name']}) / time({base['name']}) = "
                      f"{run['wall_s'] / base['wall_s']:.2f}")
    for nodes in [int(n) for n in args.leiden_nodes.split(",") if n]:
        print(f"planted-community graph: {json.dumps(planted_graph_leiden(nodes))}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
