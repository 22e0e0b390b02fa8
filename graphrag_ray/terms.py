"""Content words of a text: what the offline methods (hashing embeddings, extractive scoring)
compare, so that "the", "what" and "main" never make two texts look alike."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("""
a an and are as at be by can do does for from how in is it its of on or that the their them
these they this to was were what when where which who whom why will with would about across
main most major key some any all there between into than more over such your you i we our
had has have he her his she him not but so if then been also no yes us me my
""".split())


def content_terms(text: str) -> list[str]:
    """Lower-cased words longer than one letter, stopwords removed, in order."""
    return [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS and len(t) > 1]


# Texts sharing this share of the smaller one's content terms say the same thing (a sentence
# cut short by a chunk boundary, a finding carried down to a sub-community).
NEAR_DUPLICATE_OVERLAP = 0.8


def says_the_same(terms: set[str], seen: list[set[str]]) -> bool:
    return any(len(terms & other) >= NEAR_DUPLICATE_OVERLAP * max(1, min(len(terms), len(other)))
               for other in seen)


def distinct_texts(texts: list[str], seen: list[set[str]] | None = None) -> list[str]:
    """`texts` without those that repeat an earlier one (or one of `seen`, the terms of
    texts already said, which it extends)."""
    seen = [] if seen is None else seen
    kept = []
    for text in texts:
        terms = set(content_terms(text))
        if not says_the_same(terms, seen):
            seen.append(terms)
            kept.append(text)
    return kept
