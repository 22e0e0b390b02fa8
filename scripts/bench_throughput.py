"""Does an index build fill the provider's rate limit with the settings a user gets?

Runs `graphrag-ray index` (a subprocess, as a user would) against the project's test LLM
server started as a separate process and set up as a provider: latency, requests and tokens
per minute per model over a sliding 60 s window, 429 + Retry-After beyond. The build's
config names only the endpoint and the provider's limits (the getting-started page's example): chunks
1200/100, one gleaning round, LLM extraction, summaries and reports, embeddings through the
provider. For each run it prints wall time, the bound the limits set for the calls and
tokens the server billed (max(calls / RPM, tokens / TPM) per model; chat and embeddings have
budgets of their own and run side by side), utilization = bound / wall time, 429s, what the
manifest says against what the server billed, calls in flight, and the driver's peak memory.

    python scripts/bench_throughput.py --runs carol            # one copy, realistic provider
    python scripts/bench_throughput.py --runs carol5,podcast400,big
    python scripts/bench_throughput.py --runs big --nodes 2    # a 2-node local Ray cluster
    python scripts/bench_throughput.py --runs big-podcast      # several windows of work
    python scripts/bench_throughput.py --runs instant5,instant-podcast   # latency 0, no limits
    python scripts/bench_throughput.py --runs carol --set extraction.glean_check=false
    python scripts/bench_throughput.py --runs carol --per-token-ms 20 --limit-counts max_tokens

Profiles: realistic = 800 ms + 10 ms per output token, 500 RPM, 200k TPM; big = 2 s + 10 ms
per output token, 10k RPM, 2M TPM; instant = no latency, no limits. Each cold run is followed
by a warm rerun on the same output (every call cached).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test kit

from graphrag_testkit import kit_env  # noqa: E402
from graphrag_testkit.local_cluster import ClusterProcess, free_port  # noqa: E402

SHARED = ROOT.parent / "shared" / "corpora"
CAROL = SHARED / "christmas_carol" / "book.txt"
PODCAST = SHARED / "podcast" / "input"

PROFILES = {
    "realistic": {"latency_ms": 800, "per_token_ms": 10, "rpm": 500, "tpm": 200_000},
    "big": {"latency_ms": 2000, "per_token_ms": 10, "rpm": 10_000, "tpm": 2_000_000},
    "instant": {"latency_ms": 0, "per_token_ms": 0, "rpm": None, "tpm": None},
}
# run name -> (corpus, profile)
RUNS = {
    "carol": ("carol1", "realistic"),
    "carol5": ("carol5", "realistic"),
    "podcast400": ("podcast400", "realistic"),
    "big": ("carol5", "big"),
    "big-podcast": ("podcast", "big"),
    "instant5": ("carol5", "instant"),
    "instant-podcast": ("podcast", "instant"),
}
CHAT_MODEL, EMBEDDING_MODEL = "test-model", "test-embedding"


def make_corpus(name: str, folder: Path) -> Path | None:
    """The run's input folder, or None when the shared corpus is not here."""
    target = folder / name
    target.mkdir(parents=True, exist_ok=True)
    if name.startswith("carol"):
        if not CAROL.is_file():
            return None
        book = CAROL.read_text(encoding="utf-8")
        copies = int(name.removeprefix("carol"))
        for copy in range(copies):
            # A distinct first line, of a length of its own: every copy's windows start at a
            # different place, so no chunk (and no prompt) is another copy's.
            preamble = f"Copy {copy + 1} of {copies}{', a copy' * (3 * copy)}.\n"
            (target / f"carol-{copy + 1}.txt").write_text(preamble + book, encoding="utf-8")
        return target
    if not PODCAST.is_dir():
        return None
    files = sorted(PODCAST.iterdir())
    count = int(name.removeprefix("podcast") or len(files))
    for path in files[:count]:
        shutil.copyfile(path, target / path.name)
    return target


class Provider:
    """The test server in its own process (its threads must not share the build's GIL)."""

    def __init__(self, profile: dict):
        self.port = free_port()
        args = [sys.executable, "-m", "graphrag_testkit.llm_server", "--port",
                str(self.port), "--latency-ms", str(profile["latency_ms"]),
                "--latency-per-output-token-ms", str(profile["per_token_ms"])]
        if profile.get("latency_kinds"):
            args += ["--latency-kinds", profile["latency_kinds"]]
        if profile["rpm"]:
            args += ["--rpm-limit", str(profile["rpm"]), "--tpm-limit", str(profile["tpm"]),
                     "--limit-window-s", "60",
                     "--limit-counts", profile.get("limit_counts", "usage")]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                                        env=kit_env())
        self.process.stdout.readline()  # "test LLM server on ..."
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=30) as response:
            return json.loads(response.read())

    def log(self) -> dict:
        """{"log": [(time, kind, status, request hash)], "billed": [(time, model, tokens)]}"""
        with urllib.request.urlopen(f"{self.url}/log", timeout=30) as response:
            return json.loads(response.read())

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.url}/reset", data=b"{}", method="POST")
        urllib.request.urlopen(request, timeout=30).read()

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def write_config(path: Path, url: str, profile: dict) -> None:
    """Only what a user sets: the endpoint and the provider's limits."""
    limits = ""
    if profile["rpm"]:
        limits = (f"  requests_per_minute: {profile['rpm']}\n"
                  f"  tokens_per_minute: {profile['tpm']}\n")
    path.write_text(
        "chunks:\n  size: 1200\n  overlap: 100\n"
        "extraction:\n  method: llm\n  max_gleanings: 1\n"
        f"llm:\n  api_base: {url}\n  model: {CHAT_MODEL}\n{limits}"
        f"embeddings:\n  api_base: {url}\n  model: {EMBEDDING_MODEL}\n{limits}",
        encoding="utf-8")


def bound_s(billed: dict, profile: dict, counted: dict | None = None) -> float | None:
    """The fastest the provider's limits allow for what it billed: per model, the larger of
    calls / RPM and tokens / TPM; the models' budgets are separate and run side by side.
    `counted`: the tokens the provider counted against its limit per model, where they are
    not the billed ones (`--limit-counts max_tokens`)."""
    if not profile["rpm"]:
        return None
    bounds = []
    for model, counts in billed.items():
        tokens = counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0)
        tokens = max(tokens, (counted or {}).get(model, 0))
        bounds.append(60 * max(counts.get("calls", 0) / profile["rpm"], tokens / profile["tpm"]))
    return max(bounds) if bounds else 0.0


def index_once(corpus: Path, output: Path, config: Path, env: dict, provider: Provider,
               profile: dict, settings: list[str], timeline: str | None = None) -> dict:
    provider.reset()
    started = time.perf_counter()
    started_clock = time.time()  # the provider's log clock (the same on one machine)
    done = subprocess.run([sys.executable, "-m", "graphrag_ray", "index", "--config",
                           str(config), "--input", str(corpus), "--output", str(output),
                           *[arg for setting in settings for arg in ("--set", setting)]],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"index failed ({done.returncode}):\n{done.stderr[-3000:]}")
    stats = provider.stats()
    logs = provider.log()
    log = logs["log"]
    first = min((t for t, *_ in log), default=0.0)
    if timeline:  # every request the provider admitted: seconds from the build's start
        with open(timeline, "w", encoding="utf-8") as handle:
            json.dump({"first_request_after_start_s": round(first - started_clock, 3),
                       "wall_s": wall, "log": log, "billed": logs["billed"]}, handle)
    # Chat tokens the provider admitted per 10 s from the first request: where the budget idled.
    per_10s: dict[int, int] = {}
    for t, model, tokens in logs["billed"]:
        if model == CHAT_MODEL:
            per_10s[int((t - first) // 10)] = per_10s.get(int((t - first) // 10), 0) + tokens
    # Answered chat calls per 10 s by kind: which stage held the budget, and when.
    kinds: dict[str, dict[int, int]] = {}
    for t, kind, status, _ in log:
        if status == 200 and kind != "embeddings":
            slot = int((t - first) // 10)
            kinds.setdefault(kind, {})[slot] = kinds.setdefault(kind, {}).get(slot, 0) + 1
    current = json.loads((output / "index.json").read_text())["version"]
    manifest = json.loads((output / "versions" / current / "manifest.json").read_text())
    billed = stats["usage_by_model"]
    usage = manifest["llm_usage"]["stages"]
    chat_stages = [name for name in usage if name != "embed"]
    manifest_chat = {key: sum(usage[s][key] for s in chat_stages)
                     for key in ("calls", "prompt_tokens", "completion_tokens", "cached_tokens")}
    bound = bound_s(billed, profile, stats.get("counted_tokens_by_model"))
    requests = stats["requests"]
    rate_limited = int(stats["by_status"].get("429", 0))
    limiter = manifest["llm_usage"].get("rate_limiter", {})
    by_stage = {}
    for stage, usage_stages in (("extract", ["extract"]),
                                ("summaries_and_reports", ["summarize", "reports"])):
        calls = sum(usage[u]["calls"] for u in usage_stages)
        tokens = sum(usage[u]["prompt_tokens"] + usage[u]["completion_tokens"]
                     for u in usage_stages)
        wall_s = manifest["timings_s"][stage]
        stage_bound = bound_s({"chat": {"calls": calls, "prompt_tokens": tokens}}, profile)
        by_stage[stage] = {"calls": calls, "tokens": tokens, "wall_s": wall_s,
                           "bound_s": None if stage_bound is None else round(stage_bound, 1),
                           "utilization": None if stage_bound is None
                           else round(stage_bound / max(wall_s, 1e-9), 3)}
    return {
        "wall_s": round(wall, 1),
        "pipeline_s": manifest["timings_s"]["total"],
        "stages_s": {k: v for k, v in manifest["timings_s"].items() if k != "total"},
        "llm_stages": by_stage,
        "chat_tokens_per_10s": [per_10s.get(k, 0) for k in range(max(per_10s, default=-1) + 1)],
        "chat_calls_per_10s_by_kind": {kind: [slots.get(k, 0) for k in range(
            max(per_10s, default=-1) + 1)] for kind, slots in sorted(kinds.items())},
        "engine": manifest["config"]["runtime"]["engine"],
        "chunks": manifest["extraction"]["chunks"],
        "failed_chunks": manifest["extraction"]["failed_chunks"],
        "bound_s": None if bound is None else round(bound, 1),
        "utilization": None if bound is None else round(bound / wall, 3),
        "utilization_of_pipeline": None if bound is None
        else round(bound / manifest["timings_s"]["total"], 3),
        "requests": requests, "http_429": rate_limited,
        "http_429_share": round(rate_limited / max(1, requests), 4),
        "http_429_at": [(round(t - first, 1), kind) for t, kind, status, _ in log
                        if status == 429][:20],
        "server_billed": billed,
        "provider_counted_tokens": stats.get("counted_tokens_by_model"),
        "limit_counts": profile.get("limit_counts", "usage"),
        "per_token_ms": profile["per_token_ms"],
        "manifest_chat": manifest_chat,
        "manifest_embed_calls": usage.get("embed", {}).get("calls", 0),
        "usage_agrees": manifest_chat["calls"] == billed.get(CHAT_MODEL, {}).get("calls", 0)
        and manifest_chat["prompt_tokens"] == billed.get(CHAT_MODEL, {}).get("prompt_tokens", 0)
        and usage.get("embed", {}).get("calls", 0)
        == billed.get(EMBEDDING_MODEL, {}).get("calls", 0),
        "cache_hits": sum(s["cache_hits"] for s in usage.values()),
        "cost_usd": manifest["llm_usage"]["total"]["cost_usd"],
        "in_flight": {k: limiter.get(k) for k in ("peak_in_flight", "mean_in_flight",
                                                  "in_flight_target", "mean_latency_s",
                                                  "min_concurrency_limit", "unused_tokens")},
        "driver_peak_rss_mb": manifest["driver_peak_rss_mb"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default="carol", help=f"comma-separated: {', '.join(RUNS)}")
    parser.add_argument("--nodes", type=int, default=1,
                        help="> 1: a local Ray cluster of that many nodes (1 CPU each)")
    parser.add_argument("--no-warm", action="store_true", help="skip the warm reruns")
    parser.add_argument("--out", help="append each run's figures as a JSON line to this file")
    parser.add_argument("--set", action="append", default=[],
                        help="a setting beyond the defaults (KEY=VALUE), e.g. "
                             "extraction.glean_check=false; the figures are then not the "
                             "defaults'")
    parser.add_argument("--per-token-ms", type=float,
                        help="the provider's latency per output token (default: the profile's)")
    parser.add_argument("--limit-counts", choices=["usage", "max_tokens"], default="usage",
                        help="what the provider counts against its token limit at admission: "
                             "the reply's usage, or the prompt and the max_tokens asked for")
    parser.add_argument("--timeline", help="write the cold run's requests as the provider "
                        "admitted them (time, kind, status) and billed them to this JSON file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cluster = None
    if args.nodes > 1:
        env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})
        cluster = ClusterProcess(args.nodes - 1, env, cwd=ROOT)
        env["RAY_ADDRESS"] = cluster.info["gcs"]
    try:
        for run in args.runs.split(","):
            corpus_name, profile_name = RUNS[run]
            corpus = make_corpus(corpus_name, work / "corpora")
            if corpus is None:
                print(json.dumps({"run": run, "skipped": "corpus not in ../shared"}))
                continue
            profile = {**PROFILES[profile_name], "limit_counts": args.limit_counts}
            if args.per_token_ms is not None:
                profile["per_token_ms"] = args.per_token_ms
            provider = Provider(profile)
            try:
                config = work / f"{run}.yaml"
                write_config(config, provider.url, profile)
                output = work / f"index-{run}"
                figures = {"run": run, "profile": profile_name, "nodes": args.nodes,
                           "settings": args.set,
                           "cold": index_once(corpus, output, config, env, provider, profile,
                                              args.set, args.timeline)}
                if not args.no_warm:
                    warm = index_once(corpus, output, config, env, provider, profile, args.set)
                    figures["warm"] = {k: warm[k] for k in ("wall_s", "pipeline_s", "requests",
                                                            "cache_hits", "engine")}
            finally:
                provider.close()
            line = json.dumps(figures)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
    finally:
        if cluster is not None:
            cluster.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
