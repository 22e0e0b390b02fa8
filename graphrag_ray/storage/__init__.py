"""Index storage on any fsspec URL."""

from graphrag_ray.storage.index_store import IndexStore

__all__ = ["IndexStore"]
