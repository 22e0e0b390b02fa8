"""The vector index stage: each embeddings table long enough to need it gets its copy in the
configured vector store (`vector_index.store`, `storage/vector_stores.py`; Lance by default)
brought to this version's rows, so that queries search it approximately instead of holding
it in memory. Shorter tables are searched brute force from their Parquet table and need
nothing here."""

from __future__ import annotations

from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.index.carry_over import CARRIED_VECTOR_PARTS
from graphrag_ray.config import VectorIndexConfig
from graphrag_ray.index.context import Progress
from graphrag_ray.storage.vector_stores import vector_store


def index_vectors(config: VectorIndexConfig, staged, progress: Progress,
                  embedded: dict[str, int], carried: dict[str, pa.ChunkedArray] | None = None,
                  previous_stores: dict[str, dict] | None = None) -> dict[str, dict]:
    """Per table synced: what the manifest records (`vector_stores`): the store, the version
    of its copy this index version searches, and what the sync did. An update's `carried`
    ids per table (vectors copied unchanged from the previous version, whose
    `previous_stores` name the store's versions) need not be read again. `staged`: the
    version being written (a build's, an update's or an adoption's)."""
    store = vector_store(config.store)
    stores: dict[str, dict] = {}
    for table, rows in sorted(embedded.items()):
        if rows < config.ann_min_rows or not store.reaches(staged.url):
            continue
        progress(f"[vector_index] {table}: {rows:,} vectors")
        before = (previous_stores or {}).get(table)
        if before and before.get("store", "lance") != config.store:
            before = None  # (another store's versions say nothing of this one's)
        kept = carried[table].combine_chunks() if before and carried and table in carried \
            else None
        entry = store.sync(staged.url, staged.fs.storage_options, table,
                           partial(_parts, staged, table,
                                   _distinct(kept) if kept is not None else None),
                           config, kept, before)
        stores[table] = {**entry, "store": config.store}
    return stores


def _parts(staged, table: str, carried: int | None, skip: pa.Array | None):
    """The table's (id, vector) parts, without the rows of `skip` (a part holding nothing
    else is read no further than its ids). `carried`: how many distinct ids the update
    carried vectors for; `skip` (the carried ids the dataset holds already) holding them
    all, the parts of carried vectors hold nothing else and are not read: on a 1% update of
    a 100M-token index, the ids of 215 text-unit parts were read twice to find the rows of
    the 3 parts embedded now."""
    if skip is None:
        return staged.iter_table(table, ["id", "vector"])
    carried_only = (lambda part: part.startswith(CARRIED_VECTOR_PARTS)) \
        if carried is not None and _distinct(skip) == carried else None
    return staged.iter_rows_without(table, ["id", "vector"], skip, carried_only)


def _distinct(ids: pa.Array) -> int:
    return pc.count_distinct(ids).as_py()
