"""LazyGraphRAG against the other methods on the podcast corpus, through the test LLM server.

    python scripts/bench_lazy.py                          # builds what it needs under /tmp
    python scripts/bench_lazy.py --questions 20 --latency-ms 0

Index: the lazy index (the offline build with text-unit embeddings from the endpoint: no chat
call) against today's offline build (hashed embeddings) and the LLM build (`bench_query`'s,
reused when present). Query: for the corpus's first questions, LLM calls, prompt and completion
tokens and wall time per question, for `lazy` at budgets 100 / 500 / 1,500 (on the lazy index
and on the LLM index), `global` at level 2 (static and dynamic) and `basic`, all against a
server answering in `--latency-ms`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_query import PODCAST, ensure_index, first_questions, server_config  # noqa: E402
from graphrag_ray import GraphIndex, load_config  # noqa: E402
from graphrag_ray.index.build import build_index  # noqa: E402
from graphrag_ray.storage import IndexStore, Manifest  # noqa: E402
from graphrag_testkit.llm_server import run_test_server  # noqa: E402


def lazy_config(url: str, overrides: list[str]):
    """The lazy index's settings: the offline defaults, embeddings from the endpoint."""
    return load_config(None, [f"llm.api_base={url}", "llm.model=test-model",
                              f"embeddings.api_base={url}", "embeddings.model=test-embedding",
                              "embeddings.dimensions=256", *overrides])


def timed_build(corpus: Path, out: str, config) -> tuple[float | None, dict]:
    """Built once: a rerun reuses the index (and prints no wall time)."""
    try:
        return None, IndexStore(out).open().read_manifest()
    except Exception:  # not built yet
        pass
    started = time.perf_counter()
    manifest = build_index(str(corpus), out, config, progress=lambda _: None)
    return time.perf_counter() - started, manifest


def usage_line(name: str, manifest: Manifest, wall: float | None) -> str:
    stages = manifest.llm_usage.stages
    chat = {k: v for k, v in stages.items() if k != "embed"}
    calls = sum(v.calls for v in chat.values())
    tokens = sum(v.prompt_tokens + v.completion_tokens for v in chat.values())
    embed = stages["embed"].calls if "embed" in stages else 0
    return (f"{name:28} {'-' if wall is None else f'{wall:7.1f}':>8} {calls:>11,} {embed:>11,} "
            f"{tokens:>13,}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default="/tmp/bench-lazy")
    parser.add_argument("--llm-index", default="/tmp/podcast-llm")
    parser.add_argument("--corpus", default=str(PODCAST / "input"))
    parser.add_argument("--questions-csv", default=str(PODCAST / "questions.csv"))
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--budgets", default="100,500,1500")
    parser.add_argument("--relevant-share", type=float, default=0.5,
                        help="the server's relevance rule: a passage holding more than this "
                             "share of the question's words is relevant (lower: more are)")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    questions = first_questions(args.questions_csv, args.questions)
    if questions is None:
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    print(f"{'index':28} {'wall s':>8} {'chat calls':>11} {'embed calls':>11} {'chat tokens':>13}")
    offline_wall, offline = timed_build(Path(args.corpus), str(work / "offline"),
                                        load_config(None, args.set))
    print(usage_line("offline (hashed embeddings)", offline, offline_wall), flush=True)
    with run_test_server() as server:
        lazy_wall, lazy = timed_build(Path(args.corpus), str(work / "lazy"),
                                      lazy_config(server.url, args.set))
        chat_requests = sum(v for k, v in server.stats()["by_kind"].items() if k != "embeddings")
    print(usage_line("lazy (endpoint embeddings)", lazy, lazy_wall)
          + f"   server saw {chat_requests} chat requests", flush=True)
    ensure_index(args.llm_index, Path(args.corpus), args.set)
    print(usage_line("LLM build", IndexStore(args.llm_index).open().read_manifest(), None))

    budgets = [int(b) for b in args.budgets.split(",")]
    runs = [(f"lazy b{b}", "lazy", "lazy", {"budget": b}) for b in budgets]
    runs += [(f"lazy b{b} (LLM index)", "llm", "lazy", {"budget": b}) for b in budgets]
    runs += [("global C2", "llm", "global", {"level": 2}),
             ("global dynamic", "llm", "global", {"dynamic": True}),
             ("basic", "lazy", "basic", {}), ("basic (LLM index)", "llm", "basic", {})]
    rows = []
    with run_test_server(latency_ms=args.latency_ms,
                         relevant_share=args.relevant_share) as server:
        # Queried with the LLM for every method (the lazy index's own settings answer
        # global and basic offline).
        asked = ["global_search.method=llm", "basic_search.method=llm", *args.set]
        indexes = {"lazy": GraphIndex.open(str(work / "lazy"),
                                           config=lazy_config(server.url, asked)),
                   "llm": GraphIndex.open(args.llm_index,
                                          config=server_config(server.url, args.set))}
        for index in indexes.values():  # tables read and vectors loaded before timing
            index.search("basic", questions[0])
        for name, which, method, options in runs:
            figures = []
            for question in questions:
                started = time.perf_counter()
                result = indexes[which].search(method, question, **options)
                figures.append({"wall": time.perf_counter() - started, "calls": result.llm_calls,
                                "prompt": result.usage.prompt_tokens,
                                "completion": result.usage.completion_tokens,
                                "tests": result.details.get("relevance_tests"),
                                "cited": len(result.sources.text_units)})
            rows.append((name, figures))
            print(f"  {name} done", flush=True)
        for index in indexes.values():
            index.close()

    global_tokens = next(statistics.mean(f["prompt"] + f["completion"] for f in figures)
                         for name, figures in rows if name == "global C2")
    print(f"\n{len(questions)} questions, {args.latency_ms:g} ms per call, relevant: more "
          f"than {args.relevant_share:g} of a question's words\n")
    print(f"{'condition':26} {'calls/q':>8} {'prompt/q':>9} {'compl./q':>9} {'% C2':>6} "
          f"{'tests/q':>8} {'p50 s':>6} {'cited/q':>8}")
    for name, figures in rows:
        tokens = statistics.mean(f["prompt"] + f["completion"] for f in figures)
        tests = [f["tests"] for f in figures if f["tests"] is not None]
        print(f"{name:26} {statistics.mean(f['calls'] for f in figures):8.1f} "
              f"{statistics.mean(f['prompt'] for f in figures):9,.0f} "
              f"{statistics.mean(f['completion'] for f in figures):9,.0f} "
              f"{100 * tokens / global_tokens:5.1f}% "
              f"{statistics.mean(tests) if tests else 0:8.1f} "
              f"{statistics.median(f['wall'] for f in figures):6.2f} "
              f"{statistics.mean(f['cited'] for f in figures):8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
