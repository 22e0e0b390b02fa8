"""Index storage on any fsspec URL: versioned tables, published atomically."""

from graphrag_ray.storage.index_store import IndexStore, IndexVersion

__all__ = ["IndexStore", "IndexVersion"]
