"""How close does indexing get to a provider's rate-limit bound, without 429s?

Starts the project's test LLM server as a realistic provider (latency 600 ms + 8 ms per output
token; 300 requests/min and 120,000 tokens/min over a sliding 60 s window, 429 + Retry-After
beyond), indexes a subset of the podcast corpus through the LLM path, and prints for the
LLM-bound stages: wall time, the ideal lower bound implied by the limits for the calls and
tokens actually made, utilization = bound / wall time, 429s and failed chunks. Then reruns
with the warm cache (expected LLM calls: 0).

    python scripts/bench_rate_limits.py                      # single node (local Ray)
    python scripts/bench_rate_limits.py --nodes 2            # ray.cluster_utils.Cluster
    python scripts/bench_rate_limits.py --files 60 --rpm 600 # quicker
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphrag_ray import load_config  # noqa: E402
from graphrag_ray.index.pipeline import build_index  # noqa: E402
from graphrag_ray.testing.llm_server import run_test_server  # noqa: E402

PODCAST = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "podcast" / "input"
# Timed stages that make LLM calls, and the usage stages each one covers (summaries and
# reports run as one schedule, overlapping).
LLM_STAGES = {"extract": ("extract",), "summaries_and_reports": ("summarize", "reports")}


def start_ray(nodes: int) -> object | None:
    import ray

    if nodes <= 1:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        return None
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    return cluster


def run(args: argparse.Namespace, server, source: Path, output: Path) -> dict:
    config = load_config(None, [
        "extraction.method=llm", f"llm.api_base={server.url}", "llm.model=test-model",
        f"llm.requests_per_minute={args.rpm}", f"llm.tokens_per_minute={args.tpm}",
        f"llm.max_concurrency={args.max_concurrency}", "llm.concurrent_requests=16",
        f"extraction.max_gleanings={args.gleanings}", "runtime.engine=ray",
        f"runtime.num_workers={args.workers}", *args.set])
    before = server.stats()
    log_start = len(server.request_log())
    stage_ends: dict[str, float] = {}

    def note_stage_end(message: str) -> None:
        done = re.match(r"\[(\w+)\] done in", message)
        if done:
            stage_ends[done.group(1)] = time.time()

    started = time.perf_counter()
    manifest = build_index(str(source), str(output), config, progress=note_stage_end)
    wall = time.perf_counter() - started
    after = server.stats()
    log = server.request_log()[log_start:]
    usage = manifest["llm_usage"]
    llm_wall = sum(manifest["timings_s"][s] for s in LLM_STAGES)
    calls = after["successful_requests"] - before["successful_requests"]
    tokens = usage["total"]["prompt_tokens"] + usage["total"]["completion_tokens"]
    bound_s = max(calls / args.rpm, tokens / args.tpm) * 60
    rate_limited = sum(1 for _, _, status, _ in log if status == 429)
    per_stage = {}
    for stage, usage_stages in LLM_STAGES.items():
        figures = {key: sum(usage["stages"][u][key] for u in usage_stages)
                   for key in ("calls", "prompt_tokens", "completion_tokens")}
        stage_tokens = figures["prompt_tokens"] + figures["completion_tokens"]
        stage_bound = max(figures["calls"] / args.rpm, stage_tokens / args.tpm) * 60
        wall_s = manifest["timings_s"][stage]
        end = stage_ends[stage]
        admitted = [t for t, _, status, _ in log if status == 200 and end - wall_s <= t <= end]
        per_stage[stage] = {"calls": figures["calls"], "tokens": stage_tokens,
                            "wall_s": wall_s, "bound_s": round(stage_bound, 1),
                            "utilization": round(stage_bound / wall_s, 3) if wall_s else None,
                            # Where the rest goes: before the first admission (start-up) and
                            # after the last (the last answers' latency).
                            "before_first_call_s": round(admitted[0] - (end - wall_s), 1)
                            if admitted else None,
                            "after_last_call_s": round(end - admitted[-1], 1) if admitted else None}
    return {
        "index_wall_s": round(wall, 1), "llm_stages_wall_s": round(llm_wall, 1),
        "stages": per_stage,
        "llm_calls": calls, "tokens": tokens,
        "bound_s": round(bound_s, 1),
        "utilization": round(bound_s / llm_wall, 3) if llm_wall else None,
        "http_429": rate_limited,
        "http_429_share": round(rate_limited / max(1, len(log)), 4),
        "failed_chunks": manifest["extraction"]["failed_chunks"],
        "chunks": manifest["extraction"]["chunks"],
        "cache_hits": usage["total"]["cache_hits"],
        "limiter": usage.get("rate_limiter"),
        "tables": manifest["tables"],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=120, help="podcast files to index")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rpm", type=float, default=300)
    parser.add_argument("--tpm", type=float, default=120_000)
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--gleanings", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=600)
    parser.add_argument("--per-token-ms", type=float, default=8)
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    if not PODCAST.is_dir():
        print(f"skipped: {PODCAST} is not here")
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-rate-"))
    source = work / "input"
    source.mkdir()
    for path in sorted(PODCAST.iterdir())[: args.files]:
        shutil.copyfile(path, source / path.name)
    cluster = start_ray(args.nodes)
    with run_test_server(latency_ms=args.latency_ms, latency_per_output_token_ms=args.per_token_ms,
                         rpm_limit=args.rpm, tpm_limit=args.tpm, limit_window_s=60.0) as server:
        cold = run(args, server, source, work / "index")
        warm = run(args, server, source, work / "index")
    print(json.dumps({"nodes": args.nodes, "files": args.files, "cold": cold,
                      "warm_rerun": {k: warm[k] for k in ("index_wall_s", "llm_calls",
                                                          "cache_hits", "http_429")}}, indent=2))
    if cluster is not None:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
