"""How an element reads as a row of a report's context (`reports/context.py`), and what that
row costs in tokens. The merge and resolution budget descriptions by these costs before any
report is written, so they sit below the graph and the reports alike."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from graphrag_ray.tokens import count_tokens, get_encoding


ENTITY_HEADER = "-----Entities-----\nid|entity|type|description|degree"


CLAIM_HEADER = "-----Claims-----\nid|entity|type|status|description"


RELATIONSHIP_HEADER = "-----Relationships-----\nid|source|target|description|combined_degree"


REPORT_HEADER = "-----Sub-community reports-----\nid|title|content"


def _cell(value: object) -> str:
    return str(value).replace("|", "/").replace("\n", " ")


ENTITY_FIELDS = ("human_readable_id", "title", "type", "description", "degree")


EDGE_FIELDS = ("human_readable_id", "source", "target", "description", "combined_degree")


CLAIM_FIELDS = ("human_readable_id", "subject_id", "type", "status", "description")


def row_text(record: dict, fields: tuple[str, ...]) -> str:
    return "|".join(_cell(record[k]) for k in fields)


def row_tokens(record: dict, fields: tuple[str, ...], encoding: str) -> int:
    """A row's tokens in the context, its line break included."""
    return count_tokens(row_text(record, fields), encoding) + 1


def row_tokens_without_id(record: dict, fields: tuple[str, ...], encoding: str) -> int:
    """A row's tokens but its leading id, which is its place in the context (digit runs are
    never merged with the `|` after them, so the id's tokens simply add)."""
    return count_tokens("|" + row_text(record, fields[1:]), encoding) + 1


def context_row_tokens(record: dict, description: str, encoding: str) -> int:
    """An entity's or relationship's row tokens without its id (`record`: `entity_record` or
    `edge_record`) with `description`."""
    fields = ENTITY_FIELDS if "title" in record else EDGE_FIELDS
    return row_tokens_without_id(dict(record, description=description), fields, encoding)


def inner_cells_tokens(record: dict, encoding: str) -> int:
    """The tokens of a row's cells between its first and last, with their separators: all of
    the row but the two numbers (its id, its degree): the id is its place in a context, the
    degree not known until the whole graph is. Tokenizers split digit runs from their
    neighbours, so the row's tokens are `number_tokens(id) + this + number_tokens(last) + 1`
    (the line break)."""
    fields = ENTITY_FIELDS if "title" in record else EDGE_FIELDS
    return count_tokens("|" + row_text(record, fields[1:-1]) + "|", encoding)


def number_tokens(values: np.ndarray, encoding: str) -> np.ndarray:
    """Tokens of each non-negative integer written out: a token per three digits where the
    encoding cuts numbers so (`_digits_in_threes`), else counted once per distinct value."""
    values = np.asarray(values, dtype=np.int64)
    if _digits_in_threes(encoding):
        digits = np.ones(len(values), dtype=np.int64)
        for power in range(1, 19):
            digits += values >= 10 ** power
        return (digits + 2) // 3
    distinct, inverse = np.unique(values, return_inverse=True)
    return np.array([count_tokens(str(v), encoding) for v in distinct.tolist()],
                    dtype=np.int64)[inverse]


@lru_cache(maxsize=4)
def _digits_in_threes(encoding: str) -> bool:
    """Whether the encoding writes a number as one token per three digits, left to right:
    every string of one to three digits is one token, and longer ones are cut in threes
    (cl100k_base and o200k_base; checked, not assumed, for whatever encoding is set)."""
    enc = get_encoding(encoding)
    if not all(len(enc.encode_ordinary(f"{v:0{width}d}")) == 1
               for width in (1, 2, 3) for v in range(10 ** width)):
        return False
    samples = ["1234567890", "1000000", "90071992547409", "1010"]
    return all([enc.decode([t]) for t in enc.encode_ordinary(text)]
               == [text[i:i + 3] for i in range(0, len(text), 3)] for text in samples)
