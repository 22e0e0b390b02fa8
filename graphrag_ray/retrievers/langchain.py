"""A LangChain retriever over an index (the `langchain` extra): `invoke(question)` runs the
chosen query method and returns `Document`s: the answer first, its sources as metadata, then
for local and basic search the passages it read."""

from __future__ import annotations

import asyncio
from typing import Any

try:
    from langchain_core.callbacks import (AsyncCallbackManagerForRetrieverRun,
                                          CallbackManagerForRetrieverRun)
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # (one line, not a traceback: `graphrag_ray.errors`)
    from graphrag_ray.errors import GraphRagError
    raise GraphRagError("the LangChain retriever needs the langchain extra: "
                        "pip install -e \".[langchain]\"") from exc
from pydantic import ConfigDict

from graphrag_ray.retrievers.found import retrieve


class GraphRagRetriever(BaseRetriever):
    """`index`: an opened `GraphIndex`; `method`: global, local, drift, basic, text or lazy;
    `options`: the method's own (`level`, `budget`...)."""
    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any
    method: str = "local"
    options: dict = {}

    @classmethod
    def open(cls, url: str, method: str = "local", **options) -> GraphRagRetriever:
        from graphrag_ray.api import GraphIndex

        return cls(index=GraphIndex.open(url), method=method, options=options)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=f.text, id=f.id, metadata=f.metadata)
                for f in retrieve(self.index, self.method, query, self.options)]

    async def _aget_relevant_documents(
            self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        # The search is blocking (threads, calls): it runs off the event loop.
        found = await asyncio.to_thread(retrieve, self.index, self.method, query, self.options)
        return [Document(page_content=f.text, id=f.id, metadata=f.metadata) for f in found]
