"""The LangChain retriever with the real `langchain-core`: in a small chain, over an index
whose local and global answers come from the test LLM; the same answer and sources as
`GraphIndex`, sync and async."""

import asyncio

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra (pip install -e '.[langchain]')")

from langchain_core.runnables import RunnableLambda  # noqa: E402

from conftest import llm_config  # noqa: E402
from graphrag_ray import GraphIndex  # noqa: E402
from graphrag_ray.retrievers.langchain import GraphRagRetriever  # noqa: E402

QUESTION = "What does Scrooge think of Christmas?"


def _opened(index, server):
    return GraphIndex.open(str(index), llm_config(server, "local_search.method=llm",
                                                  "global_search.method=llm"))


def test_a_chain_gets_the_answer_and_the_passages_it_read(small_index, llm_server):
    retriever = GraphRagRetriever(index=_opened(small_index, llm_server), method="local")
    chain = retriever | RunnableLambda(lambda docs: {
        "answer": docs[0].page_content, "cited": docs[0].metadata["sources"],
        "passages": [(d.metadata["text_unit_id"], d.page_content) for d in docs[1:]]})
    got = chain.invoke(QUESTION)
    expected = _opened(small_index, llm_server).search("local", QUESTION)
    assert got["answer"] == expected.answer and expected.llm_calls >= 1
    units = list(dict.fromkeys(expected.sources.text_units))[:20]
    assert [unit for unit, _ in got["passages"]] == units and all(t for _, t in got["passages"])
    assert [row["id"] for row in got["cited"]["text_units"]["rows"]] == units
    again = asyncio.run(retriever.ainvoke(QUESTION))
    assert [d.id for d in again] == [f"answer:local:{retriever.index.manifest.version}"] + units


def test_global_search_returns_the_answer_with_its_reports(small_index, llm_server):
    retriever = GraphRagRetriever(index=_opened(small_index, llm_server), method="global",
                                  options={"level": 0})
    docs = retriever.invoke(QUESTION)
    assert len(docs) == 1 and docs[0].metadata["kind"] == "answer"
    reports = docs[0].metadata["sources"]["reports"]["rows"]
    assert reports and all(r["title"] and r["level"] == 0 for r in reports)
