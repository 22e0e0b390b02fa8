"""Building blocks of query contexts: token-budgeted tables and conversation history."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.tokens import count_tokens, take_within_budget

NO_HISTORY = "(none)"


def answerable_units(units: pa.Table) -> pa.Table:
    """`units` (the whole table, read with `extraction_status`) without repeated passages,
    that column gone, and each unit's stored row number added as `row` (its text is read by
    it: `OpenedIndex.rows`)."""
    keep = pc.not_equal(pc.fill_null(units.column("extraction_status"), ""),
                        schema.REPEATED_PASSAGE)
    units = units.append_column("row", pa.array(range(units.num_rows), pa.int64()))
    return units.filter(keep).drop_columns(["extraction_status"])


def conversation_text(history: list[dict] | None, max_turns: int = 6) -> str:
    """The last turns of a conversation ({"role", "content"} dicts) as prompt text."""
    if not history:
        return NO_HISTORY
    turns = [f"{turn.get('role', 'user')}: {str(turn.get('content', '')).strip()}"
             for turn in history[-max_turns:] if str(turn.get("content", "")).strip()]
    return "\n".join(turns) or NO_HISTORY


def cell(value: object) -> str:
    return " ".join(str(value).replace("|", "/").split())


@dataclass
class TableSection:
    """`-----Title-----` then `header` then the rows that fitted."""
    text: str
    keys: list
    tokens: int


def pack_table(title: str, header: str, rows: list[tuple[object, str]], budget: int,
               encoding: str) -> TableSection:
    """Rows in the order given until the next one would pass `budget` tokens; a row too long
    for the whole budget is skipped, not truncated, so every row shown is whole."""
    lines = [f"-----{title}-----", header]
    used = count_tokens("\n".join(lines), encoding) + 1
    if used > budget:
        return TableSection("", [], 0)
    taken, used = take_within_budget([row for _, row in rows], budget, used, skip_misses=True,
                                     encoding=encoding)
    lines += [rows[i][1] for i in taken]
    keys = [rows[i][0] for i in taken]
    if not keys:
        return TableSection("", [], 0)
    return TableSection("\n".join(lines), keys, used)
