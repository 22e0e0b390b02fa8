"""Source-text map-reduce (the paper's TS condition): global search's map-reduce, over the
corpus's own chunks, shuffled, instead of community reports. The baseline that shows what the
graph index saves: it reads every token of the corpus per question."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.query.citations import documents_of
from graphrag_ray.query.context import answerable_units
from graphrag_ray.query.map_reduce import map_reduce
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult, Sources

TEXT_CONTEXT_HEADER = "id|document|rank|text"


def text_rows(units: pa.Table, documents: pa.Table) -> list[dict]:
    """Text units as the rows map-reduce packs; cited by human_readable_id."""
    titles = dict(zip(documents.column("id").to_pylist(), documents.column("title").to_pylist()))
    return [{"community": number, "title": titles.get(document, document), "rank": 1.0,
             "summary": text, "full_content": text, "findings": None}
            for number, document, text in zip(units.column("human_readable_id").to_pylist(),
                                              units.column("document_id").to_pylist(),
                                              units.column("text").to_pylist())]


def text_search(index: OpenedIndex, question: str, *, history: list[dict] | None = None,
                on_token: Callable[[str], None] | None = None) -> SearchResult:
    units = answerable_units(index.table(schema.TEXT_UNITS, [
        "id", "human_readable_id", "document_id", "text", "extraction_status"]))
    documents = index.table(schema.DOCUMENTS, ["id", "title"])
    config, prompts, services, fan_out = (index.config, index.prompts, index.services,
                                          index.fan_out)
    outcome = map_reduce(question, text_rows(units, documents), config, prompts,
                         map_prompt="text_map", header=TEXT_CONTEXT_HEADER, services=services,
                         fan_out=fan_out, history=history, on_token=on_token)
    cited = units.filter(pc.is_in(units.column("human_readable_id"),
                                  pa.array(outcome.cited_ids, pa.int64())))
    unit_ids = cited.column("id").to_pylist()
    return SearchResult(
        method="text", answer=outcome.answer,
        sources=Sources(text_units=unit_ids, documents=documents_of(index.table, unit_ids)),
        context_tokens=outcome.map_context_tokens + outcome.reduce_context_tokens,
        llm_calls=outcome.map_calls + outcome.reduce_calls, usage=outcome.usage,
        failures=outcome.failures,
        details={"map_calls": outcome.map_calls, "reduce_calls": outcome.reduce_calls,
                 "text_units_mapped": units.num_rows,
                 "map_context_tokens": outcome.map_context_tokens,
                 "reduce_context_tokens": outcome.reduce_context_tokens,
                 "points": [p.__dict__ for p in outcome.points]})
