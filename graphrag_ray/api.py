"""Programmatic access to a stored index.

    from graphrag_ray import GraphIndex
    index = GraphIndex.open("s3://bucket/index")        # or a local path, memory://, gs://...
    result = index.global_search("What are the main themes?", level=2)
    result = index.local_search("Who is Scrooge?", history=[{"role": "user", "content": ...}])
    result.answer, result.sources, result.usage, result.context_tokens, result.details
    async for piece in index.stream("drift", "What changes Scrooge?"): print(piece, end="")

Tables are read when a method first needs them, only the columns it uses, and kept.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import warnings
from typing import Callable

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig, config_from_manifest
from graphrag_ray.errors import GraphRagError, IndexNotFoundError
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.llm.embedding_methods import Embedder, is_embedding_method
from graphrag_ray.llm.embeddings import HASHING_MODEL
from graphrag_ray.storage.lexical_index import LEXICAL, LexicalIndex, open_lexical
from graphrag_ray.distributed.services import open_services
from graphrag_ray.prompts_loader import load_prompts
from graphrag_ray.distributed.fanout import FanOut
from graphrag_ray.query.global_search import prepare_level
from graphrag_ray.query.lazy.search import searchable_units
from graphrag_ray.query.local_data import LocalData, local_data
from graphrag_ray.query.methods import QUERY_METHODS
from graphrag_ray.query.results import SearchResult
from graphrag_ray.query.retrieval import retrieval_graph
from graphrag_ray.query.vectors import VectorIndex, open_vectors
from graphrag_ray.storage import IndexStore, IndexVersion, Manifest
from graphrag_ray.storage.row_reader import RowReader
from graphrag_ray.tokens import get_encoding

OnToken = Callable[[str], None]


class GraphIndex:
    def __init__(self, store: IndexVersion, manifest: Manifest, config: GraphRagConfig,
                 cache: ResponseCache | None = None):
        self.store = store
        self.cache = cache
        self.manifest = manifest
        self.config = config
        self._tables: dict[str, pa.Table] = {}
        self._lock = threading.Lock()
        self._prompts: dict[str, str] | None = None
        self._services: LLMServices | None = None
        self._embedder = None
        self._local: LocalData | None = None
        self._vectors: dict[str, VectorIndex] = {}
        self._kept: dict[str, object] = {}
        self._making: dict[str, threading.Lock] = {}
        self.fan_out = FanOut(config.runtime)

    @classmethod
    def open(cls, url: str, config: GraphRagConfig | None = None, version: str | None = None,
             cache_url: str | None = None, **storage_options) -> "GraphIndex":
        """Open the published version of an index (or an older published `version`). Without
        `config`, the one it was built with is used (its API key is never stored: it comes
        from GRAPHRAG_API_KEY or OPENAI_API_KEY). `cache_url`: keep LLM replies there (an
        evaluation that reruns then repeats no call)."""
        store = IndexStore(url, **storage_options).open(version)
        manifest = store.read_manifest()
        if config is None:
            config = config_from_manifest(manifest)
        made_with = manifest.embeddings.model or ""
        if made_with.startswith("hashing") and made_with != HASHING_MODEL:
            warnings.warn(f"{url}: its offline embeddings were made with older word rules "
                          f"({made_with}, now {HASHING_MODEL}); local, DRIFT and basic search "
                          "match questions better after `graphrag-ray update` (no extraction "
                          "is repeated)", stacklevel=2)
        return cls(store, manifest, config, ResponseCache(cache_url) if cache_url else None)

    @property
    def levels(self) -> list[int]:
        return list(self.manifest.levels)

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        key = f"{name}:{','.join(columns or [])}"
        with self._lock:
            whole = self._tables.get(f"{name}:")
            if key not in self._tables and whole is not None:
                self._tables[key] = whole.select(columns)
            if key not in self._tables:
                try:
                    # One chunk per column: a table comes in row groups (hundreds, for the
                    # text-unit-sized ones), and taking rows across many chunks copied every
                    # chunk, at every question.
                    self._tables[key] = self.store.read_table(name, columns).combine_chunks()
                except IndexNotFoundError:
                    raise IndexNotFoundError(_missing_table_message(name)) from None
            return self._tables[key]

    def resolve_level(self, level: int | None) -> int:
        if not self.levels:
            raise GraphRagError("the index has no communities (no relationships were extracted)")
        wanted = self.config.global_search.default_level if level is None else level
        if wanted < 0:
            raise GraphRagError(f"level must be >= 0, got {wanted}")
        if level is not None and level > max(self.levels):
            raise GraphRagError(f"this index has no level {level}: its levels are "
                                f"{', '.join(map(str, self.levels))}")
        # The default level below the deepest one is the deepest (communities are carried
        # down, so every level is a full partition).
        return min(wanted, max(self.levels))

    # -- what the methods share -------------------------------------------------------------

    @property
    def prompts(self) -> dict[str, str]:
        if self._prompts is None:
            self._prompts = load_prompts(self.config)
        return self._prompts

    @property
    def services(self) -> LLMServices:
        """One rate budget for this index's queries: a named Ray actor when the calls fan out
        across actors, a lock in this process otherwise."""
        if self._services is None:
            if self.fan_out.use_ray:
                from graphrag_ray.distributed import ensure_ray

                ensure_ray(self.config.runtime)
            self._services = open_services(self.config, self.cache, on_ray=self.fan_out.use_ray,
                                           job="query")
        return self._services

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            # Offline (hashing) embeddings call no endpoint: no rate budget to open (on Ray,
            # an actor that the first question of a served index would wait for).
            # The index's own method (its manifest's): a question is embedded as its
            # vectors were, whatever this config's `auto` would pick on this machine.
            method = self.embedding_method()
            self._embedder = Embedder(self.config.embeddings,
                                      self.services if method == "api" else None,
                                      method=method)
        return self._embedder

    def embed(self, texts: list[str]):
        return self.embedder.embed(texts)

    def vectors(self, name: str) -> VectorIndex:
        if name not in self._vectors:
            self._vectors[name] = open_vectors(
                name, self.rows, self.manifest.vector_stores, self.store.url,
                self.store.fs.storage_options, self.config.vector_index)
        return self._vectors[name]

    def rows(self, name: str) -> RowReader:
        """Table `name`'s rows by number, read when taken (texts a question needs)."""
        return self.kept(f"rows:{name}", lambda: self._row_reader(name))

    def _row_reader(self, name: str) -> RowReader:
        try:
            return self.store.row_reader(name)
        except IndexNotFoundError:
            raise IndexNotFoundError(_missing_table_message(name)) from None

    def kept(self, key: str, make):
        """What a method builds from the tables once per open index (`OpenedIndex.kept`):
        questions asked at once wait for one build (each building its own held several
        copies of a 100M-token index's graph)."""
        if key not in self._kept:
            with self._lock:
                making = self._making.setdefault(key, threading.Lock())
            with making:
                if key not in self._kept:
                    self._kept[key] = make()
        return self._kept[key]

    def read_uncached(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A table read for one use and not kept (what a method turns into arrays once)."""
        return self.store.read_table(name, columns)

    def lexical(self) -> LexicalIndex | None:
        """The version's lexical index (None: a version made before there was one)."""
        return self.kept("lexical", lambda: open_lexical(self.store.fs,
                                                         f"{self.store.root}/{LEXICAL}"))

    def embedding_method(self) -> str:
        """How the index's vectors were made (api, local, hashing, a plugin's): a question
        is embedded the same way. An adopted index's vectors are an endpoint's: the config's
        method."""
        method = self.manifest.embeddings.method
        return method if is_embedding_method(method) \
            else self.config.embeddings.resolved_method()

    def local_data(self) -> LocalData:
        if self._local is None:
            self._local = local_data(self.table, self.rows,
                                     self.vectors(schema.ENTITY_DESCRIPTION_EMBEDDINGS),
                                     self.store.has_table(schema.COVARIATES),
                                     self.store.has_table(schema.ENTITY_ALIASES))
        return self._local

    def warm(self) -> None:
        """Work out now what questions would work out first, so that none pays the load (a
        served index): the vector indexes; what each method builds once from the tables
        (local search's rows and lookups, global search's default level rendered for the
        map, lazy search's units and community tree) and the columns citations read. No
        table is read whole: texts and lists are read when a question takes them."""
        for name in self.manifest.tables:
            if name.startswith("embeddings_"):
                self.vectors(name)
        self.table(schema.DOCUMENTS, ["id", "title"])
        self.table(schema.TEXT_UNITS, ["id", "document_id"])
        if schema.ENTITY_DESCRIPTION_EMBEDDINGS in self.manifest.tables:
            self.local_data()
            _ = self.embedder  # and, for an endpoint's embeddings, its budget
        if self.levels and not self.config.global_search.dynamic.enabled:
            prepare_level(self)  # the default level's rows, rendered for the map
        if schema.TEXT_UNIT_EMBEDDINGS in self.manifest.tables:
            searchable_units(self)
        if schema.ENTITIES in self.manifest.tables:
            retrieval_graph(self)  # what every method's ranking walks
        self.lexical()
        if self.embedding_method() == "local":
            self.embed(["warm"])  # the local model's session (an endpoint's call is paid)
        _ = self.prompts  # read and kept
        get_encoding(self.config.tokenizer.encoding)  # its ranks, loaded
        config = self.config
        if any(config.uses_llm(section.method) for section in (
                config.global_search, config.local_search, config.drift_search,
                config.basic_search)) or config.lazy_uses_llm():
            # The rate budget (a Ray actor on Ray) and the map calls' actors: seconds to
            # start, which the first LLM answer of a served index would pay.
            _ = self.services
            self.fan_out.start()

    def _check(self, question: str) -> None:
        if not isinstance(question, str):
            raise GraphRagError(f"the question must be a string, not {type(question).__name__}")
        if not question.strip():
            raise GraphRagError("the question is empty")
        limit = self.config.query.max_question_chars
        if len(question) > limit:
            raise GraphRagError(f"the question has {len(question):,} characters; the limit is "
                                f"{limit:,} (query.max_question_chars)")

    def has_table(self, name: str) -> bool:
        return self.store.has_table(name)

    # -- the methods (`query.methods.QUERY_METHODS`) ---------------------------------------

    def search(self, method: str, question: str, response_type: str | None = None,
               **options) -> SearchResult:
        """Answer with a registered method; `options`: `history`, `on_token` and the
        method's own (`global`: `level`, `dynamic`; `lazy`: `budget`). `response_type`
        ("a bulleted list", "one paragraph"): this answer's form instead of the configured
        one."""
        if method not in QUERY_METHODS:
            raise GraphRagError(f"unknown query method {method!r}; one of "
                                f"{', '.join(QUERY_METHODS)}")
        self._check(question)
        answering = self if response_type is None else _Answering(self, response_type)
        return QUERY_METHODS[method].search(answering, question, **options)

    def __getattr__(self, name: str):
        """`index.global_search(question, level=1)` and the like: `search` by its name."""
        method = name.removesuffix("_search")
        if name.endswith("_search") and method in QUERY_METHODS:
            return functools.partial(self.search, method)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def stream(self, method: str, question: str, **options) -> "AnswerStream":
        """`async for piece in index.stream(...)`: the answer as it is written; the whole
        SearchResult is `stream.result` afterwards."""
        return AnswerStream(lambda on_token: self.search(method, question, on_token=on_token,
                                                         **options))

    def close(self) -> None:
        self.fan_out.close()
        if self._services is not None:
            self._services.close()


class _Answering:
    """An index answering one question in another form: its config with every method's
    `response_type` replaced; everything else (tables, services, actors) is the index's."""

    def __init__(self, index: GraphIndex, response_type: str):
        if not isinstance(response_type, str) or not response_type.strip():
            raise GraphRagError("response_type must be a non-empty string")
        if len(response_type) > 200:
            raise GraphRagError("response_type is longer than 200 characters")
        self._index = index
        self.config = index.config.model_copy(deep=True)
        sections = [self.config.global_search, self.config.local_search,
                    self.config.drift_search, self.config.basic_search, self.config.query.lazy]
        for section in sections:
            section.response_type = response_type.strip()

    def __getattr__(self, name: str):
        return getattr(self._index, name)


class AnswerStream:
    def __init__(self, run: Callable[[OnToken], SearchResult]):
        self._run = run
        self.result: SearchResult | None = None

    def __aiter__(self):
        return self._pieces()

    async def _pieces(self):
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        done = object()
        future = loop.run_in_executor(
            None, self._run, lambda piece: loop.call_soon_threadsafe(queue.put_nowait, piece))
        future.add_done_callback(lambda _: queue.put_nowait(done))
        while (piece := await queue.get()) is not done:
            yield piece
        self.result = await future


def _missing_table_message(name: str) -> str:
    if name.startswith("embeddings_"):
        return (f"the index has no {name} table: it was built before embeddings were part of "
                "the index; rebuild it (cached LLM calls are not repeated)")
    if name == schema.COVARIATES:
        return "the index has no claims (covariates): build it with claims.enabled=true"
    return f"the index has no {name} table"
