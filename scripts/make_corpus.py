"""Write a seeded synthetic corpus of about N tokens (see tests/graphrag_testkit/synthetic_corpus.py).

    python scripts/make_corpus.py --tokens 1000000 --out /tmp/corpus-1m [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit

from graphrag_testkit.synthetic_corpus import generate_corpus  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    corpus = generate_corpus(args.out, args.tokens, args.seed)
    print(f"{len(corpus.files)} documents, {corpus.tokens} tokens, {corpus.entities} entities, "
          f"{corpus.relationships} recurring relationships in {args.out} "
          f"({time.perf_counter() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
