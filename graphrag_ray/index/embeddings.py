"""The embeddings stage: entity descriptions, text units and community reports as vectors, for
the query methods that retrieve by similarity (local, DRIFT, basic).

Stored beside the other tables as `embeddings_<name>` (id, vector), written in parts by the
workers that compute them (the vectors never pass through the driver); the query side searches
them brute force (one matrix product), which is what these sizes need: 10^5 vectors of 1024
floats is 400 MB and a query takes milliseconds.
"""

from __future__ import annotations

from typing import Iterator

import fsspec
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.llm.accounting import USAGE_SCHEMA_FIELDS, table_usage, usage_row
from graphrag_ray.llm.client import LLMServices, Usage
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import write_parquet

EMBEDDING_WORK_SCHEMA = pa.schema([("table", pa.string()), ("part", pa.int64()),
                                   ("id", pa.string()), ("text", pa.string())])
EMBEDDING_RESULT_SCHEMA = pa.schema([("table", pa.string()), ("rows", pa.int64()),
                                     ("dimensions", pa.int64()), *USAGE_SCHEMA_FIELDS])
EMBEDDING_SCHEMA = pa.schema([("id", pa.string()), ("vector", pa.list_(pa.float32()))])
ROWS_PER_PART = 1024


def embedding_texts(reports: pa.Table, entity_parts, text_unit_parts) -> Iterator[
        tuple[str, list[str], list[str]]]:
    """(table name, ids, texts) of what each query method retrieves by, a piece at a time:
    entities and text units come part by part from storage (`entity_parts`: id, title,
    description; `text_unit_parts`: id, text)."""
    for entities in entity_parts:
        yield (schema.ENTITY_DESCRIPTION_EMBEDDINGS, entities.column("id").to_pylist(),
               [f"{title}: {description}" for title, description in zip(
                   entities.column("title").to_pylist(),
                   entities.column("description").to_pylist())])
    yield (schema.REPORT_EMBEDDINGS, reports.column("id").to_pylist(),
           reports.column("full_content").to_pylist())
    for part in text_unit_parts:
        yield schema.TEXT_UNIT_EMBEDDINGS, part.column("id").to_pylist(), \
            part.column("text").to_pylist()


class EmbeddingWorker:
    """A batch is one part of one table: its vectors are written straight to the index
    version (`<table>/part-<first row>.parquet`), and one row of counts and usage comes back."""

    def __init__(self, config: GraphRagConfig, version_url: str,
                 services: LLMServices | None = None):
        self.embedder = (services or LLMServices()).embedder(config.embeddings)
        self.fs, self.root = fsspec.core.url_to_fs(version_url)

    def __call__(self, batch: pa.Table) -> pa.Table:
        embedder = self.embedder.scoped()
        vectors = embedder.embed(batch.column("text").to_pylist())
        table, part = batch.column("table")[0].as_py(), batch.column("part")[0].as_py()
        rows = pa.table({"id": batch.column("id"),
                         "vector": pa.array(list(vectors), pa.list_(pa.float32()))},
                        schema=EMBEDDING_SCHEMA)
        write_parquet(self.fs, f"{self.root}/{table}/part-{part:010d}.parquet", rows)
        return pa.Table.from_pylist([{"table": table, "rows": batch.num_rows,
                                      "dimensions": int(vectors.shape[1]),
                                      **usage_row(embedder.usage)}],
                                    schema=EMBEDDING_RESULT_SCHEMA)


def embed_index(tables: dict[str, pa.Table], staged: IndexVersion, config: GraphRagConfig,
                services: LLMServices, pool: WorkerPool) -> tuple[dict[str, int], int | None, Usage]:
    """Writes the embedding tables into `staged` (entities and text units are read back from
    it); returns their row counts, the vector size and the usage. Parts are numbered by their
    first row, so a table reads back in the order of its source table."""
    key = pool.bind(EmbeddingWorker, {"config": config, "version_url": staged.url_of(""),
                                      "services": services})
    counts = {schema.ENTITY_DESCRIPTION_EMBEDDINGS: 0, schema.REPORT_EMBEDDINGS: 0,
              schema.TEXT_UNIT_EMBEDDINGS: 0}
    submitted = dict.fromkeys(counts, 0)
    results = []
    for name, ids, texts in embedding_texts(
            tables[schema.COMMUNITY_REPORTS],
            staged.iter_table(schema.ENTITIES, ["id", "title", "description"]),
            staged.iter_table(schema.TEXT_UNITS, ["id", "text"])):
        for start in range(0, len(ids), ROWS_PER_PART):
            part = slice(start, start + ROWS_PER_PART)
            first_row = submitted[name]
            submitted[name] += len(ids[part])
            pool.submit(key, pa.table({"table": [name] * len(ids[part]),
                                       "part": [first_row] * len(ids[part]), "id": ids[part],
                                       "text": texts[part]}, schema=EMBEDDING_WORK_SCHEMA))
        # Keep at most a few parts' texts in flight, not the corpus.
        while pool.pending() > 2 * pool.size:
            results.extend(pool.completed())
    while pool.busy():
        results.extend(pool.completed())
    for name, total in submitted.items():
        if not total:
            staged.write_table(name, EMBEDDING_SCHEMA.empty_table())
    done = pa.concat_tables(results) if results else EMBEDDING_RESULT_SCHEMA.empty_table()
    for name, rows in zip(done.column("table").to_pylist(), done.column("rows").to_pylist()):
        counts[name] += rows
    dimensions = done.column("dimensions")[0].as_py() if done.num_rows else None
    return counts, dimensions, table_usage(done)
