"""What a retriever returns, framework aside: the answer of a query method with its sources
as index rows, and, for methods that rank passages (local, basic), the cited text units
themselves, best first."""

from __future__ import annotations

from dataclasses import dataclass

from graphrag_ray.serve import citations

# Methods whose sources are the passages the answer read, worth returning as documents.
PASSAGE_METHODS = ("local", "basic")
SOURCES_PER_KIND = 20


@dataclass
class Found:
    """One retrieved piece: its text, an id, and metadata a framework carries along."""
    text: str
    id: str
    metadata: dict
    score: float


def retrieve(index, method: str, question: str, options: dict | None = None) -> list[Found]:
    """The answer (first, with every source as metadata), then the cited text units for
    local and basic search, scored by their rank."""
    result = index.search(method, question, **(options or {}))
    sources = citations.resolve(index.table, index.rows, index.has_table, result.sources,
                                SOURCES_PER_KIND)
    common = {"method": method, "version": index.manifest.version, "question": question}
    found = [Found(result.answer, f"answer:{method}:{index.manifest.version}",
                   {**common, "kind": "answer", "sources": sources,
                    "llm_calls": result.llm_calls, "notes": result.notes}, 1.0)]
    if method in PASSAGE_METHODS:
        units = sources["text_units"]["rows"]
        found += [Found(unit["text"], unit["id"],
                        {**common, "kind": "text_unit", "text_unit_id": unit["id"],
                         "document_id": unit["document_id"], "rank": rank}, 1.0 / (rank + 2))
                  for rank, unit in enumerate(units)]
    return found
