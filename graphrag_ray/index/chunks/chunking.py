"""Documents -> text units: fixed-size token windows with overlap, never spanning documents."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from graphrag_ray.config import ChunksConfig
from graphrag_ray.tokens import get_encoding


def token_windows(n_tokens: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """[start, end) windows covering 0..n_tokens; the last window ends exactly at n_tokens.
    A last window that would add no more new tokens than the overlap extends the window
    before it instead (which then holds up to size + overlap tokens): a 610-token document at
    600/100 is one chunk, not a second one of 110 tokens of which 10 are new, costing an
    extraction call and a gleaning round for them."""
    if n_tokens == 0:
        return []
    step = size - overlap
    windows = []
    start = 0
    while True:
        end = min(start + size, n_tokens)
        if windows and end - windows[-1][1] <= overlap and end == n_tokens:
            windows[-1] = (windows[-1][0], end)
            return windows
        windows.append((start, end))
        if end >= n_tokens:
            return windows
        start += step


def chunk_id(document_id: str, start: int, text: str) -> str:
    return hashlib.sha256(f"{document_id}\x00{start}\x00{text}".encode("utf-8")).hexdigest()


def character_windows(encoding, tokens: list[int], text: str, windows: list[tuple[int, int]]
                      ) -> list[tuple[int, int, str]]:
    """(start, end, text) of each window, its ends moved out to the nearest token boundary
    that is also a character boundary: byte-level tokenizers split a CJK character, an
    Arabic letter or an emoji over several tokens, and a window cut between them would decode
    to U+FFFD. The window then holds a token or two more than asked."""
    data = text.encode("utf-8")
    if len(data) == len(text):  # ASCII: every token boundary is a character boundary
        return [(s, e, encoding.decode(tokens[s:e])) for s, e in windows]
    ends = np.cumsum([len(b) for b in encoding.decode_tokens_bytes(tokens)])
    offsets = np.concatenate([[0], ends])  # byte offset of each token boundary
    continuation = (np.frombuffer(data, dtype=np.uint8) & 0xC0) == 0x80
    whole = np.ones(len(offsets), dtype=bool)
    inside = offsets < len(data)
    whole[inside] = ~continuation[offsets[inside]]
    result = []
    for start, end in windows:
        while not whole[start]:
            start -= 1
        while not whole[end]:
            end += 1
        result.append((start, end, data[offsets[start]:offsets[end]].decode("utf-8")))
    return result


def chunk_documents(documents: pa.Table, config: ChunksConfig, tokenizer: str,
                    cuts: dict[str, list[tuple[int, int]]] | None = None) -> pa.Table:
    """One row per chunk, in document order, windows of `tokenizer`'s tokens that never cut
    a character; ids depend only on the document and the window.

    `cuts`: per document, character ranges of its text kept out of extraction (passages
    repeated across the corpus: `repeated_passages.split_repeated`). The windows are those of
    the whole text, so a file is cut the same whatever the rest of the corpus holds; a
    window's text leaves its cut ranges out (`masked_windows`). `window` is the window's
    place among the document's windows, which masking never renumbers."""
    encoding = get_encoding(tokenizer)
    ids, texts, n_tokens, doc_ids, places, spans = [], [], [], [], [], []
    for doc_id, text in zip(documents.column("id").to_pylist(), documents.column("text").to_pylist()):
        tokens = encoding.encode_ordinary(text)
        windows = character_windows(encoding, tokens, text,
                                    token_windows(len(tokens), config.size, config.overlap))
        window_texts = [w[2] for w in windows]
        document_cuts = (cuts or {}).get(doc_id)
        located = window_spans(text, window_texts) if document_cuts is not None else None
        masked = masked_windows(text, window_texts, document_cuts, located) \
            if document_cuts else window_texts
        for place, ((start, end, _), chunk_text) in enumerate(zip(windows, masked)):
            if chunk_text is None:
                continue
            ids.append(chunk_id(doc_id, start, chunk_text))
            texts.append(chunk_text)
            n_tokens.append(len(encoding.encode_ordinary(chunk_text))
                            if chunk_text is not window_texts[place] else end - start)
            doc_ids.append(doc_id)
            places.append(place)
            spans.append(located[place] if located else (-1, -1))
    return pa.table({
        "id": pa.array(ids, pa.string()),
        "human_readable_id": pa.array(range(len(ids)), pa.int64()),
        "text": pa.array(texts, pa.string()),
        "n_tokens": pa.array(n_tokens, pa.int64()),
        "document_id": pa.array(doc_ids, pa.string()),
        "window": pa.array(places, pa.int64()),
        # The window's characters in the document's text, where `cuts` names the document.
        "char_start": pa.array([a for a, _ in spans], pa.int64()),
        "char_end": pa.array([b for _, b in spans], pa.int64()),
    })


def window_spans(text: str, window_texts: list[str]) -> list[tuple[int, int]]:
    """Each window's (start, end) in `text`: windows are consecutive substrings, so each is
    found from just after the previous one's start."""
    spans, cursor = [], 0
    for window in window_texts:
        start = text.find(window, cursor)
        spans.append((start, start + len(window)))
        cursor = start + 1
    return spans


def _kept(span: tuple[int, int], cuts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of `span` outside `cuts` (sorted, disjoint)."""
    kept, start = [], span[0]
    for a, b in cuts:
        if b <= start or a >= span[1]:
            continue
        if a > start:
            kept.append((start, a))
        start = max(start, b)
    if start < span[1]:
        kept.append((start, span[1]))
    return kept


def _covered(parts: list[tuple[int, int]], by: list[tuple[int, int]]) -> bool:
    return all(any(c <= a and b <= d for c, d in by) for a, b in parts)


def masked_windows(text: str, window_texts: list[str], cuts: list[tuple[int, int]],
                   spans: list[tuple[int, int]] | None = None) -> list[str | None]:
    """Each window's text without the `cuts` (what is left of it, its pieces joined by a
    paragraph break), or None for a window with nothing of its own left: none at all, or
    only what a kept neighbour also holds (the edge of a long cut leaves a sliver that the
    window beside it extracts already)."""
    cuts = sorted(cuts)
    spans = spans or window_spans(text, window_texts)
    kept = [[(a, b) for a, b in _kept(span, cuts) if text[a:b].strip()] for span in spans]
    result: list[str | None] = []
    last: list[tuple[int, int]] = []  # the last window kept
    for place, (span, parts) in enumerate(zip(spans, kept)):
        following = kept[place + 1] if place + 1 < len(kept) else []
        if not parts or (last and _covered(parts, last)) or (following and parts != following
                                                             and _covered(parts, following)):
            result.append(None)
            continue
        untouched = parts == [span]  # no cut in this window: its text as it is
        result.append(window_texts[place] if untouched else
                      "\n\n".join(text[a:b].strip("\n") for a, b in parts))
        last = parts
    return result
