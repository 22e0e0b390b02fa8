"""Passages that recur across many documents (licences, disclaimers, headers, a show's
intro, the safe-harbour paragraph of every earnings call): found before extraction, kept in
the index once, and kept out of extraction and answer contexts.

A passage is a paragraph (text between blank lines; a line, in a document without blank
lines) of at least `min_chars` characters. Its key is a hash of its words in lower case with
digits folded, so the same paragraph with another year or quarter is the same passage. A key
found in at least `min_documents` documents is repeated. The first document that has it (in
corpus order) keeps it as a text unit of its own, marked `repeated_passage` (not extracted,
not in answer contexts); every document has it cut from the text it is chunked from, so
extraction (and its LLM calls) sees it nowhere.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_WORDS = re.compile(r"[^\W_]+")


def passage_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph, or of each line when the text has no blank line."""
    breaks = _PARAGRAPH_BREAK if _PARAGRAPH_BREAK.search(text) else re.compile(r"\n")
    spans, start = [], 0
    for match in breaks.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def passage_key(passage: str) -> str:
    words = " ".join(_WORDS.findall(re.sub(r"\d", "0", passage.lower())))
    return hashlib.blake2b(words.encode("utf-8"), digest_size=12).hexdigest()


def document_keys(text: str, min_chars: int) -> list[str]:
    """The distinct keys of a document's passages long enough to count."""
    return list(dict.fromkeys(passage_key(text[a:b]) for a, b in passage_spans(text)
                              if b - a >= min_chars))


@dataclass
class RepeatedPassages:
    """Repeated keys -> the corpus position (`chunk_seq`-style document order) of the first
    document that has each."""
    first: dict[str, int] = field(default_factory=dict)
    documents_with: dict[str, int] = field(default_factory=dict)

    @classmethod
    def find(cls, documents: list[tuple[int, list[str]]], min_documents: int
             ) -> "RepeatedPassages":
        """`documents`: (position, keys) of every document."""
        counts: Counter = Counter()
        first: dict[str, int] = {}
        for position, keys in documents:
            counts.update(keys)
            for key in keys:
                first[key] = min(first.get(key, position), position)
        repeated = {k for k, n in counts.items() if n >= min_documents}
        return cls({k: first[k] for k in repeated}, {k: counts[k] for k in repeated})


def split_repeated(text: str, repeated: RepeatedPassages, position: int, min_chars: int
                   ) -> tuple[str, list[str], int]:
    """The document's text without its repeated passages (each cut replaced by a paragraph
    break), the passages this document keeps as their first home, and the characters cut."""
    kept, homed, cut, last = [], [], 0, 0
    for a, b in passage_spans(text):
        if b - a < min_chars:
            continue
        key = passage_key(text[a:b])
        if key not in repeated.first:
            continue
        kept.append(text[last:a])
        if repeated.first[key] == position:
            homed.append(text[a:b])
        cut += b - a
        last = b
    kept.append(text[last:])
    return "\n\n".join(part.strip("\n") for part in kept if part.strip()), homed, cut
