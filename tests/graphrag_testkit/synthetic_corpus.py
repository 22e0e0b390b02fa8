"""Seeded synthetic corpora of any size, for scale tests and benchmarks.

Text that an extractor finds a realistic graph in: a cast of named entities (people,
organisations, places, events) whose mention frequencies follow a heavy tail (Zipf), a set of
recurring relationships between them (also heavy-tailed), and filler prose between the
mentions. Documents are a few thousand tokens each. The same seed gives the same corpus.

With `aliases=True` it also plants what entity resolution must get right, with the truth:
people called by their surname once introduced ("Thorvax", "Dr. Thorvax"), organisations by
their acronym, a consistent misspelling of some names; and homonyms it must leave alone: pairs
of people who share a first name, called by it in their documents, and places named like a
person's surname. `SyntheticCorpus.truth` maps each name as extracted to what it can mean.

    python scripts/make_corpus.py --tokens 1000000 --out /tmp/corpus-1m
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
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
    # Planted aliases: each name as the offline extractor gives it -> the cast names it can
    # mean (two or more: a homonym).
    truth: dict[str, list[str]] = field(default_factory=dict)


def invented_word(rng: np.random.Generator, syllables: int) -> str:
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
             for _ in range(syllables)]
    return "".join(parts).capitalize()


def _cast(rng: np.random.Generator, n_entities: int) -> dict[str, str]:
    """Name -> kind."""
    names: dict[str, str] = {}
    kinds = list(_KINDS)
    weights = np.array([_KINDS[k][1] for k in kinds])
    while len(names) < n_entities:
        kind = kinds[rng.choice(len(kinds), p=weights / weights.sum())]
        template = _KINDS[kind][0]
        names[template.format(first=invented_word(rng, 2),
                              last=invented_word(rng, int(rng.integers(2, 4))),
                              place=invented_word(rng, int(rng.integers(2, 4))),
                              org=rng.choice(_ORG_WORDS), event=rng.choice(_EVENT_WORDS))] = kind
    return names


def _misspelt(word: str) -> str:
    """Two inner letters swapped: a typist's slip that still reads as the name."""
    i = len(word) // 2
    return word[:i - 1] + word[i] + word[i - 1] + word[i + 1:]


class _Aliases:
    """The planted alias forms of each cast member and the truth about what each means."""

    def __init__(self, cast: list[str], kinds: list[str], rng: np.random.Generator):
        self.rng = rng
        self.short: dict[int, list[str]] = {}
        self.typo: dict[int, str] = {}
        people = [i for i, k in enumerate(kinds) if k == "PERSON"]
        orgs = [i for i, k in enumerate(kinds) if k == "ORGANIZATION"]
        places = [i for i, k in enumerate(kinds) if k == "GEO"]
        rng.shuffle(people)
        taken = set(cast)
        # Homonyms: every 20th pair of people share a first name and are called by it.
        shared_first = set()
        for a, b in zip(people[0:len(people) // 10:2], people[1:len(people) // 10:2]):
            renamed = f"{cast[a].split()[0]} {cast[b].split()[1]}"
            if renamed not in taken:
                taken.add(renamed)
                cast[b] = renamed
                shared_first.update((a, b))
        for i in people:
            first, last = cast[i].split()
            self.short[i] = [first] if i in shared_first else [last, f"Dr. {last}",
                                                               f"Mr. {last}"]
            if rng.random() < 0.2 and len(last) >= 6:
                self.typo[i] = f"{first} {_misspelt(last)}"
        # Places named like someone's surname (Washington the person and the state).
        for place, person in zip(places[:max(1, len(places) // 50)],
                                 [p for p in people if p not in shared_first]):
            name = cast[person].split()[1]
            if name not in taken:
                taken.add(name)
                cast[place] = name
        # Three-word organisations known by their acronym.
        for i in orgs[::3]:
            last, word = cast[i].split()
            renamed = f"{last} {invented_word(rng, 2)} {word}"
            acronym = "".join(w[0] for w in renamed.split()).upper()
            if renamed not in taken:
                taken.add(renamed)
                cast[i] = renamed
                self.short[i] = [acronym]
        self.truth: dict[str, set[str]] = defaultdict(set)
        for i, name in enumerate(cast):
            self.truth[_as_extracted(name)].add(name)
            for form in self.short.get(i, []) + ([self.typo[i]] if i in self.typo else []):
                self.truth[_as_extracted(form)].add(name)

    def mention(self, entity: int, name: str, seen: set[int]) -> str:
        """Full name on first mention in a document, then now and then a short form."""
        roll = self.rng.random()
        if entity in seen and entity in self.short and roll < 0.5:
            forms = self.short[entity]
            return forms[int(self.rng.integers(len(forms)))]
        seen.add(entity)
        if entity in self.typo and roll > 0.95:
            return self.typo[entity]
        return name


def _as_extracted(name: str) -> str:
    """A surface form as the offline extractor names it: no article, no honorific, upper."""
    words = [w for w in name.replace(".", "").split() if w.lower() != "the"]
    if len(words) > 1 and words[0] in ("Dr", "Mr"):
        words = words[1:]
    return " ".join(words).upper()


def generate_corpus(out_dir: str | Path, target_tokens: int, seed: int = 0,
                    tokens_per_document: int = 3000, encoding: str = "cl100k_base",
                    aliases: bool = False) -> SyntheticCorpus:
    rng = np.random.default_rng(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n_entities = max(40, target_tokens // 250)
    kinds_of = _cast(rng, n_entities)
    cast = list(kinds_of)
    # Its own random stream, so a corpus without aliases is the same as before they existed.
    planted = _Aliases(cast, list(kinds_of.values()), np.random.default_rng([seed, 1])) \
        if aliases else None
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
        seen: set[int] = set()

        def named(entity: int) -> str:
            return planted.mention(entity, cast[entity], seen) if planted else cast[entity]

        for i in range(n_sentences):
            roll = rng.random()
            if roll < 0.5:
                (a, b), verb = pair_list[pair_draws[i]]
                sentences.append(f"{named(a)} {verb} {named(b)}.")
            elif roll < 0.75:
                subject = named(int(subject_draws[i]))
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
                           relationships=n_relationships,
                           truth={k: sorted(v) for k, v in planted.truth.items()} if planted
                           else {})


def merge_quality(aliases: list[tuple[str, str]], titles: list[str],
                  truth: dict[str, list[str]]) -> dict:
    """Precision and recall of the merges (alias, canonical title) over pairs of extracted
    titles the truth knows: a pair is truly one entity when both names mean the same single
    cast member; a merged pair is wrong otherwise (a homonym merged counts against)."""
    known = [t for t in titles if t in truth]
    cluster = {t: t for t in titles}
    for alias, canonical in aliases:
        cluster[alias] = canonical
    members = defaultdict(list)
    for title in known:
        members[cluster[title]].append(title)
    predicted = {frozenset((a, b)) for group in members.values()
                 for i, a in enumerate(group) for b in group[i + 1:]}
    identity = defaultdict(list)
    for title in known:
        if len(truth[title]) == 1:
            identity[truth[title][0]].append(title)
    actual = {frozenset((a, b)) for group in identity.values()
              for i, a in enumerate(group) for b in group[i + 1:]}
    correct = len(predicted & actual)
    homonyms = [t for t in known if len(truth[t]) > 1]
    return {"predicted_pairs": len(predicted), "true_pairs": len(actual), "correct": correct,
            "precision": round(correct / len(predicted), 4) if predicted else 1.0,
            "recall": round(correct / len(actual), 4) if actual else 1.0,
            "homonyms_extracted": len(homonyms),
            "homonyms_merged": sum(1 for t in homonyms if cluster[t] != t or
                                   any(cluster[o] == t for o in known if o != t)),
            "titles_unknown_to_truth": len(titles) - len(known)}
