"""Benchmark the query methods on an index of the podcast corpus built with the test LLM server:
per method (and global per level), LLM calls, context tokens and wall time per question with
simulated latency, plus the paper's Table 3 comparison (context tokens per level vs TS).

    python scripts/bench_query.py                       # builds ../shared podcast index if needed
    python scripts/bench_query.py --questions 20 --latency-ms 500 --index /tmp/podcast-llm

The index is built once against an instant server (LLM answers cached under the index), then
queried against a server that takes `--latency-ms` per call.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit

from graphrag_ray import GraphIndex, load_config  # noqa: E402
from graphrag_ray.index.build import build_index  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402
from graphrag_testkit.llm_server import run_test_server  # noqa: E402

PODCAST = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "podcast"


def server_config(url: str, overrides: list[str]):
    return load_config(None, ["extraction.method=llm", f"llm.api_base={url}",
                              "llm.model=test-model", f"embeddings.api_base={url}",
                              "embeddings.model=test-embedding", "embeddings.dimensions=256",
                              *overrides])


def ensure_index(path: str, corpus: Path, overrides: list[str]) -> None:
    try:
        IndexStore(path).open().read_manifest().tables["embeddings_text_unit_text"]
        return
    except Exception:  # missing, or built before embeddings: (re)build, cached calls reused
        pass
    with run_test_server() as server:
        started = time.perf_counter()
        manifest = build_index(str(corpus), path, server_config(server.url, overrides),
                               progress=lambda _: None)
        print(f"built {path} in {time.perf_counter() - started:.1f}s: {manifest.tables}")


def first_questions(path: str, count: int) -> list[str] | None:
    """The corpus's first `count` questions (None, said, when its CSV is not there)."""
    if not Path(path).exists():
        print(f"skipped: {path} not found")
        return None
    with open(path, encoding="utf-8-sig") as handle:
        return [row["question_text"] for row in csv.DictReader(handle)][:count]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", default="/tmp/podcast-llm")
    parser.add_argument("--corpus", default=str(PODCAST / "input"))
    parser.add_argument("--questions-csv", default=str(PODCAST / "questions.csv"))
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--methods", default="C0,C1,C2,C3,dynamic,TS,SS,local,drift")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    questions = first_questions(args.questions_csv, args.questions)
    if questions is None:
        return 0
    ensure_index(args.index, Path(args.corpus), args.set)

    conditions = {
        "C0": ("global", {"level": 0}), "C1": ("global", {"level": 1}),
        "C2": ("global", {"level": 2}), "C3": ("global", {"level": 3}),
        "dynamic": ("global", {"dynamic": True}), "TS": ("text", {}), "SS": ("basic", {}),
        "local": ("local", {}), "drift": ("drift", {}),
    }
    wanted = args.methods.split(",")
    figures: dict[str, list[dict]] = {name: [] for name in wanted}
    with run_test_server(latency_ms=args.latency_ms) as server:
        index = GraphIndex.open(args.index, config=server_config(server.url, args.set))
        levels = index.levels
        print(f"index levels {levels}; {len(questions)} questions; "
              f"{args.latency_ms:g} ms per LLM call")
        for name in wanted:
            method, options = conditions[name]
            if name.startswith("C") and int(name[1:]) > max(levels):
                del figures[name]
                continue
            for question in questions:
                started = time.perf_counter()
                result = index.search(method, question, **options)
                figures[name].append({
                    "wall_s": time.perf_counter() - started, "calls": result.llm_calls,
                    "context_tokens": result.context_tokens,
                    "prompt_tokens": result.usage.prompt_tokens,
                    "reports": (result.details.get("dynamic") or {}).get("reports_selected"),
                    "saved": (result.details.get("dynamic") or {}).get("saved_tokens")})
            print(f"  {name} done", flush=True)
        index.close()

    print(f"\n{'condition':10} {'calls/q':>8} {'ctx tokens/q':>13} {'total ctx':>11} "
          f"{'wall s/q':>9} {'% of TS':>8}")
    ts_total = sum(f["context_tokens"] for f in figures.get("TS", [])) or None
    for name, rows in figures.items():
        total = sum(r["context_tokens"] for r in rows)
        share = f"{100 * total / ts_total:.1f}%" if ts_total else "-"
        print(f"{name:10} {statistics.mean(r['calls'] for r in rows):8.1f} "
              f"{statistics.mean(r['context_tokens'] for r in rows):13,.0f} {total:11,} "
              f"{statistics.mean(r['wall_s'] for r in rows):9.2f} {share:>8}")
    if figures.get("dynamic"):
        rows = figures["dynamic"]
        print(f"\ndynamic selection: {statistics.mean(r['reports'] for r in rows):.1f} reports "
              f"mapped per question, {statistics.mean(r['saved'] for r in rows):,.0f} context "
              "tokens saved per question vs the static level it reached")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
