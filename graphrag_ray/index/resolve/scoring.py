"""A candidate pair's score: what the names say (`names.name_relation`) raised by what the
graph says, the evidence that two mentions are one thing in practice: the text units they
share, the neighbours they share, and the words their descriptions share. Types that
disagree (both specific, not the same) rule a pair out.

    score = name + (1 - name) * context,   context = weighted mean of the three overlaps

A same-name pair (honorifics, suffixes) starts at 1; a short form at 0.6 needs a context
of about 0.4 to pass the default threshold (0.75). Overlaps are against the smaller side
(a short form's few text units are all inside the full name's many).

A person's name is made of names: its first word or its last is a short form of it (KEVIN,
SCOTT of KEVIN SCOTT). Other things are not: a longer name that starts with a shorter one is
something named after it (ROBLOX STUDIO, TEXAS INSTRUMENTS, MICROSOFT RESEARCH), and one
that ends with it is a kind of it (AZURE LINUX is a Linux, not Linux) unless the words
before it name an organization, its owner (MICROSOFT AZURE is Azure): `names_another_thing`.
A name typed PERSON is taken for a person's only when its first word is a given name or a
word the corpus never writes in lower case nor only in capitals (an acronym), or when the
short name is one word typed PERSON too (DREW of DREW ENDY, CHASE of CHASE JARVIS; not STAR
TREK of STAR TREK PICARD): offline extraction guesses PERSON for any two or three
capitalised words (SUN MICROSYSTEMS, NORTH CAROLINA, WHEREAS YOUTUBE).

Whatever the types, a longer name that ends in a word the corpus itself writes as a word,
mostly in lower case or only in capitals (BRADY BUNCH MOVIE, HEINKEL HD), is a thing of that
kind, not the shorter name's full form, unless the shorter is a given name opening it (STEVE
of STEVE JOBS: `given_names`). Counted over the corpus, it holds in any script with case.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from graphrag_ray.index.extract.nlp_extractor import GIVEN_NAMES
from graphrag_ray.index.graph.unit_rows import UNIT_ROWS
from graphrag_ray.languages import active as language
from graphrag_ray.index.resolve.names import (
    content_tokens, is_short_side, leading_words, name_relation, name_tokens, placement)

UNTYPED = frozenset({"", "OTHER", "UNKNOWN"})
CONTEXT_WEIGHTS = {"shared_text_units": 0.45, "shared_neighbours": 0.3,
                   "description_overlap": 0.25}
_WORD = re.compile(r"[^\W\d_]{4,}")
_LOWER_CASE_WORD = re.compile(r"(?<![\w'’-])[a-z]+(?![\w'’-])")
# Words that say nothing about which thing a description is of.
_COMMON = frozenset("""
that this with from have were been they their there which would about into than them then
what when where will also more some such only other over said says very just like your
being after before while these those through again under could should because each much
""".split())


def types_conflict(type_a: str, type_b: str) -> bool:
    return type_a not in UNTYPED and type_b not in UNTYPED and type_a != type_b


_SPEAKER_LABEL = re.compile(r"^[ \t]*[A-Z][A-Z.'’\- ]{1,40}:", re.M)
_CAPITALS_WORD = re.compile(r"(?<![\w'’-])[A-Z]{2,}(?![\w'’-])")
_CAPITALISED_WORD = re.compile(r"(?<![\w'’-])[A-Z][a-z]+(?![\w'’-])")


# A name's sex by the pronouns after it (`WordForms.sexes`): the first he or she within a few
# words of the name, in its clause and before another capitalised word, counted over the
# corpus; a sex is said where one has this many votes and this many times the other's.
# Others' pronouns in a dialogue make some names even: a sex only where it is clear.
PRONOUN_WINDOW = 8
SEX_MIN_VOTES = 2
SEX_RATIO = 3.0
_CLAUSE_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|[.!?;:\"“”]")


def pronoun_votes(text: str, votes: Counter | None = None) -> Counter:
    """(capitalised word, upper case; "man" or "woman") -> votes (see `PRONOUN_WINDOW`),
    added to `votes` when given (a task's texts counted into one)."""
    tokens = _CLAUSE_TOKEN.findall(text)
    votes = Counter() if votes is None else votes
    pronouns = language().pronouns  # (the language data's: he, she, ... -> man, woman)
    for i, token in enumerate(tokens):
        if not token[:1].isupper() or token.isupper() or len(token) < 2:
            continue
        for following in tokens[i + 1:i + 1 + PRONOUN_WINDOW]:
            if not following[:1].isalpha() or following[:1].isupper() and following != "I":
                break
            if following in pronouns:
                votes[(token.upper(), pronouns[following])] += 1
                break
    return votes


@dataclass
class WordForms:
    """How often the corpus writes each word in lower case, in capitals, capitalised
    (lower-cased for comparing); and the pronouns after its capitalised words
    (`pronoun_votes`). Taken from the chunks in tasks and joined (`|`)."""
    lower: Counter = field(default_factory=Counter)
    capitals: Counter = field(default_factory=Counter)
    capitalised: Counter = field(default_factory=Counter)
    pronouns: Counter = field(default_factory=Counter)

    def __or__(self, other: WordForms) -> WordForms:
        return WordForms(self.lower + other.lower, self.capitals + other.capitals,
                         self.capitalised + other.capitalised, self.pronouns + other.pronouns)

    def sexes(self) -> dict[str, str]:
        """Capitalised word (upper case) -> "man" or "woman", where the pronouns after it say
        so clearly (`SEX_MIN_VOTES`, `SEX_RATIO`)."""
        words = {word for word, _ in self.pronouns}
        said = {}
        for word in words:
            man, woman = self.pronouns[(word, "man")], self.pronouns[(word, "woman")]
            for sex, votes, other in (("man", man, woman), ("woman", woman, man)):
                if votes >= SEX_MIN_VOTES and votes >= SEX_RATIO * other:
                    said[word] = sex
        return said

    def no_name_openers(self) -> frozenset[str]:
        """Words a person's name does not open (`is_person_name`): words written in lower
        case (north, sun), and acronyms, written only in capitals (SCO of SCO UNIX, XML of
        XML HTTP)."""
        return frozenset(self.lower.keys() | self.acronyms())

    def common_words(self) -> frozenset[str]:
        """Words the corpus writes more often in lower case than capitalised (movie,
        format), or only in capitals (HD, TV): what a name ending in one is a kind of, where
        a person's name ends in a name (`names_another_thing`). Counted, not seen once: a
        surname that is also a word (Rivers, King) is written capitalised most."""
        return frozenset({w for w, n in self.lower.items() if n > self.capitalised[w]}
                         | self.acronyms())

    def acronyms(self) -> frozenset[str]:
        """Words written only in capitals (SCO, HD)."""
        return frozenset(self.capitals.keys() - self.capitalised.keys())


def word_forms(texts: list[str]) -> WordForms:
    """(Speakers' labels, a transcript's "KEVIN SCOTT:" opening a line, are no capitals.)"""
    texts = [_SPEAKER_LABEL.sub(" ", t) for t in texts]
    pronouns: Counter = Counter()
    for text in texts:
        pronoun_votes(text, pronouns)
    return WordForms(Counter(w for t in texts for w in _LOWER_CASE_WORD.findall(t)),
                     Counter(w.lower() for t in texts for w in _CAPITALS_WORD.findall(t)),
                     Counter(w.lower() for t in texts for w in _CAPITALISED_WORD.findall(t)),
                     pronouns)


def is_person_name(title: str, kind: str, common: frozenset[str]) -> bool:
    """Typed PERSON, and its first word a given name or none of `common` (the corpus's
    `WordForms.no_name_openers`; see the module's docstring)."""
    words = content_tokens(name_tokens(title))
    first = words[0].lower() if words else ""
    return kind == "PERSON" and (first in GIVEN_NAMES or first not in common)


@dataclass(frozen=True)
class CorpusNames:
    """What the corpus and its graph say of the words in names (`names_another_thing`)."""
    # The name tokens of the graph's ORGANIZATION entities.
    organizations: frozenset[tuple[str, ...]] = frozenset()
    # The words a person's name does not open (`WordForms.no_name_openers`).
    not_openers: frozenset[str] = frozenset()
    # Words written as words, not names (`WordForms.common_words`).
    common_words: frozenset[str] = frozenset()
    # Words written only in capitals (`WordForms.acronyms`).
    acronyms: frozenset[str] = frozenset()
    # Words that open persons' names (`given_names`).
    given_names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, titles: list[str], types: list[str], forms: WordForms) -> CorpusNames:
        return cls(organization_names(titles, types), forms.no_name_openers(),
                   forms.common_words(), forms.acronyms(), given_names(titles))


def names_another_thing(short: str, short_type: str, full: str, full_type: str,
                        corpus: CorpusNames = CorpusNames()) -> bool:
    """Whether a short form names something other than the longer name (see the module's
    docstring). A longer name that ends in a word the corpus writes as a word after the
    shorter is a thing of that kind (BRADY BUNCH MOVIE, LINUX FORMAT, HEINKEL HD, INDIAN
    HINDI-LANGUAGE), whatever its guessed type, unless the shorter is a given name opening
    it (STEVE of STEVE JOBS); one opening with an acronym is no person's (SCO UNIX), however
    both are typed; an acronym the corpus writes only in capitals is not the product of the
    name before it (IOT of AZURE IOT, even with AZURE an organization)."""
    words = content_tokens(name_tokens(full))
    short_words = content_tokens(name_tokens(short))
    if placement(short, full) != "suffix" and words[-1].lower() in corpus.common_words and \
            not (short_words == words[:1] and words[0] in corpus.given_names):
        return True
    person = full_type if full_type not in UNTYPED else short_type
    if is_person_name(full, person, corpus.not_openers) or \
            short_type == full_type == "PERSON" and len(short_words) == 1 and \
            words[0].lower() not in corpus.acronyms:
        return False
    if placement(short, full) == "suffix":
        # An acronym after an owner's name is a field or league it works in (AZURE IOT,
        # DALLAS TEXANS NFL), not the owner's own product, however the owner is typed.
        return (len(short_words) == 1 and short_words[0].lower() in corpus.acronyms) or \
            name_tokens(leading_words(short, full)) not in corpus.organizations
    return True


def rules_out_short_form(titles: list[str], types: list[str], a: int, b: int,
                         corpus: CorpusNames = CorpusNames()) -> bool:
    """`names_another_thing` for rows `a` and `b` of a short-form pair, the shorter first."""
    short, full = (a, b) if is_short_side(titles[a], titles[b]) else (b, a)
    return names_another_thing(titles[short], types[short], titles[full], types[full],
                               corpus)


def given_names(titles: list[str]) -> frozenset[str]:
    """Words that open several names, each followed by another word, and end none (STEVE of
    STEVE JOBS and STEVE WOZNIAK; not BRADY of BRADY BUNCH and BRADY BUNCH MOVIE, nor
    HEINKEL, which ERNST HEINKEL ends), with the extractor's list of common given names."""
    seconds: dict[str, set[str]] = {}
    lasts = set()
    for title in titles:
        words = content_tokens(name_tokens(title))
        if len(words) >= 2:
            seconds.setdefault(words[0], set()).add(words[1])
            lasts.add(words[-1])
    by_data = {word for word, after in seconds.items() if len(after) >= 2} - lasts
    return frozenset(by_data | {name.upper() for name in GIVEN_NAMES})


def organization_names(titles: list[str], types: list[str]) -> frozenset[tuple[str, ...]]:
    return frozenset(name_tokens(t) for t, kind in zip(titles, types) if kind == "ORGANIZATION")


@dataclass
class PairScore:
    score: float
    kind: str  # the name relation: same_name, initials, acronym, short_form, typo
    evidence: str  # the figures behind the score, for people


class Profiles:
    """What scoring reads of each entity (by row): title, type, text units, neighbours and
    description words, the sets made on first use (a task scores few of the rows)."""

    def __init__(self, entities: pa.Table, neighbour_offsets: np.ndarray,
                 neighbours: np.ndarray, descriptions):
        """`entities`: title, type, unit_rows (`unit_rows.py`) in row order; neighbours in CSR form
        (row r's are `neighbours[offsets[r]:offsets[r + 1]]`); `descriptions(row)` -> the
        row's description list."""
        self.titles = entities.column("title").to_pylist()
        self.types = entities.column("type").to_pylist()
        self._units = entities.column(UNIT_ROWS)
        self._offsets, self._neighbours = neighbour_offsets, neighbours
        self._descriptions = descriptions
        self._unit_sets: dict[int, frozenset] = {}
        self._neighbour_sets: dict[int, frozenset] = {}
        self._word_sets: dict[int, frozenset] = {}

    def units(self, row: int) -> frozenset:
        if row not in self._unit_sets:
            self._unit_sets[row] = frozenset(self._units[row].as_py() or ())
        return self._unit_sets[row]

    def neighbours(self, row: int) -> frozenset:
        if row not in self._neighbour_sets:
            self._neighbour_sets[row] = frozenset(
                self._neighbours[self._offsets[row]:self._offsets[row + 1]].tolist())
        return self._neighbour_sets[row]

    def words(self, row: int) -> frozenset:
        """Description words but the entity's own name's."""
        if row not in self._word_sets:
            own = {t.lower() for t in name_tokens(self.titles[row])}
            self._word_sets[row] = frozenset(
                w for text in self._descriptions(row) or () for w in _WORD.findall(text.lower())
                if w not in _COMMON and w not in own)
        return self._word_sets[row]


def _overlap(a: frozenset, b: frozenset) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def score_pair(profiles: Profiles, a: int, b: int) -> PairScore | None:
    """None when the names are unrelated or the types disagree. A short form that names
    another thing (`names_another_thing`) is scored all the same: it never merges
    (`clusters.PairRules`), but it says its short name is not one thing's (ROBLOX of ROBLOX
    STUDIO and of ROBLOX CORPORATION)."""
    if types_conflict(profiles.types[a], profiles.types[b]):
        return None
    relation = name_relation(profiles.titles[a], profiles.titles[b])
    if relation is None:
        return None
    kind, name = relation
    words_a, words_b = profiles.words(a), profiles.words(b)
    features = {
        "shared_text_units": _overlap(profiles.units(a), profiles.units(b)),
        "shared_neighbours": _overlap(profiles.neighbours(a) - {b}, profiles.neighbours(b) - {a}),
        "description_overlap": len(words_a & words_b) / len(words_a | words_b)
        if words_a and words_b else 0.0}
    context = sum(CONTEXT_WEIGHTS[k] * v for k, v in features.items())
    score = name + (1.0 - name) * context
    evidence = f"{kind} {name:.2f}; " + ", ".join(f"{k} {v:.2f}" for k, v in features.items())
    return PairScore(round(score, 4), kind, evidence)
