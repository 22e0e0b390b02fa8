"""A LlamaIndex retriever over an index (the `llamaindex` extra): `retrieve(question)` runs
the chosen query method and returns `NodeWithScore`s: the answer first, its sources as
metadata, then for local and basic search the passages it read."""

from __future__ import annotations

import asyncio

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:
    from graphrag_ray.errors import GraphRagError
    raise GraphRagError("the LlamaIndex retriever needs the llamaindex extra: "
                        "pip install -e \".[llamaindex]\"") from exc

from graphrag_ray.retrievers.found import Found, retrieve


def _node(found: Found) -> NodeWithScore:
    # The sources stay in the metadata, out of what an embedding or an LLM reads of it.
    metadata_keys = list(found.metadata)
    return NodeWithScore(node=TextNode(text=found.text, id_=found.id, metadata=found.metadata,
                                       excluded_embed_metadata_keys=metadata_keys,
                                       excluded_llm_metadata_keys=metadata_keys),
                         score=found.score)


class GraphRagRetriever(BaseRetriever):
    """`index`: an opened `GraphIndex`; `method`: global, local, drift, basic, text or lazy;
    `options`: the method's own (`level`, `budget`...)."""

    def __init__(self, index, method: str = "local", options: dict | None = None, **kwargs):
        self.index, self.method, self.options = index, method, dict(options or {})
        super().__init__(**kwargs)

    @classmethod
    def open(cls, url: str, method: str = "local", **options) -> GraphRagRetriever:
        from graphrag_ray.api import GraphIndex

        return cls(GraphIndex.open(url), method, options)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(f) for f in retrieve(self.index, self.method, query_bundle.query_str,
                                            self.options)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = await asyncio.to_thread(retrieve, self.index, self.method,
                                        query_bundle.query_str, self.options)
        return [_node(f) for f in found]
