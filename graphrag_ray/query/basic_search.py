"""Basic search (the paper's SS condition, plain RAG): the text units that best answer the
question (`retrieval`: BM25 and embeddings fused with the graph's walk), in that order
until the token budget is full, then one answer."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.query.answer import Answering, Asked, answer_from_context
from graphrag_ray.query.citations import sources_of_records
from graphrag_ray.query.context import answerable_units, cell, pack_table
from graphrag_ray.query.local_search import extractive_answer, query_text
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult
from graphrag_ray.query.retrieval import rank_units


def basic_search(index: OpenedIndex, question: str, *, history: list[dict] | None = None,
                 on_token: Callable[[str], None] | None = None) -> SearchResult:
    config = index.config
    cfg = config.basic_search
    query = query_text(question, history)
    nearest = rank_units(index, query).units[:cfg.top_k]
    rows = nearest_units(index, [i for i, _ in nearest])
    section = pack_table("Sources", "id|text",
                         [(i, f"{rows[i]['human_readable_id']}|{cell(rows[i]['text'])}")
                          for i, _ in nearest if i in rows],
                         cfg.context_tokens, config.tokenizer.encoding)
    result = SearchResult(method="basic", answer="", context_tokens=section.tokens,
                          details={"retrieved": len(nearest), "in_context": len(section.keys),
                                   "scores": [round(s, 4) for _, s in nearest
                                              [:len(section.keys)]]})
    answer_from_context(
        result, Asked(question, history, on_token), section.text,
        Answering(index, "basic_answer", cfg), use_llm=config.uses_llm(cfg.method),
        extractive=lambda: extractive_answer(question, [], [rows[i]["text"] for i in section.keys]))
    result.sources = sources_of_records(index.table, {"text_units": section.keys})
    return result


def nearest_units(index: OpenedIndex, ids: list[str]) -> dict[str, dict]:
    """The answerable units among `ids`, by id: their texts read from the index for these
    rows only (a 100M-token index holds a gigabyte of them)."""
    row_of = index.kept("basic:unit_rows", lambda: _rows_by_id(answerable_units(index.table(
        schema.TEXT_UNITS, ["id", "extraction_status"]))))
    taken = index.rows(schema.TEXT_UNITS).take(
        [row_of[i] for i in dict.fromkeys(ids) if i in row_of],
        ["id", "human_readable_id", "text"])
    return {row["id"]: row for row in taken.to_pylist()}


def _rows_by_id(units: pa.Table) -> dict[str, int]:
    """Each answerable unit's stored row, by id."""
    return dict(zip(units.column("id").to_pylist(), units.column("row").to_pylist()))
