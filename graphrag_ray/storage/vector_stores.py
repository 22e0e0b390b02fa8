"""Vector stores: where an embeddings table too long to search in memory gets its approximate
index (`vector_index.store`), for build, update and query alike.

A store is an object with four methods (`VectorStore`): `reaches(index_url)` (whether it can
live beside an index there), `sync(...)` (make its copy of a table hold exactly a version's
rows; returns the manifest's entry for the table, with the store's own `version`, an int
that only grows), `open(...)` (a search over the copy at that entry: `len()` and
`nearest(query, k) -> [(id, score)]`), and `forget_before(...)` (drop what no kept version
searches). It is named by its registration here, by an installed package's entry point in
the `graphrag_ray.vector_stores` group, or as `module:attribute`. Lance is the first. Each
call gets the `vector_index` section: a store reads its own settings from it (Lance from
`vector_index.lance`, a plugin from `vector_index.options`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pyarrow as pa

from graphrag_ray.config import VectorIndexConfig
from graphrag_ray.plugins import find_plugin
from graphrag_ray.storage.lance_vectors import LanceStore
from graphrag_ray.storage.pgvector_store import PgvectorStore

ENTRY_POINT_GROUP = "graphrag_ray.vector_stores"

# The store an entry names, when it names none (manifests from before stores were named).
DEFAULT_STORE = "lance"


class VectorStore(Protocol):
    def reaches(self, index_url: str) -> bool: ...

    def sync(self, index_url: str, storage_options: dict, table: str,
             parts: Callable[[pa.Array | None], Iterator[pa.Table]], config: VectorIndexConfig,
             kept_ids: pa.Array | None, previous: dict | None) -> dict:
        """`parts(skip)`: the table's (id, vector) parts without the rows of `skip`;
        `kept_ids`: rows an update carried unchanged since `previous` (this table's entry in
        the previous version's manifest), which a store may take as it holds them."""

    def open(self, index_url: str, storage_options: dict, table: str, entry: dict,
             config: VectorIndexConfig) -> Any: ...

    def forget_before(self, index_url: str, storage_options: dict, table: str,
                      oldest_kept: int, config: VectorIndexConfig | None = None) -> int:
        """`config`: the newest kept version's `vector_index` section."""


VECTOR_STORES: dict[str, VectorStore] = {"lance": LanceStore(), "pgvector": PgvectorStore()}


def register_vector_store(name: str, store: VectorStore) -> None:
    VECTOR_STORES[name] = store


def vector_store(name: str) -> VectorStore:
    """The store `name` names: registered, an entry point, or `module:attribute`."""
    return find_plugin("vector store", name, VECTOR_STORES, ENTRY_POINT_GROUP)


def check_vector_store(config: VectorIndexConfig) -> None:
    """Before any work: the configured store exists, and can be reached where it has a way
    to say so (an optional `check(config)`)."""
    check = getattr(vector_store(config.store), "check", None)
    if check is not None:
        check(config)


def store_of(entry: dict) -> VectorStore:
    """The store a manifest entry was written by."""
    return vector_store(entry.get("store") or DEFAULT_STORE)
