"""Passages that recur across documents, found before extraction: boilerplate (licences,
disclaimers, headers, a show's intro, the safe-harbour paragraph of every earnings call),
kept in the index once and out of extraction and answer contexts; and repeated content (a
document present several times, a section quoted in many), extracted once.

A passage is a paragraph (text between blank lines; a line, in a document without blank
lines) of at least `min_chars` characters, read as its words in lower case with digits
folded (next year's copy is the same text). Copies that were edited (a sentence added, a
company's name swapped) are found by MinHash: each passage's three-word shingles give
`BANDS` x `ROWS` minimum hashes, and passages that agree on all rows of `SAME_BANDS` bands
(0.9 similar copies: 99.8%; 0.5 similar passages: 9%) are one passage. A passage found in at
least `min_documents` documents, and in `min_share` of them (a corpus of overlapping windows
of the same transcripts repeats its own lines in a few neighbours; boilerplate recurs across
the corpus), is repeated. So is a document's opening: when at least `min_documents` documents
open their first line with the same `OPENING_WORDS` words, the words they all open with (a
title or file name opening every part of a transcript, "EP-13_ Behind_the_Tech…_Sam-Altman.txt
../") are cut.

Which repeated passages are boilerplate is `_content`'s rule (near a document's edge, beside
text of its own). Boilerplate is cut from every document's text, and its first document (in
corpus order) keeps a copy as a text unit of its own, marked `repeated_passage` (not
extracted, not in answer contexts). Repeated content stays in its first document's text and
is cut from the others (`split_repeated`), which the tables writer links to the chunks that
extracted it. A Project Gutenberg file's framing (`framed_boilerplate`) is boilerplate
whatever the corpus.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from graphrag_ray.tokens import count_tokens

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_WORDS = re.compile(r"[^\W_]+")
BANDS, ROWS = 8, 4
SAME_BANDS = 2  # bands two passages must agree on to be copies (0.9 similar: 99.8% do)
# Universal hashing (a * h + b) mod p of 31-bit shingle hashes with 31-bit a, b and the
# prime p = 2^31 - 1: every product fits in 63 bits, so numpy computes it exactly, and the
# modulus is below the products' range, so each (a, b) orders the shingles anew.
_PRIME = np.uint64((1 << 31) - 1)
_A, _B = (np.random.default_rng(20261201).integers(1, 1 << 31, size=BANDS * ROWS,
                                                   dtype=np.int64).astype(np.uint64)
          for _ in range(2))


_GUTENBERG_START = re.compile(r"^\*\*\* ?START OF (?:THE|THIS) PROJECT GUTENBERG E-?BOOK.*$",
                              re.M | re.I)
_GUTENBERG_END = re.compile(r"^\*\*\* ?END OF (?:THE|THIS) PROJECT GUTENBERG E-?BOOK.*$",
                            re.M | re.I)


def framed_boilerplate(text: str) -> tuple[str, list[str]]:
    """The books of a Project Gutenberg file and its boilerplate. Each START ... END pair
    frames a book (a file made by `cat a.txt b.txt` holds two); what precedes a START (the
    header), lies between an END and the next START, or follows the last END (the licence)
    is boilerplate, even in a corpus of one book. Such a stretch that does not mention
    Project Gutenberg is text (a file concatenated between two books), and a marker that
    pairs with nothing frames nothing. Returns the text to extract (the books and any such
    text, in order) and the boilerplate passages (none, and the whole text, without a
    pair)."""
    markers = sorted([(m, True) for m in _GUTENBERG_START.finditer(text)]
                     + [(m, False) for m in _GUTENBERG_END.finditer(text)],
                     key=lambda marker: marker[0].start())
    pairs = [(start, end) for (start, is_start), (end, is_end) in zip(markers, markers[1:])
             if is_start and not is_end]
    if not pairs:
        return text, []
    kept, boilerplate = [], []
    # Stretches outside the books: (where its text starts, ends) and its marker lines.
    previous_end = None
    for start, end in pairs + [(None, None)]:
        lo = previous_end.end() if previous_end else 0
        hi = start.start() if start else len(text)
        marker_lines = [m.group(0) for m in (previous_end, start) if m is not None]
        outside = text[lo:hi]
        if "gutenberg" in outside.lower():
            boilerplate.append("\n".join(
                ([marker_lines[0]] if previous_end else []) + [outside.strip("\n")]
                + ([marker_lines[-1]] if start else [])).strip("\n"))
        else:
            if outside.strip():
                kept.append(outside)
            if marker_lines:
                boilerplate.append("\n".join(marker_lines))
        if start is not None:
            kept.append(text[start.end():end.start()])
            previous_end = end
    return "\n\n".join(part.strip("\n") for part in kept if part.strip()), [
        part for part in boilerplate if part.strip()]


def passage_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph, or of each line when the text has no blank line."""
    breaks = _PARAGRAPH_BREAK if _PARAGRAPH_BREAK.search(text) else re.compile(r"\n")
    spans, start = [], 0
    for match in breaks.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def _words(passage: str) -> list[str]:
    return _WORDS.findall(re.sub(r"\d", "0", passage.lower()))


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=4).digest(),
                          "big") >> 1


def passage_key(passage: str) -> str:
    """The passage's text as compared: the same key for copies equal but for digits,
    case and spacing."""
    return _key_of(_words(passage))


def _key_of(words: list[str]) -> str:
    return hashlib.blake2b(" ".join(words).encode("utf-8"), digest_size=12).hexdigest()


def band_keys(passage: str) -> list[str]:
    """The passage's MinHash bands: near-copies share at least one."""
    return _bands_of(_words(passage))


def _bands_of(words: list[str]) -> list[str]:
    """MinHash over the passage's word 3-shingles (one shingle: all of them, when fewer)."""
    shingles = {" ".join(words[i:i + 3]) for i in range(max(1, len(words) - 2))}
    hashes = np.array([_hash(s) for s in shingles], dtype=np.uint64)[:, None]
    rows = ((hashes * _A[None, :] + _B[None, :]) % _PRIME).min(axis=0)
    return [f"{band}:" + hashlib.blake2b(rows[band * ROWS:(band + 1) * ROWS].tobytes(),
                                         digest_size=8).hexdigest() for band in range(BANDS)]


OPENING_WORDS = 5  # first-line words documents must share to have their opening compared
_OPENING_LIMIT = 64  # words of a first line the scan keeps


def opening_words(text: str) -> list[str]:
    """The first line's first words in lower case; digits kept (EP-13 and EP-14 open
    different transcripts)."""
    line = text.lstrip().split("\n", 1)[0]
    return _WORDS.findall(line.lower())[:_OPENING_LIMIT]


def _common_prefix(sequences: list[list[str]]) -> int:
    length = min(len(words) for words in sequences)
    for k in range(length):
        if len({words[k] for words in sequences}) > 1:
            return k
    return length


def document_passages(text: str, min_chars: int, tokenizer: str = "cl100k_base"
                      ) -> list[tuple[str | None, list[str], int]]:
    """(key, bands, tokens) of the document's distinct passages long enough to count, in
    order, then (None, [], tokens) for the rest of its text (shorter passages and repeats,
    estimated at 4 characters a token) when there is any."""
    seen: dict[str, tuple[str, list[str], int]] = {}
    compared = 0
    for a, b in passage_spans(text):
        if b - a >= min_chars:
            words = _words(text[a:b])
            key = _key_of(words)
            if key not in seen:
                seen[key] = (key, _bands_of(words), count_tokens(text[a:b], tokenizer))
                compared += b - a
    rest = (len(text) - compared) // 4
    return list(seen.values()) + ([(None, [], rest)] if rest else [])


@dataclass
class RepeatedPassages:
    """Passage keys that belong to a repeated passage -> the corpus position (document
    order) of the first document with a copy of it; and per repeated passage (named by the
    first copy's key) how many documents have it."""
    first: dict[str, int] = field(default_factory=dict)
    documents_with: dict[str, int] = field(default_factory=dict)
    # Keys of repeated *content* (a duplicated document, a quoted section) -> its passage's
    # name: extracted in its first document, cut from the others, which are linked to the
    # text units that extracted it. The other repeated passages are boilerplate.
    content: dict[str, str] = field(default_factory=dict)
    # Repeated openings: their first `OPENING_WORDS` words -> (words they share, the corpus
    # position of the first document opening with them, documents opening with them).
    openings: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    @classmethod
    def find(cls, documents: list[tuple[int, list[tuple[str, list[str], int]]]],
             min_documents: int, min_share: float = 0.0,
             openings: list[list[str]] | None = None) -> "RepeatedPassages":
        """`documents`: (position, `document_passages`) of every document, `openings`: their
        `opening_words`. Repeated: content (`_content`) in at least `min_documents`
        documents, boilerplate in as many and `min_share` of them; an opening, in
        `min_documents` documents."""
        parent: dict[str, str] = {}

        def root(key: str) -> str:
            while parent.setdefault(key, key) != key:
                parent[key] = parent[parent[key]]
                key = parent[key]
            return key

        holders: dict[str, str] = {}
        bands_of: dict[str, frozenset[str]] = {}
        for _, passages in documents:
            for key, bands, _ in _compared(passages):
                root(key)
                bands_of.setdefault(key, frozenset(bands))
                # (In key order: a set's order follows the process's hash seed, and which
                # key names the passage, hence the figures' token counts, followed it.)
                for other in sorted({holders[band] for band in bands if band in holders}
                                    - {key}):
                    # Two bands agreeing, not one: near-copies, not passages that merely
                    # share phrases (one band agrees for ~40% of pairs at 0.5 similarity).
                    if len(bands_of[key] & bands_of[other]) >= SAME_BANDS:
                        parent[root(key)] = root(other)
                for band in bands:
                    holders.setdefault(band, key)
        in_documents: dict[str, set[int]] = defaultdict(set)
        for position, passages in documents:
            for key, _, _ in _compared(passages):
                in_documents[root(key)].add(position)
        candidates = {r for r, positions in in_documents.items()
                      if len(positions) >= min_documents}
        content_roots = _content(documents, candidates, root)
        # Boilerplate is never extracted, so it must recur across the corpus (`min_share`
        # of its documents); content is extracted once and its copies linked to it, so a
        # duplicated document or section counts in any corpus (10 copies of 1,670
        # transcripts among 200,000 files were below 1% and extracted ten times).
        needed = max(min_documents, math.ceil(min_share * len(documents)))
        repeated = {r for r in candidates
                    if r in content_roots or len(in_documents[r]) >= needed}
        first = {key: min(in_documents[root(key)]) for key in parent if root(key) in repeated}
        return cls(first, {r: len(in_documents[r]) for r in repeated},
                   {key: root(key) for key in first if root(key) in content_roots},
                   _repeated_openings(documents, openings or [], min_documents))


def _compared(passages: list[tuple]) -> list[tuple]:
    return [passage for passage in passages if passage[0] is not None]


OWN_TEXT_SHARE = 0.25  # a document's own text, against an edge run, for it to be boilerplate
EDGE_SHARE = 0.25  # of a document's compared text, at most, before (or after) an edge run


def _content(documents: list[tuple[int, list[tuple]]], repeated: set[str], root) -> set[str]:
    """The repeated passages that are content, not boilerplate. Boilerplate (a licence, a
    disclaimer, a show's intro or sign-off, a safe-harbour paragraph) sits at the start or
    end of the documents that hold it, beside text of their own: in a document, the run of
    consecutive repeated passages it belongs to has at most `EDGE_SHARE` of the compared
    text before it or after it (a show's intro follows a line or two), and the document's
    text outside repeated passages is at least `OWN_TEXT_SHARE` of the
    run (an e-mail's disclaimer may outweigh its message; a copied book behind a one-line
    preamble is the book). A passage is boilerplate when more than half of its documents
    say so; otherwise (five copies of one book, a section quoted mid-document) it is
    content, extracted once instead of never."""
    votes: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # root -> [boilerplate, all]
    for _, passages in documents:
        compared = _compared(passages)
        roots = [root(key) for key, _, _ in compared]
        own = sum(tokens for key, _, tokens in passages
                  if key is None or root(key) not in repeated)
        i = 0
        while i < len(roots):
            if roots[i] not in repeated:
                i += 1
                continue
            j = i
            while j < len(roots) and roots[j] in repeated:
                j += 1
            run_tokens = sum(tokens for _, _, tokens in compared[i:j])
            before = sum(tokens for _, _, tokens in compared[:i])
            after = sum(tokens for _, _, tokens in compared[j:])
            at_edge = min(before, after) <= EDGE_SHARE * (before + run_tokens + after)
            boilerplate = at_edge and own >= OWN_TEXT_SHARE * run_tokens
            for r in set(roots[i:j]):
                votes[r][0] += boilerplate
                votes[r][1] += 1
            i = j
    return {r for r in repeated if votes[r][0] * 2 <= votes[r][1]}


def _repeated_openings(documents: list[tuple[int, list]], openings: list[list[str]],
                       min_documents: int) -> dict[str, tuple[int, int, int]]:
    groups: dict[str, list[tuple[int, list[str]]]] = defaultdict(list)
    for (position, _), words in zip(documents, openings):
        if len(words) > OPENING_WORDS:
            groups[" ".join(words[:OPENING_WORDS])].append((position, words))
    return {key: (_common_prefix([words for _, words in group]),
                  min(position for position, _ in group), len(group))
            for key, group in groups.items() if len(group) >= min_documents}


def _cut_opening(text: str, repeated: RepeatedPassages) -> tuple[str, str, int]:
    """The document's text without its repeated opening, the opening ("" when none) and the
    corpus position of the first document opening with it (-1 when none)."""
    shared = repeated.openings.get(" ".join(opening_words(text)[:OPENING_WORDS]))
    if shared is None:
        return text, "", -1
    length, first, _ = shared
    lead = len(text) - len(text.lstrip())
    line = text[lead:].split("\n", 1)[0]
    end = lead + list(_WORDS.finditer(line))[length - 1].end()
    rest = text[end:].lstrip(" \t./")
    return (rest, text[lead:end], first) if rest.strip() else (text, "", -1)


@dataclass
class Split:
    """A document's text as extraction reads it, and what was taken out of it."""
    text: str
    homed: list[str]  # boilerplate kept here as text units of their own (first home)
    cut_chars: int  # boilerplate cut from the text (kept out of extraction)
    shared_chars: int  # repeated content cut from the text (extracted in its first home)
    # Repeated content kept in `text` as its first home: (passage name, start, end) in `text`.
    kept_content: list[tuple[str, int, int]]
    shared: list[str]  # names of repeated content cut here: its first home extracted it
    # The same in the given text's own characters, for chunk windows cut from that text
    # (`chunking.chunk_documents`): what was cut, and the kept content's (name, start, end).
    cuts: list[tuple[int, int]] = field(default_factory=list)
    kept_content_at: list[tuple[str, int, int]] = field(default_factory=list)


def split_repeated(text: str, repeated: RepeatedPassages, position: int, min_chars: int
                   ) -> Split:
    """The document's text without its repeated passages (each cut replaced by a paragraph
    break). Boilerplate is cut from every document, and kept by its first as a text unit
    of its own; repeated content stays in its first document's text and is cut from the
    others. Paragraphs too short to compare that lie between two repeated passages of the
    same kind (a chapter heading, a line of dialogue inside a copied book) go with them."""
    whole = text
    text, opening, first = _cut_opening(text, repeated)
    base = len(whole) - len(text)  # where `text` starts in the whole text
    homed = [opening] if first == position else []
    # Each paragraph: (start, end, kind) with kind None (kept), "boilerplate", "content"
    # (cut: extracted in its first document) or "home" (content kept here, its first).
    spans = []
    for a, b in passage_spans(text):
        key = passage_key(text[a:b]) if b - a >= min_chars else None
        kind = None
        if key in repeated.first:
            name = repeated.content.get(key)
            kind = "boilerplate" if name is None else (
                "home" if repeated.first[key] == position else "content")
            if kind == "boilerplate" and repeated.first[key] == position:
                homed.append(text[a:b])
        spans.append([a, b, kind, key if b - a >= min_chars else None,
                      repeated.content.get(key)])
    _join_short_paragraphs(spans)
    pieces, shared, cut, shared_chars, last = [], [], len(opening), 0, 0
    cuts, kept_at = [(0, base)] if base else [], []
    for a, b, kind, key, name in spans:
        if kind is None:
            continue
        pieces.append((text[last:a], None))
        last = b
        if kind == "home":
            pieces.append((text[a:b], name))
            kept_at += [(name, base + a, base + b)] if name is not None else []
            continue
        cuts.append((base + a, base + b))
        if kind == "content":
            shared += [name] if name else []
            shared_chars += b - a
        else:
            cut += b - a
    pieces.append((text[last:], None))
    out, kept_content, offset = [], [], 0
    for piece, name in pieces:
        piece = piece.strip("\n")
        if not piece.strip():
            continue
        offset += 2 if out else 0
        if name is not None:
            kept_content.append((name, offset, offset + len(piece)))
        out.append(piece)
        offset += len(piece)
    return Split("\n\n".join(out), homed, cut, shared_chars, kept_content,
                 list(dict.fromkeys(shared)), cuts, kept_at)


def _join_short_paragraphs(spans: list[list]) -> None:
    """Short paragraphs (no key) between two repeated paragraphs of the same kind take that
    kind; a kept one ("home") names the passage before it, so its chunks are linked too."""
    previous = None  # index of the last compared paragraph
    for i, (_, _, kind, key, _) in enumerate(spans):
        if key is None:
            continue
        if previous is not None and kind is not None and spans[previous][2] == kind:
            for short in range(previous + 1, i):
                spans[short][2] = kind
                spans[short][4] = spans[previous][4] if kind == "home" else None
        previous = i
