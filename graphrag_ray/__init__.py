"""graphrag-ray: GraphRAG (Edge et al. 2024) indexing and global search, distributed on Ray."""

from graphrag_ray.api import GraphIndex
from graphrag_ray.config import GraphRagConfig, load_config

__all__ = ["GraphIndex", "GraphRagConfig", "load_config"]
__version__ = "0.1.0"
