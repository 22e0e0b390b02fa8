"""Seeded synthetic corpora of any size, for scale tests and benchmarks.

Text that an extractor finds a realistic graph in: a cast of named entities (people,
organisations, places, events) whose mention frequencies follow a heavy tail (Zipf), a set of
recurring relationships between them (also heavy-tailed), and filler prose between the
mentions. Documents are a few thousand tokens each. The same seed gives the same corpus.

    python scripts/make_corpus.py --tokens 1000000 --out /tmp/corpus-1m
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphrag_ray.tokens import count_tokens

_ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "st",
           "t", "th", "v", "w", "z"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ia", "ou"]
_CODAS = ["", "n", "r", "l", "s", "th", "m", "nd", "x"]
_KINDS = {"PERSON": ("{first} {last}", 0.45), "ORGANIZATION": ("{last} {org}", 0.2),
          "GEO": ("{place}", 0.25), "EVENT": ("the {last} {event}", 0.1)}
_ORG_WORDS = ["Institute", "Company", "Council", "Foundation", "Guild", "Bank", "Press"]
_EVENT_WORDS = ["Accord", "Summit", "Crisis", "Festival", "Trial", "Expedition"]
_VERBS = ["works with", "argues against", "funds", "writes about", "meets", "competes with",
          "advises", "travels to", "founded", "investigates"]
_FILLER = ("the report noted that progress was slow but steady across the region while "
           "observers disagreed about what the figures meant for the coming season and how "
           "much of it would last beyond the first year of the plan").split()


@dataclass
class SyntheticCorpus:
    files: list[Path]
    tokens: int
    entities: int
    relationships: int


def _word(rng: np.random.Generator, syllables: int) -> str:
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
             for _ in range(syllables)]
    return "".join(parts).capitalize()


def _cast(rng: np.random.Generator, n_entities: int) -> list[str]:
    names: dict[str, None] = {}
    kinds = list(_KINDS)
    weights = np.array([_KINDS[k][1] for k in kinds])
    while len(names) < n_entities:
        kind = kinds[rng.choice(len(kinds), p=weights / weights.sum())]
        template = _KINDS[kind][0]
        names[template.format(first=_word(rng, 2), last=_word(rng, int(rng.integers(2, 4))),
                              place=_word(rng, int(rng.integers(2, 4))),
                              org=rng.choice(_ORG_WORDS), event=rng.choice(_EVENT_WORDS))] = None
    return list(names)


def generate_corpus(out_dir: str | Path, target_tokens: int, seed: int = 0,
                    tokens_per_document: int = 3000, encoding: str = "cl100k_base"
                    ) -> SyntheticCorpus:
    rng = np.random.default_rng(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n_entities = max(40, target_tokens // 250)
    cast = _cast(rng, n_entities)
    popularity = 1.0 / np.arange(1, n_entities + 1) ** 1.1
    popularity /= popularity.sum()
    n_relationships = max(60, n_entities * 3)
    entity_cdf = np.cumsum(popularity)

    def pick_entities(k: int) -> np.ndarray:
        # Inverse-CDF sampling: O(log n) per draw (rng.choice with p= is O(n) per call).
        return np.minimum(np.searchsorted(entity_cdf, rng.random(k)), n_entities - 1)

    pairs = {}
    while len(pairs) < n_relationships:
        a, b = pick_entities(2)
        if a != b:
            pairs.setdefault((int(min(a, b)), int(max(a, b))), str(rng.choice(_VERBS)))
    pair_list = list(pairs.items())
    pair_weight = 1.0 / np.arange(1, len(pair_list) + 1) ** 0.9
    pair_cdf = np.cumsum(pair_weight / pair_weight.sum())

    files, total = [], 0
    while total < target_tokens:
        sentences = []
        n_sentences = tokens_per_document // 25
        pair_draws = np.minimum(np.searchsorted(pair_cdf, rng.random(n_sentences)),
                                len(pair_list) - 1)
        subject_draws = pick_entities(n_sentences)
        for i in range(n_sentences):
            roll = rng.random()
            if roll < 0.5:
                (a, b), verb = pair_list[pair_draws[i]]
                sentences.append(f"{cast[a]} {verb} {cast[b]}.")
            elif roll < 0.75:
                subject = cast[subject_draws[i]]
                sentences.append(f"{subject} was mentioned again as "
                                 + " ".join(rng.choice(_FILLER, size=8)) + ".")
            else:
                sentences.append(" ".join(rng.choice(_FILLER, size=14)).capitalize() + ".")
        text = " ".join(sentences) + "\n"
        path = out / f"doc-{len(files):06d}.txt"
        path.write_text(text, encoding="utf-8")
        files.append(path)
        total += count_tokens(text, encoding)
    return SyntheticCorpus(files=files, tokens=total, entities=n_entities,
                           relationships=n_relationships)
