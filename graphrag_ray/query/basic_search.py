"""Basic search (the paper's SS condition, plain vector RAG): the text units nearest the
question, in order of similarity until the token budget is full, then one answer."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.query.answer import answer_from_context
from graphrag_ray.query.citations import sources_of_records
from graphrag_ray.query.context import answerable_units, cell, pack_table
from graphrag_ray.query.local_search import extractive_answer, query_text
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult


def basic_search(index: OpenedIndex, question: str, *, history: list[dict] | None = None,
                 on_token: Callable[[str], None] | None = None) -> SearchResult:
    config, prompts, services = index.config, index.prompts, index.services
    unit_vectors = index.vectors(schema.TEXT_UNIT_EMBEDDINGS)
    cfg = config.basic_search
    query = query_text(question, history)
    nearest = unit_vectors.nearest(index.embed([query])[0], cfg.top_k)
    units = units_by_id(answerable_units(index.table(
        schema.TEXT_UNITS, ["id", "human_readable_id", "text", "extraction_status"])),
        [i for i, _ in nearest])
    rows = {u["id"]: u for u in units.to_pylist()}
    section = pack_table("Sources", "id|text",
                         [(i, f"{rows[i]['human_readable_id']}|{cell(rows[i]['text'])}")
                          for i, _ in nearest if i in rows],
                         cfg.context_tokens, config.tokenizer.encoding)
    result = SearchResult(method="basic", answer="", context_tokens=section.tokens,
                          details={"retrieved": len(nearest), "in_context": len(section.keys),
                                   "similarities": [round(s, 4) for _, s in nearest
                                                    [:len(section.keys)]]})
    answer_from_context(
        result, question, section.text, use_llm=config.uses_llm(cfg.method),
        template=prompts["basic_answer"], services=services, llm_config=config.llm,
        response_type=cfg.response_type, max_tokens=cfg.max_output_tokens, history=history,
        on_token=on_token,
        extractive=lambda: extractive_answer(question, [], [rows[i]["text"] for i in section.keys]))
    result.sources = sources_of_records(index.table, {"text_units": section.keys})
    return result


def units_by_id(units: pa.Table, ids: list[str]) -> pa.Table:
    return units.filter(pc.is_in(units.column("id"), pa.array(ids, pa.string())))
