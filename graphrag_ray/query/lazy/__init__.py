"""LazyGraphRAG: `search.lazy_search` and the parts it runs (deepening, relevance tests, the
answer)."""
