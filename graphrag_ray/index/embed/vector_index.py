"""The vector index stage: each embeddings table long enough to need it gets its Lance
dataset brought to this version's rows (`storage/lance_vectors.sync_vectors`), so that
queries search it approximately instead of holding it in memory. Shorter tables are searched
brute force from their Parquet table and need nothing here."""

from __future__ import annotations

import pyarrow as pa

from graphrag_ray.index.context import BuildContext
from graphrag_ray.storage.lance_vectors import (
    KeptVectors, lance_options, lance_uri, sync_vectors)


def index_vectors(ctx: BuildContext, embedded: dict[str, int],
                  carried: dict[str, pa.ChunkedArray] | None = None,
                  previous_stores: dict[str, dict] | None = None) -> dict[str, dict]:
    """Per table synced: what the manifest records (`vector_stores`): the Lance version
    this index version searches, and what the sync added, deleted, trained. An update's
    `carried` ids per table (vectors copied unchanged from the previous version, whose
    `previous_stores` name its Lance versions) are not read again (`KeptVectors`)."""
    config, staged = ctx.config.vector_index, ctx.staged
    stores: dict[str, dict] = {}
    for table, rows in sorted(embedded.items()):
        uri = lance_uri(staged.url, table)
        if rows < config.ann_min_rows or uri is None:
            continue
        ctx.progress(f"[vector_index] {table}: {rows:,} vectors")
        before = (previous_stores or {}).get(table)
        kept = KeptVectors(carried[table].combine_chunks(), int(before["version"])) \
            if before and carried and table in carried else None
        figures = sync_vectors(uri, lance_options(staged.url, staged.fs.storage_options),
                               lambda skip, table=table: _parts(staged, table, skip),
                               config, kept)
        stores[table] = figures.as_json(table)
    return stores


def _parts(staged, table: str, skip: pa.Array | None):
    """The table's (id, vector) parts, without the rows of `skip` (a part holding nothing
    else is read no further than its ids)."""
    if skip is None:
        return staged.iter_table(table, ["id", "vector"])
    return staged.iter_rows_without(table, ["id", "vector"], skip)
