"""The embeddings stage: entity descriptions, text units and community reports as vectors, for
the query methods that retrieve by similarity (local, DRIFT, basic).

Stored beside the other tables as `embeddings_<name>` (id, vector); the query side searches
them brute force (one matrix product), which is what these sizes need: 10^5 vectors of 1024
floats is 400 MB and a query takes milliseconds.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.llm.accounting import USAGE_SCHEMA_FIELDS, table_usage, usage_row
from graphrag_ray.llm.client import LLMServices, Usage

EMBEDDING_WORK_SCHEMA = pa.schema([("source", pa.string()), ("id", pa.string()),
                                   ("text", pa.string())])
EMBEDDING_RESULT_SCHEMA = pa.schema([("source", pa.string()), ("id", pa.string()),
                                     ("vector", pa.list_(pa.float32())), *USAGE_SCHEMA_FIELDS])
EMBEDDING_SCHEMA = pa.schema([("id", pa.string()), ("vector", pa.list_(pa.float32()))])
ROWS_PER_CALL = 256


def embedding_texts(tables: dict[str, pa.Table]) -> dict[str, tuple[list[str], list[str]]]:
    """Table name -> (ids, texts) of what each query method retrieves by."""
    entities = tables[schema.ENTITIES]
    reports = tables[schema.COMMUNITY_REPORTS]
    units = tables[schema.TEXT_UNITS]
    return {
        schema.ENTITY_DESCRIPTION_EMBEDDINGS: (
            entities.column("id").to_pylist(),
            [f"{title}: {description}" for title, description in zip(
                entities.column("title").to_pylist(), entities.column("description").to_pylist())]),
        schema.TEXT_UNIT_EMBEDDINGS: (units.column("id").to_pylist(),
                                      units.column("text").to_pylist()),
        schema.REPORT_EMBEDDINGS: (reports.column("id").to_pylist(),
                                   reports.column("full_content").to_pylist()),
    }


class EmbeddingWorker:
    """Rows: source, id, text -> source, id, vector (the batch's usage on its first row)."""

    def __init__(self, config: GraphRagConfig, services: LLMServices | None = None):
        self.embedder = (services or LLMServices()).embedder(config.embeddings)

    def __call__(self, batch: pa.Table) -> pa.Table:
        embedder = self.embedder.scoped()
        vectors = embedder.embed(batch.column("text").to_pylist())
        usage = [usage_row(embedder.usage)] + [usage_row(None)] * (batch.num_rows - 1)
        return pa.table({
            "source": batch.column("source"), "id": batch.column("id"),
            "vector": pa.array(list(vectors), pa.list_(pa.float32())),
            **{field.name: [row[field.name] for row in usage] for field in USAGE_SCHEMA_FIELDS},
        }, schema=EMBEDDING_RESULT_SCHEMA)


def embed_index(tables: dict[str, pa.Table], config: GraphRagConfig, services: LLMServices,
                pool: WorkerPool) -> tuple[dict[str, pa.Table], Usage]:
    """The embedding tables, rows in the order of their source tables, and the usage."""
    key = pool.bind(EmbeddingWorker, {"config": config, "services": services})
    sources = embedding_texts(tables)
    for name, (ids, texts) in sources.items():
        for start in range(0, len(ids), ROWS_PER_CALL):
            pool.submit(key, pa.table({
                "source": [name] * len(ids[start:start + ROWS_PER_CALL]),
                "id": ids[start:start + ROWS_PER_CALL],
                "text": texts[start:start + ROWS_PER_CALL]}, schema=EMBEDDING_WORK_SCHEMA))
    results = []
    while pool.busy():
        results.extend(pool.completed())
    done = pa.concat_tables(results) if results else EMBEDDING_RESULT_SCHEMA.empty_table()
    usage = table_usage(done)
    embeddings = {}
    for name, (ids, _) in sources.items():
        part = done.filter(pc.equal(done.column("source"), name))
        order = pc.index_in(pa.array(ids, pa.string()), part.column("id"))
        embeddings[name] = part.take(order).select(["id", "vector"]).cast(EMBEDDING_SCHEMA)
    return embeddings, usage
