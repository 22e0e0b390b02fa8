"""The LlamaIndex retriever with the real `llama-index-core`: over an index whose local
answers come from the test LLM, the same answer and passages as `GraphIndex`, sync and
async; the sources stay out of what an embedding or an LLM reads of a node."""

import asyncio

import pytest

pytest.importorskip("llama_index.core", reason="the llamaindex extra "
                    "(pip install -e '.[llamaindex]')")

from llama_index.core.schema import MetadataMode  # noqa: E402

from conftest import llm_config  # noqa: E402
from graphrag_ray import GraphIndex  # noqa: E402
from graphrag_ray.retrievers.llama_index import GraphRagRetriever  # noqa: E402

QUESTION = "What does Scrooge think of Christmas?"


def test_nodes_are_the_answer_then_the_passages_it_read(small_index, llm_server):
    config = llm_config(llm_server, "local_search.method=llm")
    retriever = GraphRagRetriever(GraphIndex.open(str(small_index), config), "local")
    nodes = retriever.retrieve(QUESTION)
    expected = GraphIndex.open(str(small_index), config).search("local", QUESTION)
    units = list(dict.fromkeys(expected.sources.text_units))[:20]
    assert nodes[0].node.get_content() == expected.answer and nodes[0].score == 1.0
    assert [n.node.metadata["text_unit_id"] for n in nodes[1:]] == units
    assert [n.score for n in nodes[1:]] == sorted((n.score for n in nodes[1:]), reverse=True)
    # What an LLM reads of a node is its text, not the sources' rows.
    assert nodes[0].node.get_content(MetadataMode.LLM) == expected.answer
    again = asyncio.run(retriever.aretrieve(QUESTION))
    assert [n.node.node_id for n in again] == [n.node.node_id for n in nodes]
