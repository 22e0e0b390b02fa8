"""One name, several people: a person's single name whose documents fall into separate
contexts becomes one entity per context (`resolution.split_homonyms`, off by default).

Every GraphRAG system merges by title, so ELIZABETH in Pride and Prejudice and ELIZABETH in
Persuasion are one node with both women's descriptions. After short names are resolved where a
document names the full name (`mentions.py`), what is left of such a name is compared across
its documents by the names written beside it: for each document, how many of the name's text
units mention each other entity. Two documents whose co-mention profiles are similar (cosine
at least `LINK_SIMILARITY`) are one context, and so are documents joined through others
(single link: one shared context anywhere keeps them together). Contexts with at least
`MIN_UNITS` text units each are split: the largest keeps the title, the others become
`TITLE (2)`, `TITLE (3)`, by size.

Only single names of people (a first name or a surname, with or without an honorific:
JANE, MRS SMITH) are split, and only where every part is still typed a person once its
mentions are merged apart (`typed_apart`: UNIX, typed PERSON from cues in one podcast
episode, had its other episodes' mentions typed OTHER). A place or a thing written in unrelated documents is still one
thing (ENGLAND in four novels, with nothing in common around it), and so is a full name
(the same BARACK OBAMA in an article on taxes and one on Ukraine). The threshold sits
above what different people of different books share and below what one thing's mentions
share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from graphrag_ray.index.graph.provenance import Provenance
from graphrag_ray.index.elements import Renames
from graphrag_ray.index.resolve.names import name_tokens

if TYPE_CHECKING:  # scipy loads with the first split (resolution only), not with every command
    from scipy import sparse

# Documents whose co-mention profiles are at least this similar (cosine) are one context.
LINK_SIMILARITY = 0.2
# Text units a context needs to become an entity of its own; smaller ones stay with the
# largest (two stray mentions are not evidence of a second person).
MIN_UNITS = 3
SPLIT_TYPES = frozenset({"PERSON"})


@dataclass
class Split:
    """Mentions of `title` (its units, as `Provenance` unit indices) given a new name."""
    title: str
    new_title: str
    units: list[int]
    documents: list[int]
    evidence: str


def final_mentions(titles: list[str], provenance: Provenance, unit_ids: list[str],
                   renames: Renames) -> tuple[np.ndarray, np.ndarray]:
    """Every (unit, entity row) mention with the row its name has after `renames` (aliases
    merged whole or in given units), deduplicated."""
    owners = np.repeat(np.arange(len(titles)), np.diff(provenance.unit_offsets))
    units = provenance.units
    row_of = {title: row for row, title in enumerate(titles)}
    target = np.arange(len(titles))
    for alias, canonical in renames.everywhere.items():
        target[row_of[alias]] = row_of[canonical]
    final = target[owners]
    for alias, scoped in renames.in_units.items():
        at = np.flatnonzero(owners == row_of[alias])
        final[at] = [row_of[scoped.get(unit_ids[u], alias)] for u in units[at].tolist()]
    pairs = np.unique(np.stack([units, final], axis=1), axis=0) if len(units) else \
        np.zeros((0, 2), np.int64)
    return pairs[:, 0], pairs[:, 1]


def is_candidate(title: str, entity_type: str) -> bool:
    return entity_type.upper().rstrip("?") in SPLIT_TYPES and len(name_tokens(title)) == 1


def contexts(row: int, mentions: sparse.csr_matrix, by_entity: sparse.csr_matrix,
             unit_document: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The row's text units, their documents, and each document's context (a label per
    distinct document, in `np.unique` order)."""
    units = by_entity[row].indices
    documents, slot = np.unique(unit_document[units], return_inverse=True)
    if len(documents) < 2:
        return units, slot, np.zeros(len(documents), np.int64)
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components
    per_document = sparse.csr_matrix((np.ones(len(units)), (slot, np.arange(len(units)))),
                                     shape=(len(documents), len(units)))
    profile = (per_document @ mentions[units]).tocsc()
    profile[:, row] = 0  # (the name itself says nothing)
    profile = profile.tocsr()
    profile.eliminate_zeros()
    norms = np.sqrt(np.asarray(profile.multiply(profile).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    similar = (profile @ profile.T).toarray() / np.outer(norms, norms)
    _, labels = connected_components(sparse.csr_matrix(similar >= LINK_SIMILARITY),
                                     directed=False)
    return units, slot, labels


def split_homonyms(titles: list[str], types: list[str], provenance: Provenance,
                   unit_ids: list[str], renames: Renames) -> list[Split]:
    """The splits of every candidate name (see the module's docstring), after `renames`.
    `unit_ids`: text unit ids by `Provenance` unit index."""
    from scipy import sparse
    unit_index, rows = final_mentions(titles, provenance, unit_ids, renames)
    mentions = sparse.csr_matrix((np.ones(len(rows)), (unit_index, rows)),
                                 shape=(len(provenance.unit_document), len(titles)))
    by_entity = mentions.T.tocsr()
    counts = np.diff(by_entity.indptr)
    taken = set(titles)
    splits = []
    for row in np.flatnonzero(counts >= 2 * MIN_UNITS).tolist():
        if not is_candidate(titles[row], types[row]):
            continue
        units, slot, labels = contexts(row, mentions, by_entity, provenance.unit_document)
        sizes = np.bincount(labels[slot], minlength=labels.max() + 1)
        # Largest first; a tie goes to the context whose first document comes first.
        order = sorted((c for c in range(len(sizes)) if sizes[c] >= MIN_UNITS),
                       key=lambda c: (-sizes[c], np.flatnonzero(labels == c)[0]))
        number = 1
        for context in order[1:]:
            number += 1
            while f"{titles[row]} ({number})" in taken:
                number += 1
            new_title = f"{titles[row]} ({number})"
            taken.add(new_title)
            given = units[labels[slot] == context]
            documents = sorted(set(provenance.unit_document[given].tolist()))
            splits.append(Split(titles[row], new_title, given.tolist(), documents,
                                _evidence(row, given, mentions, titles)))
    return splits


def _evidence(row: int, units: np.ndarray, mentions: sparse.csr_matrix,
              titles: list[str]) -> str:
    """The names most often written beside this context's mentions."""
    beside = np.asarray(mentions[units].sum(axis=0)).ravel()
    beside[row] = 0
    top = [titles[r] for r in np.argsort(-beside, kind="stable")[:3] if beside[r] > 0]
    return f"{len(units)} mentions, beside {', '.join(top) or 'no other name'}; " \
           f"no shared context with the others"


def typed_apart(splits: list[Split], type_of: dict[str, str]) -> list[Split]:
    """The splits whose every part (the title kept and each new one) is still typed as a
    candidate once its mentions are merged apart (`type_of`: title -> type after the fold).
    A name typed a person only by cues in one context is not two people."""
    parts: dict[str, list[str]] = {}
    for split in splits:
        parts.setdefault(split.title, [split.title]).append(split.new_title)
    holds = {title for title, names in parts.items()
             if all(type_of.get(name, "").upper() in SPLIT_TYPES for name in names)}
    return [split for split in splits if split.title in holds]
