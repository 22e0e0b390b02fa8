"""Finding the text units that answer a question (`rank.py`), from an open index: its lexical
index, its unit vectors and its graph (`graph.py`), read once and kept."""

from __future__ import annotations

import warnings

from graphrag_ray import schema
from graphrag_ray.query.context import answerable_units
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.retrieval.graph import RetrievalGraph, build_graph
from graphrag_ray.query.retrieval.rank import Ranking, rank
from graphrag_ray.storage.lexical_index import LexicalIndex

__all__ = ["Ranking", "rank_units", "retrieval_graph", "model_vectors"]

# Methods whose vectors carry meaning: hashed words add nothing BM25 does not, and cost
# recall when fused (measured: basic search with them found fewer passages than BM25).
MODEL_METHODS = ("api", "local")


def retrieval_graph(index: OpenedIndex) -> RetrievalGraph:
    """The index's retrieval graph, built on first use and kept."""
    def make() -> RetrievalGraph:
        return build_graph(
            index.read_uncached(schema.ENTITIES, ["id", "title", "text_unit_ids"]),
            index.read_uncached(schema.RELATIONSHIPS, ["source", "target", "weight"]),
            answerable_units(index.table(schema.TEXT_UNITS, [
                "id", "document_ids", "extraction_status"])),
            index.table(schema.DOCUMENTS, ["id", "title"]), index.config.retrieval.about_weight)
    return index.kept("retrieval_graph", make)


def model_vectors(index: OpenedIndex) -> bool:
    """Whether the index's unit vectors come from an embedding model."""
    return index.embedding_method() in MODEL_METHODS


def _lexical(index: OpenedIndex) -> LexicalIndex | None:
    lexical = index.lexical()
    if lexical is None:
        index.kept("lexical_missing", lambda: warnings.warn(
            "this index version has no lexical index (built before there was one): questions "
            "are matched without it; `graphrag-ray update` or a new build adds it",
            stacklevel=3))
    return lexical


def _dense(index: OpenedIndex, graph: RetrievalGraph, question: str, count: int, seeds: int):
    """The units nearest the question by embedding, and the entities (rows) nearest it."""
    if not model_vectors(index):
        return [], []
    vector = index.embed([question])[0]
    units = index.vectors(schema.TEXT_UNIT_EMBEDDINGS).nearest(vector, count)
    entities = [(graph.entity_row[i], score) for i, score in
                index.vectors(schema.ENTITY_DESCRIPTION_EMBEDDINGS).nearest(vector, seeds)
                if i in graph.entity_row] if index.has_table(
                    schema.ENTITY_DESCRIPTION_EMBEDDINGS) else []
    return units, entities


def rank_units(index: OpenedIndex, question: str) -> Ranking:
    """The units that answer `question`, best first (see `rank.py`)."""
    config = index.config.retrieval
    lexical = _lexical(index)
    matches = lexical.search(question, config.candidates) if lexical is not None else []
    graph = retrieval_graph(index)
    dense, dense_entities = _dense(index, graph, question, config.candidates,
                                   config.seed_units)

    def unit_text(unit: str) -> str:
        row = graph.unit_row[unit]
        stored = index.rows(schema.TEXT_UNITS).take([int(graph.unit_stored_rows[row])],
                                                    ["text"])
        return f"{graph.unit_titles[row]}\n{stored.column('text')[0].as_py()}"

    def score_units(terms: list[str], ids: list[str]) -> dict[str, float]:
        return lexical.score_units(terms, ids) if lexical is not None else {}

    return rank(question, config, graph, matches, dense, unit_text, score_units,
                dense_entities)
