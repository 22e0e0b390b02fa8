"""`llm.batch: extraction` against the online build, through the test server playing the
Batch API (a completion delay per batch), on Carol and the podcast corpus:

    python scripts/bench_batch.py                        # Carol and podcast, 30 s per batch
    python scripts/bench_batch.py --corpora carol --delay 5
    python scripts/bench_batch.py --corpora carol --embeddings   # embeddings.batch too

Per corpus: wall time, calls and tokens per stage (online calls vs batch lines), rounds and
batches, cost at gpt-4o-mini prices (batch at half), and whether the tables are the same.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit

from graphrag_ray import load_config, schema  # noqa: E402
from graphrag_ray.index.build import build_index  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402
from graphrag_testkit.llm_server import run_test_server  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpora"
CORPORA = {"carol": Path(__file__).resolve().parents[1] / "tests" / "data" / "christmas_carol",
           "podcast": SHARED / "podcast" / "input"}
COMPARED = {schema.ENTITIES: ["title", "type", "description"],
            schema.RELATIONSHIPS: ["source", "target", "description", "weight"]}


EMBEDDINGS = {name: ["id", "vector"] for name in (
    schema.ENTITY_DESCRIPTION_EMBEDDINGS, schema.REPORT_EMBEDDINGS, schema.TEXT_UNIT_EMBEDDINGS)}


def tables(out: Path, embeddings: bool = False) -> dict:
    version = IndexStore(str(out)).open()
    compared = {**COMPARED, **(EMBEDDINGS if embeddings else {})}
    return {name: version.read_table(name, columns).sort_by(columns[0]).to_pylist()
            for name, columns in compared.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpora", default="carol,podcast")
    parser.add_argument("--delay", type=float, default=30.0, help="seconds per batch")
    parser.add_argument("--work", default="/tmp/bench-batch")
    parser.add_argument("--mode", default="true", choices=["true", "extraction"],
                        help="llm.batch: every chat stage, or extraction only")
    parser.add_argument("--embeddings", action="store_true",
                        help="embeddings through the test server, and by batch in the batch "
                             "build (embeddings.batch)")
    args = parser.parse_args()
    for name in args.corpora.split(","):
        corpus = CORPORA[name]
        if not corpus.exists():
            print(f"{name}: skipped ({corpus} not found)")
            continue
        work = Path(args.work) / name
        shutil.rmtree(work, ignore_errors=True)
        results = {}
        for mode in ("online", "batch"):
            with run_test_server(batch_delay_s=args.delay) as server:
                config = load_config(None, [
                    "extraction.method=llm", f"llm.api_base={server.url}",
                    "llm.model=gpt-4o-mini", "llm.batch_poll_s=1",
                    *([f"llm.batch={args.mode}"] if mode == "batch" else []),
                    *([f"embeddings.api_base={server.url}", "embeddings.batch_poll_s=1",
                       "embeddings.model=text-embedding-3-small"] if args.embeddings else []),
                    *(["embeddings.batch=true"] if args.embeddings and mode == "batch"
                      else [])])
                started = time.perf_counter()
                manifest = build_index(str(corpus), str(work / mode), config,
                                       progress=lambda _: None)
                wall = time.perf_counter() - started
                stats = server.stats()
            results[mode] = (manifest, wall, stats)
        print(f"\n{name}: {args.delay:g} s per batch")
        print(f"{'':8} {'wall s':>8} {'online calls':>13} {'batch lines':>12} "
              f"{'chat tokens':>15} {'embed tokens':>13} {'cost':>9}")
        for mode, (manifest, wall, stats) in results.items():
            stages = manifest.llm_usage.stages
            tokens = sum(f.prompt_tokens + f.completion_tokens
                         for name, f in stages.items() if not name.startswith("embed"))
            embedded = sum(f.prompt_tokens for name, f in stages.items()
                           if name.startswith("embed"))
            online = sum(v for k, v in stats["by_kind"].items() if not k.startswith("batch:"))
            print(f"{mode:8} {wall:8.1f} {online:13,} {stats['batch'].get('lines', 0):12,} "
                  f"{tokens:15,} {embedded:13,} "
                  f"${manifest.llm_usage.total.cost_usd:.4f}")
        for phase, f in results["batch"][0].batch["phases"].items():
            print(f"batch {phase}: {f['rounds']} rounds, {f['batches']} batches, "
                  f"{f['requests']} requests, {f['failed_lines']} failed lines, "
                  f"{f['wall_s']:.1f} s waiting and collecting")
        same = tables(work / "online", args.embeddings) == tables(work / "batch", args.embeddings)
        print(f"same tables{' and vectors' if args.embeddings else ''}: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
