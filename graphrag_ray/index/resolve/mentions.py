"""Short names resolved where they are written, document by document.

A short name (a first name, a surname: KEVIN, ELIZABETH) that the corpus as a whole cannot
give to one full name (a host and a guest both called Kevin; Elizabeth Bennet and Elizabeth
Elliot in two novels) usually can be given one in each document: the episode that says KEVIN
names Kevin Scott, the novel that says ELIZABETH names Elizabeth Bennet. So, for a short name
not merged whole (`clusters.py`), each mention is resolved by its document:

- a mention in a text unit that names exactly one of its full names is that one (unless it
  is a surname the document gives to several of a family: ELLIOT beside Anne and Sir Walter
  Elliot);
- any other, in a document that names its full names, is the one the document names most,
  if that one has `DOMINANT_SHARE` of their mentions there and is named at least
  `NAMED_SHARE` as often as the short name (a novel that says MARY 27 times and MARY KING
  three means another Mary, never named in full);
- any other, in a document that names none of them, is resolved so by its work: the
  documents cut from one episode or one book (`work_of`: files named `...-part3.txt`,
  `... chapter 12.md`), where a transcript's part names SATYA and the episode's other parts
  SATYA NADELLA;
- the rest stay the short name's own.

Full names are the short name's candidates of a short-form or initials pair (not acronyms:
AI in a document that names the Allen Institute is still AI), or a rank's holders (COLONEL,
COLONEL BRANDON: `title_form`), that no rule keeps apart, each taken as its cluster's
canonical entity. A surname with an honorific (MRS FERRARS, MISS ELLIOT) has only the full
names of its family its honorific can say (`standing.Standings.fits`): a family shares its
surname, and the novel that names Edward Ferrars and Anne Elliot says MRS FERRARS of his
mother and MISS ELLIOT of Anne's sister (`names.family_name`; nor is MRS FAIRFAX, the
housekeeper, Edward Fairfax Rochester), but MR WICKHAM is George Wickham, the one man of
his family the novel names; a given name with an honorific is resolved as any short name
(MISS ANNE is Anne Elliot's). A short name other short names were merged into (WICKHAM,
with MR WICKHAM) is resolved with their mentions, to the full names those fit. The short
name stays an entity with the mentions no document resolved.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Callable

import numpy as np
import pyarrow as pa

from graphrag_ray.index.graph.provenance import Provenance
from graphrag_ray.index.resolve.clusters import Resolution
from graphrag_ray.languages import active as language
from graphrag_ray.index.resolve.names import (
    bearer, content_tokens, family_name, first_word, formal_names, is_short_side,
    name_tokens, placement)
from graphrag_ray.index.resolve.standing import Standings

# The share of a document's candidate mentions one full name needs to take the short name's
# mentions there when the text unit does not say which.
DOMINANT_SHARE = 0.8
# How often a document must name a full name, against the short name, to give it the short
# name's mentions without a text unit naming it.
NAMED_SHARE = 0.2
# ... or named so, counting the mentions other short names were resolved to it by.
RESOLVED_NAMED_SHARE = 0.5
RESOLVED_BY_DOCUMENT = ("short_form", "initials", "title_form", "nickname")
# A part, chapter or section number ending a document's title (its file's name): what is left
# names the work the document was cut from.
_PART_OF_WORK = re.compile(
    r"[\s_.-]*\b(?:part|pt|chapter|chap|ch|section|sec|segment)[\s_.-]*\d+$", re.I)
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")


def work_of(title: str) -> str:
    """The work a document is a part of, by its title: `Episode 29_Transcript-part12.txt` and
    `Episode 29_Transcript-part3.txt` are one episode's; a title without a part number is a
    work of its own."""
    name = _EXTENSION.sub("", title or "")
    return _PART_OF_WORK.sub("", name) or name


def works_of(titles: list[str]) -> np.ndarray:
    """Per document (by its index in `titles`), the index of its work."""
    numbers: dict[str, int] = {}
    return np.array([numbers.setdefault(work_of(t), len(numbers)) for t in titles],
                    dtype=np.int64)


@dataclass
class MentionAlias:
    """A short name's mentions given to one full name: the text units (as `Provenance`
    unit indices) and their documents."""
    row: int
    canonical: int
    units: list[int]
    documents: list[int]
    score: float
    method: str
    evidence: str


def candidates(titles: list[str], pairs: pa.Table, resolution: Resolution,
               apart: Callable[[int, int], bool], standings: Standings | None = None
               ) -> dict[int, dict[int, tuple[float, str]]]:
    """Per short name not merged into another (it may have short names merged into it:
    MR WICKHAM into WICKHAM): its full names' canonical rows, each with the best pair's score
    and kind. A surname with an honorific, or with one merged into it, has those of its
    family the honorific can say (`standing.Standings.fits`; without `standings`, none)."""
    canonical_of = resolution.canonical_of()
    members: dict[int, list[int]] = defaultdict(list)
    for alias in resolution.aliases:
        members[alias.canonical].append(alias.row)
    found: dict[int, dict[int, tuple[float, str]]] = defaultdict(dict)
    for a, b, score, kind in zip(pairs.column("a").to_pylist(), pairs.column("b").to_pylist(),
                                 pairs.column("score").to_pylist(),
                                 pairs.column("kind").to_pylist()):
        if kind not in RESOLVED_BY_DOCUMENT:
            continue
        short, full = (a, b) if is_short_side(titles[a], titles[b]) else (b, a)
        canonical = canonical_of.get(full, full)
        if short in canonical_of or canonical == short or apart(short, full) or \
                apart(short, canonical) or not _family_fits(
                    [titles[r] for r in (short, *members[short])], titles[canonical],
                    standings):
            continue
        if score > found[short].get(canonical, (0.0, ""))[0]:
            found[short][canonical] = (score, kind)
    return dict(found)


def _family_fits(short_titles: list[str], full: str, standings: Standings | None) -> bool:
    """Whether a short name (its own title, then those merged into it) can be `full` where a
    family shares the surname: a surname with an honorific only where `standings` say it
    fits (none without them); a bare one with such names merged into it (WICKHAM, with MR
    WICKHAM) only where they all fit, when `standings` are given."""
    own, *merged = short_titles
    if _surname_of(own, full, standings):
        return standings is not None and standings.fits(own, full)
    if standings is not None and first_word(own) in language().titled and \
            not standings.titled(full):
        return False  # SIR JOHN is no JOHN DASHWOOD, whom the corpus calls MR
    return standings is None or all(standings.fits(t, full) for t in merged
                                    if _surname_of(t, full, standings))


def _same_title(short: str, full: str) -> bool:
    """SIR JOHN and SIR JOHN MIDDLETON, LADY CATHERINE and LADY CATHERINE DE BOURGH: a title
    with a given name, and a full name under that title opening with it."""
    words, full_words = short.split(), full.split()
    return len(words) == 2 and len(full_words) > 2 and words[0] == full_words[0] and \
        bearer(short) is not None and words[1] == full_words[1]


def _surname_of(short: str, full: str, standings: Standings | None = None) -> bool:
    """An honorific with a family's name (`names.family_name`), not with a diminutive of the
    full name's given name (MISS LIZZY of ELIZABETH) nor with the given name itself where
    the corpus uses it so (MISS ROSAMOND of ROSAMOND OLIVER: ROSAMOND opens full names and
    ends none, `Standings.given_names`; a rank takes a surname: COLONEL FITZWILLIAM is no
    Fitzwilliam Darcy)."""
    if not family_name(short, full):
        return False
    words, full_words = content_tokens(name_tokens(short)), content_tokens(name_tokens(full))
    given = standings is not None and words[-1] == full_words[0] and \
        words[-1] in standings.given_names and first_word(short) not in language().ranks
    return not given and full_words[0] not in formal_names(words[-1])


class Works:
    """Which documents are one work's (`works_of`), to say whether two entities are named in
    one."""

    def __init__(self, provenance: Provenance, works: np.ndarray):
        self.provenance, self.works = provenance, works

    def together(self, a: int, b: int) -> bool:
        def named_in(row: int) -> set[int]:
            units = self.provenance.units_of(np.array([row]))
            return set(self.works[self.provenance.unit_document[units]].tolist())
        return bool(named_in(a) & named_in(b))


def resolve_mentions(titles: list[str], pairs: pa.Table, resolution: Resolution,
                     provenance: Provenance, apart: Callable[[int, int], bool],
                     works: np.ndarray | None = None, standings: Standings | None = None
                     ) -> list[MentionAlias]:
    """Each short name's mentions that a document, or its work, resolves (see the module's
    docstring). `works`: per document index, its work's index (`works_of`; None: each
    document is its own)."""
    if works is None:
        works = np.arange(len(provenance.document_ids or ()) or
                          int(provenance.unit_document.max(initial=-1)) + 1)
    members: dict[int, list[int]] = defaultdict(list)
    for alias in resolution.aliases:
        members[alias.canonical].append(alias.row)
    found = candidates(titles, pairs, resolution, apart, standings)

    def vouched(short: int) -> bool:
        """A family's honorific the titles say fits its full names, or a title with a given
        name beside a full name under the same title (SIR JOHN, SIR JOHN MIDDLETON), needs
        no share of the mentions: the others it could mean are ruled out by name, and the
        full name is written seldom beside it (GEORGE WICKHAM 6 times, MR WICKHAM 108)."""
        return standings is not None and any(
            _surname_of(titles[r], titles[full], standings) or
            _same_title(titles[r], titles[full]) for r in (short, *members[short])
            for full in found[short])
    # Those go first, and what they resolve names their full names for the others (a novel
    # that calls her MISS BINGLEY 60 times names Caroline Bingley: CAROLINE is she).
    is_vouched = {short: vouched(short) for short in found}
    given_to: dict[int, list[int]] = defaultdict(list)
    resolved: list[MentionAlias] = []
    for short in sorted(found, key=lambda row: (not is_vouched[row], row)):
        full_names = found[short]
        units = provenance.units_of(np.array([short, *members[short]]))
        documents = provenance.unit_document[units]
        written = {full: provenance.units_of(np.array([full, *members[full]]))
                   for full in full_names}
        named = {full: np.union1d(units_of, given_to[full]).astype(np.int64)
                 for full, units_of in written.items()}
        in_document = {full: Counter(provenance.unit_document[u].tolist())
                       for full, u in named.items()}
        written_in = {full: Counter(provenance.unit_document[u].tolist())
                      for full, u in written.items()}
        in_work = {full: Counter(works[provenance.unit_document[u]].tolist())
                   for full, u in named.items()}
        written_in_work = {full: Counter(works[provenance.unit_document[u]].tolist())
                           for full, u in written.items()}
        given: dict[tuple[str, int], list[int]] = defaultdict(list)
        for document in np.unique(documents):
            here_units = units[documents == document]
            counts = {full: c[document] for full, c in in_document.items() if c[document]}
            if not counts:  # the document names none: its work may
                work = works[document]
                counts = {full: c[work] for full, c in in_work.items() if c[work]}
                choice = _dominant(titles, short, counts, {
                    full: c[work] for full, c in written_in_work.items()},
                    0 if is_vouched[short] else int((works[documents] == work).sum()), apart,
                    family_wide=True)
                if choice is not None:
                    given[("in_work", choice)].extend(here_units.tolist())
                continue
            dominant = _dominant(titles, short, counts, {
                full: c[document] for full, c in written_in.items()},
                0 if is_vouched[short] else len(here_units), apart)
            family = _family(titles, short, counts, apart)
            for unit in here_units.tolist():
                here = [full for full in counts if _has(named[full], unit)]
                choice = here[0] if len(here) == 1 and not family else dominant
                if choice is not None:
                    given[("in_document", choice)].append(unit)
        for (where, full), given_units in sorted(given.items(), key=lambda g: (g[0][1], g[0][0])):
            given_to[full].extend(given_units)
            score, kind = full_names[full]
            given_documents = sorted(set(provenance.unit_document[given_units].tolist()))
            resolved.append(MentionAlias(
                short, full, given_units, given_documents, score, f"{where}:{kind}",
                f"{len(given_units)} of {len(units)} mentions, in {len(given_documents)} "
                f"documents {'naming' if where == 'in_document' else 'of works naming'} "
                f"{titles[full]}"))
    return resolved


def _dominant(titles: list[str], short: int, counts: dict[int, int], written: dict[int, int],
              mentions: int, apart: Callable[[int, int], bool], family_wide: bool = False
              ) -> int | None:
    """The full name that takes a place's (a document's, a work's) mentions of the short
    name: the one it names most (`counts`: written, or given it by other short names there),
    with `DOMINANT_SHARE` of its full names' mentions and written at least `NAMED_SHARE` of
    the short name's `mentions` times, or named so `RESOLVED_NAMED_SHARE` of them (MISS
    BINGLEY's 60 given to Caroline Bingley name her for CAROLINE; MISS KING's 5 do not make
    the novel's 27 MARYs Mary King). `family_wide`: none where the place gives the surname
    to several of a family (`_family`)."""
    if not counts or family_wide and _family(titles, short, counts, apart):
        return None
    top = max(sorted(counts), key=counts.get)
    return top if counts[top] >= DOMINANT_SHARE * sum(counts.values()) and (
        written.get(top, 0) >= NAMED_SHARE * mentions or
        counts[top] >= RESOLVED_NAMED_SHARE * mentions) else None


def _family(titles: list[str], short: int, counts: dict[int, int],
            apart: Callable[[int, int], bool]) -> bool:
    """A surname a place gives to several people of one family (ELLIOT: Anne, Sir Walter,
    Mr Elliot) is the family's, or any of theirs: a text unit naming one of them does not
    say the surname is that one's."""
    return len(counts) > 1 and all(
        placement(titles[short], titles[full]) == "suffix" for full in counts) and \
        any(apart(p, q) for p, q in combinations(sorted(counts), 2))


def _has(sorted_units: np.ndarray, unit: int) -> bool:
    at = np.searchsorted(sorted_units, unit)
    return at < len(sorted_units) and sorted_units[at] == unit
