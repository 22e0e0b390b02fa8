"""What does `graphrag-ray update` cost against a full build?

On the podcast corpus (chunks of 1200 tokens, so each transcript is one chunk), with the
project's test server started as the provider (its own process): a full build of the first
1,600 files and a rebuild of the same corpus, then `update` with 16 more files (1%), then
`update` with 16 files deleted, then an `update` with nothing changed. Each run
is a CLI subprocess, as a user runs it; LLM calls are counted by the server.

    python scripts/bench_update.py                      # provider: 800 ms + 10 ms/token
    python scripts/bench_update.py --latency-ms 0 --per-token-ms 0   # an instant provider

Goals (issue 15): an update adding 1% of the corpus costs at most 5% of a full build's LLM
calls and 15% of its wall time; the rebuild of an unchanged corpus makes no call.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_throughput import CHAT_MODEL, EMBEDDING_MODEL, PODCAST, ROOT, Provider  # noqa: E402


def run(command: list[str], provider: Provider, env: dict) -> dict:
    provider.reset()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "graphrag_ray", *command], capture_output=True,
                          text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{command[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    stats = provider.stats()
    return {"wall_s": round(wall, 1), "calls": stats["requests"],
            "calls_by_kind": stats["by_kind"], "stdout_tail": done.stdout.strip().splitlines()[-3:]}


def manifest(index: Path) -> dict:
    current = json.loads((index / "index.json").read_text())["version"]
    return json.loads((index / "versions" / current / "manifest.json").read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1600)
    parser.add_argument("--change", type=int, default=16, help="files added, then deleted")
    parser.add_argument("--latency-ms", type=int, default=800)
    parser.add_argument("--per-token-ms", type=int, default=10)
    args = parser.parse_args()
    if not PODCAST.is_dir():
        print(f"skipped: {PODCAST} is not here")
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-update-"))
    files = sorted(PODCAST.iterdir())[: args.files + args.change]
    corpus, index = work / "corpus", work / "index"
    corpus.mkdir()
    for path in files[: args.files]:
        shutil.copyfile(path, corpus / path.name)
    provider = Provider({"latency_ms": args.latency_ms, "per_token_ms": args.per_token_ms,
                         "rpm": None, "tpm": None})
    config = work / "settings.yaml"
    config.write_text(
        "chunks:\n  size: 1200\n  overlap: 100\nextraction:\n  method: llm\n"
        f"llm:\n  api_base: {provider.url}\n  model: {CHAT_MODEL}\n"
        f"embeddings:\n  api_base: {provider.url}\n  model: {EMBEDDING_MODEL}\n",
        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    update = ["update", "--index", str(index), "--input", str(corpus)]
    results = {}
    try:
        build = ["index", "--config", str(config), "--input", str(corpus), "--output",
                 str(index)]
        results["full_build"] = run(build, provider, env)
        results["full_build"]["timings_s"] = manifest(index)["timings_s"]
        results["rebuild_unchanged"] = run(build, provider, env)
        for path in files[args.files:]:
            shutil.copyfile(path, corpus / path.name)
        results["update_add"] = run(update, provider, env)
        results["update_add"]["manifest"] = manifest(index)["update"]
        results["update_add"]["timings_s"] = manifest(index)["timings_s"]
        for path in files[: args.change]:
            (corpus / path.name).unlink()
        results["update_delete"] = run(update, provider, env)
        results["update_delete"]["manifest"] = manifest(index)["update"]
        results["update_no_change"] = run(update, provider, env)
    finally:
        provider.close()
        shutil.rmtree(work, ignore_errors=True)
    full = results["full_build"]
    for name in ("update_add", "update_delete", "update_no_change", "rebuild_unchanged"):
        results[name]["calls_share_of_full"] = round(results[name]["calls"] / full["calls"], 4)
        results[name]["wall_share_of_full"] = round(results[name]["wall_s"] / full["wall_s"], 3)
    print(json.dumps({"files": args.files, "change": args.change,
                      "latency_ms": args.latency_ms, "per_token_ms": args.per_token_ms,
                      **results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
