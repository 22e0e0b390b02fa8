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

import importlib
from importlib.metadata import entry_points
from typing import Protocol

from graphrag_ray.errors import ConfigError

ENTRY_POINT_GROUP = "graphrag_ray.graph_stores"


class GraphStore(Protocol):
    def write(self, version) -> str: ...


GRAPH_STORES: dict[str, GraphStore] = {}


def register_graph_store(name: str, store: GraphStore) -> None:
    GRAPH_STORES[name] = store


def graph_store(name: str) -> GraphStore:
    """The store `name` names: registered, an entry point, or `module:attribute`."""
    if name in GRAPH_STORES:
        return GRAPH_STORES[name]
    found = [point for point in entry_points(group=ENTRY_POINT_GROUP) if point.name == name]
    if found:
        return found[0].load()
    if ":" in name:
        module, _, attribute = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"graph store {name!r} cannot be loaded: {exc}") from None
    known = sorted(set(GRAPH_STORES) | {p.name for p in entry_points(group=ENTRY_POINT_GROUP)})
    raise ConfigError(f"unknown graph store {name!r}: "
                      f"{'known ones are ' + ', '.join(known) if known else 'none is installed'}"
                      ", or give one as module:attribute")
