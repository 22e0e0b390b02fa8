"""Index storage on any fsspec URL: versioned tables, published atomically, each version
with its typed manifest."""

from graphrag_ray.storage.index_store import IndexStore, IndexVersion
from graphrag_ray.storage.manifest import Manifest

__all__ = ["IndexStore", "IndexVersion", "Manifest"]
