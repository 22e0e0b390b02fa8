"""Retrievers for the frameworks applications are built on: LangChain
(`retrievers.langchain.GraphRagRetriever`) and LlamaIndex
(`retrievers.llama_index.GraphRagRetriever`), each running a query method of an index and
returning the answer and its sources (`retrievers.found`)."""
