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
