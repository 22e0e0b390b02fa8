"""The query methods, registered once: the Python API (`GraphIndex.search` and its
`<name>_search` shortcuts), the CLI's `--method` and the tests all read `QUERY_METHODS`.

A new method is a module with a function `(index: OpenedIndex, question, *, history,
on_token, **its options) -> SearchResult` and one entry here, its options declared
(`QueryOption`: the CLI makes their flags), plus its prompts and config section, if any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from graphrag_ray.query import (
    basic_search, drift_search, global_search, local_search, text_search)
from graphrag_ray.query.lazy.search import lazy_search
from graphrag_ray.query.results import SearchResult


@dataclass(frozen=True)
class QueryOption:
    """A keyword option of a method's own: the CLI's `--<name>` flag (an int, or a switch
    for `kind=bool`), given to the method only, and refused with any other method."""
    name: str
    help: str
    kind: type = int


@dataclass(frozen=True)
class QueryMethod:
    name: str
    help: str  # one line, for `--help`
    search: Callable[..., SearchResult]
    # Keyword options of its own beyond `history` and `on_token`.
    options: tuple[QueryOption, ...] = ()

    def takes(self, option: str) -> bool:
        return any(o.name == option for o in self.options)


QUERY_METHODS: dict[str, QueryMethod] = {method.name: method for method in (
    QueryMethod("global", "map-reduce over one level's community reports (the paper's C0..C3), "
                "or over those dynamic selection rates relevant", global_search.global_search,
                options=(QueryOption("level", "community level (0 = root); defaults to "
                                              "global_search.default_level"),
                         QueryOption("dynamic", "rate reports from the root down and map "
                                                "only relevant ones", bool))),
    QueryMethod("local", "entity-centred context: entities, relationships, claims, their "
                "reports and text units", local_search.local_search),
    QueryMethod("drift", "community reports first, then follow-up local searches",
                drift_search.drift_search),
    QueryMethod("basic", "vector RAG over text units", basic_search.basic_search),
    QueryMethod("text", "map-reduce over the source texts (the paper's TS)",
                text_search.text_search),
    QueryMethod("lazy", "LazyGraphRAG: passages tested for relevance best community first, "
                "within a budget (--budget), then an answer from their claims", lazy_search,
                options=(QueryOption("budget", "relevance tests at most (default "
                                               "query.lazy.relevance_budget)"),)),
)}
