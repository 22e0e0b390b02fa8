"""Graph stores: where a published version's graph goes besides the index (a graph database,
a search service), named in `output.graph_stores`.

A graph store is an object with `write(version) -> str`: it reads what it keeps from the
published `IndexVersion` (`read_table`, `iter_table`: entities, relationships, communities,
community_reports, text_units, documents, under Microsoft GraphRAG's names) and returns a
line saying what it wrote. It runs after each build and update publishes, so the index stays
the record and a store that fails costs a copy, never the version. It is named by its
registration here, by an installed package's entry point in the `graphrag_ray.graph_stores`
group, or as `module:attribute`.
"""

from __future__ import annotations

from typing import Protocol

from graphrag_ray.plugins import find_plugin
from graphrag_ray.storage.postgres_graph import PostgresGraphStore

ENTRY_POINT_GROUP = "graphrag_ray.graph_stores"


class GraphStore(Protocol):
    def write(self, version) -> str: ...


GRAPH_STORES: dict[str, GraphStore] = {"postgres": PostgresGraphStore()}


def register_graph_store(name: str, store: GraphStore) -> None:
    GRAPH_STORES[name] = store


def graph_store(name: str) -> GraphStore:
    """The store `name` names: registered, an entry point, or `module:attribute`."""
    return find_plugin("graph store", name, GRAPH_STORES, ENTRY_POINT_GROUP)
