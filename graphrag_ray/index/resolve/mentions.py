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
- the rest stay the short name's own.

Full names are the short name's candidates of a short-form or initials pair (not acronyms:
AI in a document that names the Allen Institute is still AI), or a rank's holders (COLONEL,
COLONEL BRANDON: `title_form`), that no rule keeps apart, each taken as its cluster's
canonical entity. A surname with an honorific (MRS FERRARS, MISS ELLIOT) is not resolved so:
a family shares its surname, and the novel that names Edward Ferrars and Anne Elliot says
MRS FERRARS of his mother and MISS ELLIOT of Anne's sister (`names.family_name`; nor MRS
FAIRFAX, the housekeeper, of Edward Fairfax Rochester); a given name with one is (MISS ANNE
is Anne Elliot's). A short name other short names were merged into (WICKHAM, with MR
WICKHAM) is resolved with their mentions. The short name stays an entity with the mentions
no document resolved.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Callable

import numpy as np
import pyarrow as pa

from graphrag_ray.index.graph.provenance import Provenance
from graphrag_ray.index.resolve.clusters import Resolution
from graphrag_ray.index.resolve.names import family_name, is_short_side, placement

# The share of a document's candidate mentions one full name needs to take the short name's
# mentions there when the text unit does not say which.
DOMINANT_SHARE = 0.8
# How often a document must name a full name, against the short name, to give it the short
# name's mentions without a text unit naming it.
NAMED_SHARE = 0.2
RESOLVED_BY_DOCUMENT = ("short_form", "initials", "title_form")


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
               apart: Callable[[int, int], bool]) -> dict[int, dict[int, tuple[float, str]]]:
    """Per short name not merged into another (it may have short names merged into it:
    MR WICKHAM into WICKHAM): its full names' canonical rows, each with the best pair's score
    and kind."""
    canonical_of = resolution.canonical_of()
    found: dict[int, dict[int, tuple[float, str]]] = defaultdict(dict)
    for a, b, score, kind in zip(pairs.column("a").to_pylist(), pairs.column("b").to_pylist(),
                                 pairs.column("score").to_pylist(),
                                 pairs.column("kind").to_pylist()):
        if kind not in RESOLVED_BY_DOCUMENT:
            continue
        short, full = (a, b) if is_short_side(titles[a], titles[b]) else (b, a)
        canonical = canonical_of.get(full, full)
        if short in canonical_of or canonical == short or apart(short, full) or \
                apart(short, canonical) or family_name(titles[short], titles[canonical]):
            continue
        if score > found[short].get(canonical, (0.0, ""))[0]:
            found[short][canonical] = (score, kind)
    return dict(found)


def resolve_mentions(titles: list[str], pairs: pa.Table, resolution: Resolution,
                     provenance: Provenance, apart: Callable[[int, int], bool]
                     ) -> list[MentionAlias]:
    """Each short name's mentions that a document resolves (see the module's docstring)."""
    members: dict[int, list[int]] = defaultdict(list)
    for alias in resolution.aliases:
        members[alias.canonical].append(alias.row)
    resolved: list[MentionAlias] = []
    for short, full_names in sorted(candidates(titles, pairs, resolution, apart).items()):
        units = provenance.units_of(np.array([short, *members[short]]))
        documents = provenance.unit_document[units]
        named = {full: provenance.units_of(np.array([full, *members[full]]))
                 for full in full_names}
        in_document = {full: Counter(provenance.unit_document[u].tolist())
                       for full, u in named.items()}
        given: dict[int, list[int]] = defaultdict(list)
        for document in np.unique(documents):
            counts = {full: c[document] for full, c in in_document.items() if c[document]}
            if not counts:
                continue
            top = max(sorted(counts), key=counts.get)
            dominant = top if counts[top] >= DOMINANT_SHARE * sum(counts.values()) and \
                counts[top] >= NAMED_SHARE * (documents == document).sum() else None
            # A surname the document gives to several people of one family (ELLIOT: Anne,
            # Sir Walter, Mr Elliot) is the family's, or any of theirs: a text unit naming
            # one of them does not say the surname is that one's.
            family = len(counts) > 1 and all(
                placement(titles[short], titles[full]) == "suffix" for full in counts) and \
                any(apart(p, q) for p, q in combinations(sorted(counts), 2))
            for unit in units[documents == document].tolist():
                here = [full for full in counts if _has(named[full], unit)]
                choice = here[0] if len(here) == 1 and not family else dominant
                if choice is not None:
                    given[choice].append(unit)
        for full, given_units in sorted(given.items()):
            score, kind = full_names[full]
            given_documents = sorted(set(provenance.unit_document[given_units].tolist()))
            resolved.append(MentionAlias(
                short, full, given_units, given_documents, score, f"in_document:{kind}",
                f"{len(given_units)} of {len(units)} mentions, in {len(given_documents)} "
                f"documents naming {titles[full]}"))
    return resolved


def _has(sorted_units: np.ndarray, unit: int) -> bool:
    at = np.searchsorted(sorted_units, unit)
    return at < len(sorted_units) and sorted_units[at] == unit
