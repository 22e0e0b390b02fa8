"""The vector index stage: each embeddings table long enough to need it gets its Lance
dataset brought to this version's rows (`storage/lance_vectors.sync_vectors`), so that
queries search it approximately instead of holding it in memory. Shorter tables are searched
brute force from their Parquet table and need nothing here."""

from __future__ import annotations

from graphrag_ray.index.context import BuildContext
from graphrag_ray.storage.lance_vectors import lance_options, lance_uri, sync_vectors


def index_vectors(ctx: BuildContext, embedded: dict[str, int]) -> dict[str, dict]:
    """Per table synced: what the manifest records (`vector_stores`): the Lance version
    this index version searches, and what the sync added, deleted, trained."""
    config, staged = ctx.config.vector_index, ctx.staged
    stores: dict[str, dict] = {}
    for table, rows in sorted(embedded.items()):
        uri = lance_uri(staged.url, table)
        if rows < config.ann_min_rows or uri is None:
            continue
        ctx.progress(f"[vector_index] {table}: {rows:,} vectors")
        figures = sync_vectors(uri, lance_options(staged.url, staged.fs.storage_options),
                               lambda table=table: staged.iter_table(table, ["id", "vector"]),
                               config)
        stores[table] = figures.as_json(table)
    return stores
