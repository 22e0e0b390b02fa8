"""Programmatic access to a stored index.

    from graphrag_ray import GraphIndex
    index = GraphIndex.open("s3://bucket/index")        # or a local path, memory://, gs://...
    index.manifest["version"]                           # the published version it opened
    result = index.global_search("What are the main themes?", level=2)
    result.answer, result.points, result.report_ids, result.usage
"""

from __future__ import annotations

import copy
import os

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig, config_from_data
from graphrag_ray.errors import GraphRagError
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.llm.rate_limiter import LocalRateLimiter
from graphrag_ray.prompts_loader import load_prompts
from graphrag_ray.query.global_search import GlobalSearchResult, global_search
from graphrag_ray.storage import IndexStore, IndexVersion


class GraphIndex:
    def __init__(self, store: IndexVersion, manifest: dict, config: GraphRagConfig):
        self.store = store
        self.manifest = manifest
        self.config = config
        self._tables: dict[str, pa.Table] = {}

    @classmethod
    def open(cls, url: str, config: GraphRagConfig | None = None, version: str | None = None,
             **storage_options) -> "GraphIndex":
        """Open the published version of an index (or an older published `version`). Without
        `config`, the one it was built with is used (its API key is never stored: it comes
        from GRAPHRAG_API_KEY or OPENAI_API_KEY)."""
        store = IndexStore(url, **storage_options).open(version)
        manifest = store.read_manifest()
        if config is None:
            config = config_from_manifest(manifest)
        return cls(store, manifest, config)

    @property
    def levels(self) -> list[int]:
        return list(self.manifest["levels"])

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        key = f"{name}:{','.join(columns or [])}"
        if key not in self._tables:
            self._tables[key] = self.store.read_table(name, columns)
        return self._tables[key]

    def resolve_level(self, level: int | None) -> int:
        if not self.levels:
            raise GraphRagError("the index has no communities (no relationships were extracted)")
        wanted = self.config.global_search.default_level if level is None else level
        if wanted < 0:
            raise GraphRagError(f"level must be >= 0, got {wanted}")
        # A level below the deepest one is the deepest (communities are carried down).
        return min(wanted, max(self.levels))

    def global_search(self, question: str, level: int | None = None) -> GlobalSearchResult:
        if not question.strip():
            raise GraphRagError("the question is empty")
        used_level = self.resolve_level(level)
        reports = self.table(schema.COMMUNITY_REPORTS,
                             ["community", "level", "title", "summary", "rank", "full_content",
                              "findings"])
        reports = reports.filter(pc.equal(reports.column("level"), used_level))
        services = LLMServices(limiter=LocalRateLimiter(self.config.llm))
        return global_search(question, reports, self.config, load_prompts(self.config), used_level,
                             services)


def config_from_manifest(manifest: dict, overrides: list[str] | None = None) -> GraphRagConfig:
    """The build's config (it holds no API key: that comes from the environment)."""
    data = copy.deepcopy(manifest.get("config", {}))
    key = os.environ.get("GRAPHRAG_API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
    data.setdefault("llm", {})["api_key"] = key
    data.setdefault("embeddings", {})["api_key"] = key
    return config_from_data(data, overrides, source="the index manifest")
