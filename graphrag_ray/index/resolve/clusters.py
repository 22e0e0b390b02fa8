"""Scored pairs -> clusters of entities that are one thing, each with a canonical entity.

Pairs are joined strongest first; two clusters join only if no pair across them is ruled
out (a forbidden merge, types that disagree, names that say they differ: FANNY PRICE and
FANNY DASHWOOD), so a chain of plausible pairs cannot carry one person into another.
A short name whose strong-enough partners include two that cannot be one (FANNY, between
FANNY PRICE and FANNY DASHWOOD; WASHINGTON the person and the state) is ambiguous: it joins
neither. A bare surname beside honorifics that say different people is the family's man's
(BINGLEY joins MR BINGLEY, not MISS BINGLEY; WICKHAM, beside GEORGE and LYDIA WICKHAM, joins
MR WICKHAM alone), and between women only it is ambiguous (MRS and MISS DASHWOOD).

A person's one-word short name whose only partner is one full name (DREW, whose corpus names
no other Drew) takes it below the threshold too, where the corpus names the full name at
least `SOLE_NAMED_SHARE` as often and the pair has some evidence of its own
(`SOLE_MIN_SCORE`): scattered mentions seldom share enough text units and neighbours to reach
the threshold, and nothing says it is anyone else. (Not other things: GITHUB and GITHUB
COPILOT, ARCTIC and ARCTIC CIRCLE are each other's only partners too.) So do a place's or
an organization's name and that name with a kind word after it, typed alike (STANFORD,
STANFORD UNIVERSITY: the language data's `same_thing_kind_words`), and an acronym of three letters
or more
and the one name it spells, named in one work (CMU and CARNEGIE MELLON UNIVERSITY in one
episode; not HCI and a HUMAN-CENTERED INSTITUTE that no episode names with it). A partner
named after a typed short name makes it no one's less (STANFORD RESEARCH leaves STANFORD to
STANFORD UNIVERSITY). Forced merges come first and override every rule; forbidden merges
are never made.

The canonical entity of a cluster is its forced first name, else its most frequent name of
two words or more (SHERLOCK HOLMES over HOLMES, whatever their counts; MIRA MURATI over a
run-on KEVIN SCOTT MIRA MURATI seen once), then the fullest, then the first alphabetically.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable

import pyarrow as pa

from graphrag_ray.index.extract.tuples import normalize_name
from graphrag_ray.index.resolve.names import (
    TWO_TITLES, bearer, content_tokens, family_name, is_short_side, name_relation, name_tokens,
    placement)
from graphrag_ray.index.resolve.scoring import (
    UNTYPED, CorpusNames, WordForms, is_person_name, rules_out_short_form, types_conflict)

# Clusters larger than this take no more members (a guard against a pathological chain).
MAX_CLUSTER_SIZE = 64
# How often the corpus must name a short name's only full name, against the short name, for
# the pair to merge below the threshold (a novel saying MARY 27 times and MARY KING three
# means another Mary; `mentions.NAMED_SHARE` is the same rule per document).
SOLE_NAMED_SHARE = 0.2
# A short form scores 0.6 on the names alone: this much means the two share some text units,
# neighbours or description words. Below it, pairs of unrelated names a slip apart
# with no shared context at all.
SOLE_MIN_SCORE = 0.65


@dataclass
class Alias:
    row: int  # the alias's entity row
    canonical: int  # its canonical entity's row
    score: float
    # forced | <name relation> (rules) | llm:<name relation> | sole:<name relation>
    method: str
    evidence: str


@dataclass
class Resolution:
    aliases: list[Alias] = field(default_factory=list)
    ambiguous: list[int] = field(default_factory=list)  # short names left alone
    forbidden_pairs_kept_apart: int = 0

    def canonical_of(self) -> dict[int, int]:
        return {a.row: a.canonical for a in self.aliases}


class _Clusters:
    def __init__(self):
        self.parent: dict[int, int] = {}
        self.members: dict[int, list[int]] = {}

    def find(self, row: int) -> int:
        self.parent.setdefault(row, row)
        self.members.setdefault(row, [row])
        while self.parent[row] != row:
            self.parent[row] = self.parent[self.parent[row]]
            row = self.parent[row]
        return row

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if len(self.members[ra]) < len(self.members[rb]):
                ra, rb = rb, ra
            self.parent[rb] = ra
            self.members[ra] += self.members.pop(rb)


def _rows_by_title(titles: list[str], names: list[list[str]]) -> list[list[int]]:
    index = {t: i for i, t in enumerate(titles)}
    return [[index[n] for n in dict.fromkeys(map(normalize_name, group)) if n in index]
            for group in names]


# The types a name and the name with a kind word after it (the language data's
# `same_thing_kind_words`)
# must both have to be one thing.
KIND_FORM_TYPES = frozenset({"GEO", "ORGANIZATION"})


class PairRules:
    """What rules two rows out of one cluster whatever their score: a forbidden merge, types
    that disagree, names that say they differ (`names.name_relation`), a short form that
    names another thing (`scoring.names_another_thing`). A forced alias's name (BOZ for
    CHARLES DICKENS) is the user's word: it rules no one out by name."""

    def __init__(self, titles: list[str], types: list[str], force: list[list[str]] = (),
                 forbid: list[list[str]] = (), forms: WordForms | None = None):
        """`forms`: how the corpus writes its words (`scoring.names_another_thing`)."""
        self.titles, self.types = titles, types
        forms = forms or WordForms()
        self.corpus = CorpusNames.of(titles, types, forms)
        self.forbidden = {frozenset((a, b)) for group in _rows_by_title(titles, forbid)
                          for i, a in enumerate(group) for b in group[i + 1:]}
        self.forced_groups = [g for g in _rows_by_title(titles, force) if len(g) > 1]
        self.vouched = {r for g in self.forced_groups for r in g[1:]}

    def persons_short_name(self, short: int, full: int) -> bool:
        """One word of a person's name, written exactly (DREW of DREW ENDY); a surname only
        without an honorific (MRS CROFT is not ADMIRAL CROFT: a family shares its surname)."""
        words = content_tokens(name_tokens(self.titles[short]))
        return len(words) == 1 and words[0] in content_tokens(name_tokens(self.titles[full])) \
            and not family_name(self.titles[short], self.titles[full]) \
            and self.types[full] == "PERSON" and self.types[short] in ("PERSON", *UNTYPED) \
            and (self.types[short] == "PERSON" or
                 is_person_name(self.titles[full], "PERSON", self.corpus.not_openers))

    def kind_form(self, short: int, full: int) -> bool:
        """A place or an organization and its name with a kind word after it, typed alike
        (THORNFIELD, THORNFIELD HALL; STANFORD, STANFORD UNIVERSITY:
        the language data's `same_thing_kind_words`)."""
        relation = name_relation(self.titles[short], self.titles[full])
        return relation is not None and relation[0] == "kind_form" and not self.apart(short, full)

    def acronym(self, short: int, full: int) -> bool:
        """An acronym of three letters or more and the one name of something it spells
        (CMU, CARNEGIE MELLON UNIVERSITY), not a person's (two letters spell too many names;
        a person's initials are seldom their name)."""
        relation = name_relation(self.titles[short], self.titles[full])
        return relation is not None and relation[0] == "acronym" and \
            len("".join(name_tokens(self.titles[short]))) >= 3 and \
            not is_person_name(self.titles[full], self.types[full],
                               self.corpus.not_openers) and not self.apart(short, full)

    def apart(self, a: int, b: int) -> bool:
        if frozenset((a, b)) in self.forbidden or types_conflict(self.types[a], self.types[b]):
            return True
        if a in self.vouched or b in self.vouched:
            return False
        relation = name_relation(self.titles[a], self.titles[b])
        if relation is not None and relation[0] == "kind_form":
            return self.types[a] != self.types[b] or self.types[a] not in KIND_FORM_TYPES
        return relation is None or self.named_after(a, b, relation)

    def named_after(self, a: int, b: int, relation: tuple[str, float] | None = None) -> bool:
        """Whether the longer of two names is something named after the shorter (STANFORD
        RESEARCH after STANFORD: `scoring.names_another_thing`)."""
        relation = relation or name_relation(self.titles[a], self.titles[b])
        return relation is not None and relation[0] == "short_form" and rules_out_short_form(
            self.titles, self.types, a, b, self.corpus)


def _same_or_surname(honoured: str, bare: str) -> bool:
    """Whether a name with honorifics is a bare name's own (MR WICKHAM of WICKHAM) or its
    surname's (MR WENTWORTH, CAPTAIN WENTWORTH of FREDERICK WENTWORTH); not SIR FREDERICK,
    his given name's, which says nothing of which of the family the surname's honorifics
    are."""
    words, bare_words = content_tokens(name_tokens(honoured)), content_tokens(name_tokens(bare))
    return words == bare_words or placement(honoured, bare) == "suffix"


def resolve_clusters(titles: list[str], frequency: list[int], pairs: pa.Table,
                     threshold: float, rules: PairRules,
                     confirmed: set[tuple[int, int]] = frozenset(),
                     together: Callable[[int, int], bool] | None = None) -> Resolution:
    """`pairs` (a, b, score, kind, evidence): the candidates at least at the review threshold;
    those at `threshold` or above are accepted, and those below it only if in `confirmed`
    (the LLM said yes); all of them count as evidence of ambiguity. `rules`: the forced and
    forbidden merges and what keeps two rows apart (`PairRules`, over the same rows).
    `together(a, b)`: whether two rows are named in one work (`mentions.Works`), which an
    acronym and its only spelled-out name must be to merge below the threshold (None: they
    do not)."""
    candidates = list(zip(pairs.column("a").to_pylist(), pairs.column("b").to_pylist(),
                          pairs.column("score").to_pylist(), pairs.column("kind").to_pylist(),
                          pairs.column("evidence").to_pylist()))
    partners, men = _partners(titles, candidates, rules)
    forced_rows = {r for g in rules.forced_groups for r in g}
    ambiguous, mans_only = _ambiguous(titles, candidates, partners, men, threshold, rules,
                                      forced_rows)
    sole = _sole_partners(partners, ambiguous, frequency, rules, together)

    def womans(a: int, b: int) -> bool:
        """A bare name paired with a woman's honorific where it has a man's (joined last)."""
        return any(row in men and men[row] and other not in men[row]
                   for row, other in ((a, b), (b, a)))
    candidates.sort(key=lambda p: (womans(p[0], p[1]), -p[2], p[0], p[1]))
    resolution = Resolution()
    resolution.ambiguous = sorted(ambiguous)

    def admitted(a: int, b: int, score: float) -> bool:
        accepted = score >= threshold or (a, b) in confirmed or \
            score >= SOLE_MIN_SCORE and frozenset((a, b)) in sole
        mans = [row in mans_only and other in men[row] for row, other in ((a, b), (b, a))]
        return accepted and not ((a in ambiguous or b in ambiguous) and not any(mans) or any(
            row in mans_only and not is_mans for row, is_mans in zip((a, b), mans)))

    joined = _join(candidates, admitted, rules, resolution, threshold, confirmed)
    _name_aliases(joined, titles, frequency, forced_rows, resolution)
    return resolution


def _partners(titles: list[str], candidates: list[tuple], rules: PairRules
              ) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """Each short name's candidate full names, and each bare name's partners with a man's
    honorific."""
    partners: dict[int, set[int]] = defaultdict(set)
    honoured: dict[int, set[int]] = defaultdict(set)  # a bare name's partners with honorifics
    for a, b, _, _, _ in candidates:
        for short, other in ((a, b), (b, a)):
            if is_short_side(titles[short], titles[other]):
                partners[short].add(other)
            elif bearer(titles[short]) is None and bearer(titles[other]) is not None and \
                    _same_or_surname(titles[other], titles[short]):
                honoured[short].add(other)
    men = {row: {o for o in others if bearer(titles[o]) == "man"}
           for row, others in honoured.items()}
    for row, others in honoured.items():
        # A bare surname is the man's where the family has one (BINGLEY is MR BINGLEY, not
        # MISS BINGLEY); between women only (MRS and MISS DASHWOOD) it cannot say.
        partners[row] |= men[row] or others
    # (A thing named after a typed short name says nothing about which of the others it is;
    # a partner kept apart by its type does, and so does one named after an untyped short
    # name: offline types are guesses, and PONNOU ROXTAND, guessed an organization, is a
    # man PONNOU may be.)
    partners = {row: {p for p in others if rules.types[row] in UNTYPED or
                      not rules.named_after(row, p)} for row, others in partners.items()}
    return partners, men


def _ambiguous(titles: list[str], candidates: list[tuple], partners: dict[int, set[int]],
               men: dict[int, set[int]], threshold: float, rules: PairRules,
               forced_rows: set[int]) -> tuple[set[int], set[int]]:
    """The short names that may be any of several of their partners, and of those the ones
    that are still their man's."""
    # Two men a family's titles name (MR and CAPTAIN WENTWORTH) whose own pair the context
    # did not carry to the threshold may be two (Edward the curate and Frederick), and the
    # bare surname beside them either's. (A full name beside them is one of them, whichever.)
    scores = {frozenset((a, b)): score for a, b, score, _, _ in candidates}

    def differ(row: int, p: int, q: int) -> bool:
        return rules.apart(p, q) or len(content_tokens(name_tokens(titles[row]))) == 1 and \
            scores.get(frozenset((p, q)), 1.0) < threshold and \
            name_relation(titles[p], titles[q]) == ("same_name", TWO_TITLES)
    ambiguous = {row for row, others in partners.items() if row not in forced_rows and any(
        differ(row, p, q) for p, q in combinations(sorted(others), 2))}
    # ... where the family's full names make it so, it is still its man's (WICKHAM beside
    # GEORGE and LYDIA WICKHAM is MR WICKHAM, however ambiguous MR WICKHAM is), and joins no
    # one else.
    # (A surname: the last word of the full names it stands beside. JOHN beside SIR JOHN and
    # JOHN DASHWOOD is a given name, which a title does not make anyone's in particular.)
    mans_only = {row for row in ambiguous if men.get(row) and not any(
        differ(row, p, q) for p, q in combinations(sorted(men[row]), 2)) and all(
        placement(titles[row], titles[full]) == "suffix" for full in partners[row] - men[row])}
    return ambiguous - mans_only, mans_only


def _sole_partners(partners: dict[int, set[int]], ambiguous: set[int], frequency: list[int],
                   rules: PairRules, together: Callable[[int, int], bool] | None
                   ) -> set[frozenset]:
    """The pairs of a short name and its only partner that may join below the threshold."""

    def takes_sole(short: int, full: int) -> bool:
        if rules.kind_form(short, full):
            return True
        if rules.acronym(short, full):
            return together is not None and together(short, full)
        return rules.persons_short_name(short, full) and \
            frequency[full] >= SOLE_NAMED_SHARE * frequency[short]
    return {frozenset((row, *others)) for row, others in partners.items()
            if len(others) == 1 and row not in ambiguous and takes_sole(row, next(iter(others)))}


@dataclass
class _Joined:
    clusters: "_Clusters"
    forced_canonical: dict[int, int]
    # The accepted pairs that joined clusters, and each row's strongest one (and with whom).
    direct: dict[tuple[int, int], tuple[float, str, str]]
    best: dict[int, tuple[float, str, str, int]]


def _join(candidates: list[tuple], admitted: Callable[[int, int, float], bool],
          rules: PairRules, resolution: Resolution, threshold: float,
          confirmed: set[tuple[int, int]]) -> _Joined:
    """The admitted pairs joined, strongest first, into clusters no forbidden or apart pair
    and no more than `MAX_CLUSTER_SIZE` rows."""
    clusters = _Clusters()
    joined = _Joined(clusters, {}, {}, {})
    for group in rules.forced_groups:
        for row in group[1:]:
            clusters.union(group[0], row)
        joined.forced_canonical[clusters.find(group[0])] = group[0]
    for a, b, score, kind, evidence in candidates:
        if not admitted(a, b, score):
            continue
        ra, rb = clusters.find(a), clusters.find(b)
        if ra == rb:
            continue
        across = [(x, y) for x in clusters.members[ra] for y in clusters.members[rb]]
        if len(across) > MAX_CLUSTER_SIZE ** 2 or \
                len(clusters.members[ra]) + len(clusters.members[rb]) > MAX_CLUSTER_SIZE:
            continue
        if any(frozenset(p) in rules.forbidden for p in across):
            resolution.forbidden_pairs_kept_apart += 1
            continue
        if any(rules.apart(x, y) for x, y in across):
            continue
        canonical = joined.forced_canonical.pop(ra, None)
        if canonical is None:
            canonical = joined.forced_canonical.pop(rb, None)
        clusters.union(a, b)
        if canonical is not None:
            joined.forced_canonical[clusters.find(a)] = canonical
        method = kind if score >= threshold else f"llm:{kind}" if (a, b) in confirmed \
            else f"sole:{kind}"
        joined.direct[(a, b)] = (score, method, evidence)
        for row, partner in ((a, b), (b, a)):
            if row not in joined.best or score > joined.best[row][0]:
                joined.best[row] = (score, method, evidence, partner)
    return joined


def _name_aliases(joined: _Joined, titles: list[str], frequency: list[int],
                  forced_rows: set[int], resolution: Resolution) -> None:
    """Each cluster's canonical row (forced, else the most frequent full name) and its
    aliases, each with the pair that joined it."""
    clusters = joined.clusters
    for root, members in clusters.members.items():
        if len(members) < 2 or clusters.find(root) != root:
            continue
        canonical = joined.forced_canonical.get(root)
        if canonical is None:
            canonical = min(members, key=lambda r: (
                len(content_tokens(name_tokens(titles[r]))) < 2, -frequency[r],
                -len(content_tokens(name_tokens(titles[r]))), titles[r]))
        for row in sorted(members):
            if row == canonical:
                continue
            pair = (min(row, canonical), max(row, canonical))
            if row in forced_rows and canonical in forced_rows:
                resolution.aliases.append(Alias(row, canonical, 1.0, "forced",
                                                "listed in resolution.force_merge"))
            elif pair in joined.direct:
                score, method, evidence = joined.direct[pair]
                resolution.aliases.append(Alias(row, canonical, score, method, evidence))
            else:  # joined through another member: say which
                score, method, evidence, partner = joined.best[row]
                resolution.aliases.append(Alias(row, canonical, score, method,
                                                f"via {titles[partner]}: {evidence}"))
    resolution.aliases.sort(key=lambda a: (a.canonical, a.row))
