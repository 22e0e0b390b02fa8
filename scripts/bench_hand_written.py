"""Two hand-written pieces against the libraries that could replace them, on the same input:
the offline extractor's case classes (built ranges for `re` against the `regex` module's
\\p{Lu}/\\p{Ll}) and the repeated-passage MinHash (ours against datasketch's signatures).
Prints outputs compared and the best of `--runs` timings; docs/decisions.md has the result.

    pip install datasketch   # regex comes with tiktoken
    python scripts/bench_hand_written.py --corpus ../shared/corpora/podcast/input --files 300
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphrag_ray.index.chunks import repeated_passages as passages_module  # noqa: E402
from graphrag_ray.index.extract import nlp_extractor  # noqa: E402

CHUNK_CHARS = 4000


def _best(fn, runs: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return round(best, 3), result


def _with_regex_classes():
    """The extractor module loaded again with `regex` and Unicode category classes."""
    source = Path(nlp_extractor.__file__).read_text(encoding="utf-8")
    source = source.replace("import re\n", "import regex as re\n", 1)
    source = source.replace("_UPPER_RANGES, _LOWER_RANGES = _case_ranges()",
                            '_UPPER_RANGES, _LOWER_RANGES = r"\\p{Lu}", r"\\p{Ll}"', 1)
    module = type(sys)("nlp_extractor_regex")
    module.__dict__["__name__"] = "nlp_extractor_regex"
    exec(compile(source, "nlp_extractor_regex", "exec"), module.__dict__)  # noqa: S102
    return module


def case_classes(texts: list[str], runs: int) -> dict:
    ours_s, ours = _best(lambda: [repr(nlp_extractor.extract_nlp(t)) for t in texts], runs)
    other = _with_regex_classes()
    regex_s, theirs = _best(lambda: [repr(other.extract_nlp(t)) for t in texts], runs)
    return {"chunks": len(texts), "same_records": ours == theirs, "re_ranges_s": ours_s,
            "regex_classes_s": regex_s}


def minhash(texts: list[str], runs: int) -> dict:
    from datasketch import MinHash
    spans = [t[a:b] for t in texts for a, b in passages_module.passage_spans(t)
             if b - a >= 200]
    words = [passages_module._words(p) for p in spans]
    permutations = passages_module.BANDS * passages_module.ROWS

    def signature(w: list[str]):
        shingles = {" ".join(w[i:i + 3]) for i in range(max(1, len(w) - 2))}
        sketch = MinHash(num_perm=permutations, seed=1)
        sketch.update_batch([s.encode("utf-8") for s in shingles])
        return sketch.hashvalues

    ours_s, _ = _best(lambda: [passages_module._bands_of(w) for w in words], runs)
    theirs_s, _ = _best(lambda: [signature(w) for w in words], runs)
    return {"passages": len(spans), "ours_bands_s": ours_s,
            "datasketch_signatures_only_s": theirs_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True, help="a folder of text files")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    paths = sorted(p for p in Path(args.corpus).iterdir() if p.is_file())[:args.files]
    texts = [p.read_text(encoding="utf-8", errors="ignore") for p in paths]
    chunks = [t[i:i + CHUNK_CHARS] for t in texts for i in range(0, len(t), CHUNK_CHARS)]
    figures = {"case_classes": case_classes(chunks, args.runs)}
    if importlib.util.find_spec("datasketch") is not None:
        figures["minhash"] = minhash(texts, args.runs)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
