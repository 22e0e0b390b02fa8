"""The rows local and DRIFT search rank, read from an open index once: entities,
relationships, claims, text units and reports, with the lookups the searches use (entity by
id and by the words of its name or an alias, an entity's relationships, claims and reports)
and the entity description vectors.

The tables stay Arrow columns and a row becomes a dict only when a search takes it
(`Rows`); the lookups are arrays of row numbers (`Grouped`), not dicts of lists. A question
touches a few hundred rows; holding millions of entities and relationships as Python dicts
cost gigabytes and, on a 100M-token index, most of a local query's 18.7 s.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.query.citations import ReadTable
from graphrag_ray.query.vectors import VectorIndex


def words_of(text: str) -> str:
    """A name's or question's words, upper case, space-padded: a name matches where its
    padded words stand in the question's."""
    return f" {' '.join(re.findall(r'[A-Za-z0-9]+', text.upper()))} "


class Rows:
    """A table's rows by number, each made a dict when asked for."""

    def __init__(self, table: pa.Table):
        self.table = table.combine_chunks()
        self._columns = {name: self.table.column(name) for name in self.table.column_names}
        self._numbers: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, row: int) -> dict:
        return {name: column[row].as_py() for name, column in self._columns.items()}

    def numbers(self, name: str) -> np.ndarray:
        """A numeric column as an array (sort keys without making rows)."""
        if name not in self._numbers:
            self._numbers[name] = self.table.column(name).to_numpy(zero_copy_only=False)
        return self._numbers[name]


class RowsById:
    """A table's rows by id (`units[unit_id]`, `unit_id in units`)."""

    def __init__(self, table: pa.Table):
        self.rows = Rows(table)
        self.row_of = {key: row for row, key in enumerate(table.column("id").to_pylist())}

    def __contains__(self, key: str) -> bool:
        return key in self.row_of

    def __getitem__(self, key: str) -> dict:
        return self.rows[self.row_of[key]]


class Grouped:
    """Row numbers grouped by a key (entity title -> its relationships' rows, ...): one
    array of rows sorted by key and the offsets of each key's run."""

    def __init__(self, keys: pa.Array | pa.ChunkedArray, rows: np.ndarray):
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        encoded = keys.dictionary_encode()
        self.slot = {key: i for i, key in enumerate(encoded.dictionary.to_pylist())}
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        self.rows = np.asarray(rows, dtype=np.int64)[order]
        self.offsets = np.searchsorted(codes[order], np.arange(len(self.slot) + 1))

    def get(self, key, default=()) -> list[int]:
        slot = self.slot.get(key)
        if slot is None:
            return list(default)
        return self.rows[self.offsets[slot]:self.offsets[slot + 1]].tolist()


@dataclass
class LocalData:
    """The tables local search reads, as rows and lookups (built once per index)."""
    entities: Rows
    relationships: Rows
    claims: Rows
    units: RowsById
    reports: list[dict]  # id, community, level, title, summary, full_content, rank, entity_ids
    entity_vectors: VectorIndex
    # Entity resolution's aliases (alias title, canonical entity id): a question that names
    # "Holmes" finds SHERLOCK HOLMES.
    aliases: list[tuple[str, str]] = field(default_factory=list)
    by_id: dict[str, int] = field(init=False)
    edges_of: Grouped = field(init=False)  # entity title -> relationship rows
    claims_of: Grouped = field(init=False)  # entity title -> claim rows
    reports_of: Grouped = field(init=False)  # entity id -> report rows
    # First word of a name -> (" WORDS OF THE NAME ", entity row, its place among the names)
    names_by_word: dict[str, list[tuple[str, int, int]]] = field(init=False)

    def __post_init__(self) -> None:
        entities = self.entities.table
        ids = entities.column("id").to_pylist()
        self.by_id = {entity_id: i for i, entity_id in enumerate(ids)}
        names = [(words_of(title), i) for i, title in enumerate(
            entities.column("title").to_pylist()) if len(title) > 2]
        names += [(words_of(alias), self.by_id[entity_id])
                  for alias, entity_id in self.aliases
                  if len(alias) > 2 and entity_id in self.by_id]
        self.names_by_word = defaultdict(list)
        for place, (name, row) in enumerate(names):
            first = name.split(" ", 2)[1] if name.strip() else ""
            self.names_by_word[first].append((name, row, place))
        edges, count = self.relationships.table, len(self.relationships)
        ends = pa.chunked_array([edges.column("source"), edges.column("target")],
                                pa.string()).combine_chunks()
        # Each row's source, then its target: a title's rows come in table order.
        self.edges_of = Grouped(ends.take(pa.array(np.arange(2 * count).reshape(2, count)
                                                   .T.ravel())),
                                np.repeat(np.arange(count), 2))
        self.claims_of = Grouped(self.claims.table.column("subject_id"),
                                 np.arange(len(self.claims)))
        members = [(entity_id, r) for r, report in enumerate(self.reports)
                   for entity_id in report["entity_ids"]]
        self.reports_of = Grouped(pa.array([m[0] for m in members], pa.string()),
                                  np.array([m[1] for m in members], dtype=np.int64))

    def named(self, query_words: str) -> list[tuple[str, int, int]]:
        """(name, entity row, place) of every name whose words stand in `query_words`."""
        return [entry for word in dict.fromkeys(query_words.split())
                for entry in self.names_by_word.get(word, ()) if entry[0] in query_words]


ENTITY_COLUMNS = ["id", "human_readable_id", "title", "type", "description", "text_unit_ids",
                  "degree"]
RELATIONSHIP_COLUMNS = ["id", "human_readable_id", "source", "target", "description",
                        "weight", "combined_degree"]
CLAIM_COLUMNS = ["id", "human_readable_id", "subject_id", "type", "status", "description"]


def local_data(read: ReadTable, entity_vectors: VectorIndex, has_claims: bool,
               has_aliases: bool = False) -> LocalData:
    """`entity_vectors`: the entity description embeddings, as the index searches them."""
    claims = read(schema.COVARIATES, CLAIM_COLUMNS) if has_claims else pa.table(
        {name: pa.array([], pa.string()) for name in CLAIM_COLUMNS})
    reports = read(schema.COMMUNITY_REPORTS, ["id", "community", "level", "title", "summary",
                                              "full_content", "rank"])
    members = read(schema.COMMUNITIES, ["community", "entity_ids"])
    entity_ids = dict(zip(members.column("community").to_pylist(),
                          members.column("entity_ids").to_pylist()))
    report_rows = [{**r, "entity_ids": entity_ids.get(r["community"], [])}
                   for r in reports.to_pylist()]
    aliases = read(schema.ENTITY_ALIASES, ["alias", "entity_id"]) if has_aliases else None
    return LocalData(Rows(read(schema.ENTITIES, ENTITY_COLUMNS)),
                     Rows(read(schema.RELATIONSHIPS, RELATIONSHIP_COLUMNS)),
                     Rows(claims),
                     RowsById(read(schema.TEXT_UNITS, ["id", "human_readable_id", "text"])),
                     report_rows, entity_vectors,
                     list(zip(aliases.column("alias").to_pylist(),
                              aliases.column("entity_id").to_pylist())) if aliases else [])
