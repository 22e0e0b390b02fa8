"""Real text mixed into a synthetic corpus, for scale benchmarks.

The synthetic generator's names are invented and its prose is uniform; real corpora repeat
themselves (the same transcript filed twice, a book in several editions, the same people
in every episode) and carry boilerplate (a Project Gutenberg licence). `mix_real_text` copies
real files (the podcast corpus, public-domain books) into a corpus folder until they hold a
given number of tokens, each copy opened by a preamble of its own (an archive copy
catalogued by someone else), so that a copy is not byte-identical to the one before: the
build's repeated-passage pass, the merge of names that recur across thousands of files and
the boilerplate cut all meet real text at scale.

    mix_real_text(out_dir, 10_000_000, [podcast_input_dir, carol_book_path])
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphrag_testkit.synthetic_corpus import invented_word
from graphrag_ray.tokens import count_tokens

_ROOMS = ["reading room", "archive", "library", "collection", "record office"]


@dataclass
class MixedText:
    files: list[Path]
    tokens: int
    copies: int  # how many times the sources were copied (the last copy may be partial)
    source_files: int
    source_tokens: int  # of one copy of the sources


def _preamble(rng: np.random.Generator, copy: int) -> str:
    cataloguer = f"{invented_word(rng, 2)} {invented_word(rng, 3)}"
    place = invented_word(rng, 2)
    return (f"Archive copy {copy + 1}, catalogued by {cataloguer} for the {place} "
            f"{_ROOMS[int(rng.integers(len(_ROOMS)))]}.\n\n")


def mix_real_text(out_dir: str | Path, target_tokens: int, sources: list[Path],
                  seed: int = 0, encoding: str = "cl100k_base") -> MixedText:
    """Copies of the text files of `sources` (files, or folders of them, read in name
    order) written to `out_dir` as `real-<copy>-<name>` until they hold `target_tokens`
    (the last copy stops at the file that reaches it); each copy's files open with that
    copy's preamble."""
    paths = sorted(p for source in sources
                   for p in ([source] if source.is_file() else source.iterdir())
                   if p.is_file() and p.suffix == ".txt")
    if not paths:
        raise ValueError(f"no .txt files in {', '.join(map(str, sources))}")
    texts = [(p.name, p.read_text(encoding="utf-8-sig")) for p in paths]
    tokens = [count_tokens(text, encoding) for _, text in texts]
    rng = np.random.default_rng([seed, 2])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files, total, copy = [], 0, 0
    while total < target_tokens:
        preamble = _preamble(rng, copy)
        preamble_tokens = count_tokens(preamble, encoding)
        for (name, text), n in zip(texts, tokens):
            if total >= target_tokens:
                break
            path = out / f"real-{copy:04d}-{name}"
            path.write_text(preamble + text, encoding="utf-8")
            files.append(path)
            total += n + preamble_tokens
        copy += 1
    return MixedText(files, total, copy, len(paths), sum(tokens))
