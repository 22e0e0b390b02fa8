"""Benchmark an index build and a global query; prints wall time per stage, LLM calls, tokens and
peak memory. Offline by default; `--llm` runs against the project's test LLM server.

    python scripts/bench_index.py --input tests/data/christmas_carol
    python scripts/bench_index.py --input ../shared/corpora/christmas_carol --llm --latency-ms 0
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit

from graphrag_ray import GraphIndex, load_config  # noqa: E402
from graphrag_ray.index.build import build_index  # noqa: E402
from graphrag_testkit.llm_server import run_test_server  # noqa: E402


def peak_rss_mib() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", default=None)
    parser.add_argument("--llm", action="store_true", help="use the test LLM server")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--engine", default="auto", choices=["auto", "ray", "local"])
    parser.add_argument("--question", default="What are the main themes?")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    output = args.output or tempfile.mkdtemp(prefix="bench-index-")
    server_ctx = run_test_server(latency_ms=args.latency_ms) if args.llm else contextlib.nullcontext()
    with server_ctx as server:
        overrides = [f"runtime.engine={args.engine}", *args.set]
        if server is not None:
            overrides += ["extraction.method=llm", f"llm.api_base={server.url}",
                          "llm.model=test-model"]
        config = load_config(None, overrides)
        started = time.perf_counter()
        manifest = build_index(args.input, output, config, progress=lambda _: None)
        index_s = time.perf_counter() - started
        started = time.perf_counter()
        result = GraphIndex.open(output, config=config).global_search(args.question, level=1)
        query_s = time.perf_counter() - started
        server_stats = server.stats() if server is not None else None
    own, children = peak_rss_mib()
    print(json.dumps({
        "mode": "llm (test server)" if args.llm else "offline",
        "engine": args.engine,
        "index_wall_s": round(index_s, 2),
        "stage_s": manifest.timings_s,
        "tables": manifest.tables,
        "communities_per_level": manifest.communities_per_level,
        "llm_usage": manifest.llm_usage.total.model_dump(),
        "llm_requests_total": server_stats["requests"] if server_stats else 0,
        "llm_requests_by_kind": server_stats["by_kind"] if server_stats else {},
        "query_wall_s": round(query_s, 2),
        "query_llm_calls": result.llm_calls,
        "query_context_tokens": result.context_tokens,
        "peak_rss_mib": {"driver": round(own), "largest_child": round(children)},
        "output": output,
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
