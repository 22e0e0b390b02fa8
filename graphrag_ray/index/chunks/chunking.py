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


def chunk_documents(documents: pa.Table, config: ChunksConfig, tokenizer: str) -> pa.Table:
    """One row per chunk, in document order, windows of `tokenizer`'s tokens that never cut
    a character; ids depend only on the document and the window."""
    encoding = get_encoding(tokenizer)
    ids, texts, n_tokens, doc_ids = [], [], [], []
    for doc_id, text in zip(documents.column("id").to_pylist(), documents.column("text").to_pylist()):
        tokens = encoding.encode_ordinary(text)
        windows = token_windows(len(tokens), config.size, config.overlap)
        for start, end, chunk_text in character_windows(encoding, tokens, text, windows):
            ids.append(chunk_id(doc_id, start, chunk_text))
            texts.append(chunk_text)
            n_tokens.append(end - start)
            doc_ids.append(doc_id)
    return pa.table({
        "id": pa.array(ids, pa.string()),
        "human_readable_id": pa.array(range(len(ids)), pa.int64()),
        "text": pa.array(texts, pa.string()),
        "n_tokens": pa.array(n_tokens, pa.int64()),
        "document_id": pa.array(doc_ids, pa.string()),
    })
