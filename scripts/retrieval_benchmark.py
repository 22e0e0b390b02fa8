"""Retrieval benchmark: the field's multi-hop QA table (recall@2/5/10 of the supporting
passages, answer in the top 5) for every query method, beside BM25 and dense baselines, on a
question file in the shared, HotpotQA/2WikiMultiHopQA or MuSiQue layout.

    python scripts/retrieval_benchmark.py --questions ../shared/benchmarks/hotpotqa-100/questions.json
    python scripts/retrieval_benchmark.py --questions qa_train.json --out /tmp/musique
    python scripts/retrieval_benchmark.py --questions ... --set embeddings.method=hashing

The passages are indexed as one document each (a JSONL corpus of id, title, text: the
shared layout's `corpus.jsonl` beside its questions, else every passage the question file
gives, once), offline with the defaults plus any `--set`, then `graphrag-ray eval retrieval`
runs over them. The build's wall time and the index's embedding method are printed too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphrag_ray.storage import IndexStore  # noqa: E402


def corpus_of(questions: Path) -> list[dict]:
    """The passages to index: `corpus.jsonl` beside the questions, or the questions' own."""
    beside = questions.parent / "corpus.jsonl"
    if beside.is_file():
        return [json.loads(line) for line in beside.read_text().splitlines() if line.strip()]
    text = questions.read_text(encoding="utf-8").strip()
    rows = json.loads(text) if text.startswith("[") else [json.loads(line) for line in
                                                          text.splitlines() if line.strip()]
    passages = {}
    for row in rows:
        pairs = [(p["title"], p["paragraph_text"]) for p in row.get("paragraphs", [])]
        pairs += [(title, "".join(sentences)) for title, sentences in row.get("context", [])]
        for title, body in pairs:
            key = hashlib.sha1(f"{title}\n{body}".encode()).hexdigest()[:12]
            passages[key] = {"id": key, "title": title, "text": body}
    return list(passages.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", required=True)
    parser.add_argument("--out", default="retrieval-benchmark", help="working folder")
    parser.add_argument("--methods", default="basic,local,drift,lazy")
    parser.add_argument("--set", action="append", default=[], help="build settings")
    args = parser.parse_args()
    questions, out = Path(args.questions), Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    (out / "input").mkdir(parents=True)
    passages = corpus_of(questions)
    (out / "input" / "corpus.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    settings = [item for value in ["input.id_column=id", *args.set] for item in ("--set", value)]
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "graphrag_ray", "index", "--input", str(out / "input"),
                    "--output", str(out / "index"), *settings], check=True,
                   stdout=subprocess.DEVNULL)
    built = time.perf_counter() - started
    manifest = IndexStore(str(out / "index")).open().read_manifest()
    print(f"{len(passages)} passages indexed in {built:.1f} s; embeddings: "
          f"{manifest.embeddings.method} ({manifest.embeddings.model})")
    subprocess.run([sys.executable, "-m", "graphrag_ray", "eval", "retrieval", "--index",
                    str(out / "index"), "--questions", str(questions), "--methods",
                    args.methods, "--json", str(out / "figures.json")], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
