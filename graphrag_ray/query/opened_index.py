"""What a query method reads from an open index: one small object instead of a dozen
arguments. `api.GraphIndex` is the implementation; a test may pass anything with these
members."""

from __future__ import annotations

from typing import Callable, Protocol, TypeVar

import numpy as np
import pyarrow as pa

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.distributed.fanout import FanOut
from graphrag_ray.query.local_data import LocalData
from graphrag_ray.query.vectors import VectorIndex
from graphrag_ray.storage.lexical_index import LexicalIndex
from graphrag_ray.storage.row_reader import RowReader


T = TypeVar("T")


class OpenedIndex(Protocol):
    config: GraphRagConfig
    fan_out: FanOut

    @property
    def prompts(self) -> dict[str, str]: ...

    @property
    def services(self) -> LLMServices: ...

    @property
    def levels(self) -> list[int]: ...

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """The index table `name` (only `columns`), read once and kept."""

    def has_table(self, name: str) -> bool: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Query texts embedded as the index's texts were."""

    def vectors(self, name: str) -> VectorIndex: ...

    def rows(self, name: str) -> RowReader:
        """Table `name`'s rows by number, read from the index when taken (texts)."""

    def local_data(self) -> LocalData:
        """The rows local and DRIFT search rank (read once)."""

    def read_uncached(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """Table `name` read for one use, not kept."""

    def lexical(self) -> LexicalIndex | None:
        """The version's lexical index of its text units (None: made before there was one)."""

    def embedding_method(self) -> str:
        """How the index's vectors were made: api, local or hashing."""

    def resolve_level(self, level: int | None) -> int:
        """A community level that exists (the default one for None)."""

    def kept(self, key: str, make: Callable[[], T]) -> T:
        """What a method builds from the tables once per open index (`make()` on first
        use, then kept): a lookup over every unit is not rebuilt for each question."""
