"""graphrag-ray: GraphRAG (Edge et al. 2024) indexing and global search, distributed on Ray."""

from graphrag_ray.config import GraphRagConfig, load_config
from graphrag_ray.resources import use_system_allocator_for_arrow

use_system_allocator_for_arrow()

__all__ = ["GraphIndex", "GraphRagConfig", "load_config"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # `from graphrag_ray import GraphIndex` imports the query side on first use only: every
    # Ray worker imports this package, and most never open an index.
    if name == "GraphIndex":
        from graphrag_ray.api import GraphIndex

        return GraphIndex
    raise AttributeError(f"module 'graphrag_ray' has no attribute {name!r}")
