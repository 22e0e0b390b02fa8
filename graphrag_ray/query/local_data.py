"""The rows local and DRIFT search rank, read from an open index once: entities,
relationships, claims, text units and reports, with the lookups the searches use (entity by
id and by the words of its name or an alias, an entity's relationships, claims and reports)
and the entity description vectors.

The tables stay Arrow columns and a row becomes a dict only when a search takes it
(`Rows`); the lookups are arrays of row numbers (`Grouped`), not dicts of lists. A question
touches a few hundred rows; holding millions of entities and relationships as Python dicts
cost gigabytes and most of a local query's time. The texts of
units and reports are not held at all: they are read from the index for the rows taken.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.grouped import Grouped
from graphrag_ray.query.citations import ReadTable
from graphrag_ray.query.vectors import VectorIndex
from graphrag_ray.storage.row_reader import RowReader


def words_of(text: str) -> str:
    """A name's or question's words, upper case, space-padded: a name matches where its
    padded words stand in the question's."""
    return f" {' '.join(re.findall(r'[A-Za-z0-9]+', text.upper()))} "


class Rows:
    """A table's rows by number, each made a dict when taken. The `stored` columns are not
    held: they are read from the index (`RowReader`) for the rows taken, a row group at a
    time. A 100M-token index's unit and report texts are gigabytes as Python objects; a
    question takes a few dozen of them."""

    def __init__(self, table: pa.Table, stored: RowReader | None = None,
                 stored_columns: tuple[str, ...] = ()):
        self.table = table  # as the index holds it (`GraphIndex.table`: one chunk)
        self._numbers: dict[str, np.ndarray] = {}
        self.stored = stored
        self.stored_columns = list(stored_columns) if stored is not None else []

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, row: int) -> dict:
        return self.take([row])[0]

    def take(self, rows: list[int]) -> list[dict]:
        """Rows `rows`, in that order, as dicts of every column (held and stored)."""
        if not rows:
            return []
        taken = self.table.take(pa.array(rows, pa.int64())).to_pylist()
        if self.stored_columns:
            for row, stored in zip(taken, self.stored.take(rows, self.stored_columns)
                                   .to_pylist()):
                row.update(stored)
        return taken

    def numbers(self, name: str) -> np.ndarray:
        """A numeric column as an array (sort keys without making rows)."""
        if name not in self._numbers:
            self._numbers[name] = self.table.column(name).to_numpy(zero_copy_only=False)
        return self._numbers[name]


class RowsById:
    """A table's rows by id (`unit_id in units`, `units.take(ids)`)."""

    def __init__(self, table: pa.Table, stored: RowReader | None = None,
                 stored_columns: tuple[str, ...] = ()):
        self.rows = Rows(table, stored, stored_columns)
        self.row_of = {key: row for row, key in enumerate(table.column("id").to_pylist())}

    def __contains__(self, key: str) -> bool:
        return key in self.row_of

    def take(self, keys: list[str]) -> list[dict]:
        return self.rows.take([self.row_of[key] for key in keys])


@dataclass
class LocalData:
    """The tables local search reads, as rows and lookups (built once per index)."""
    entities: Rows  # text_unit_ids and description stored
    relationships: Rows  # description stored
    claims: Rows
    units: RowsById  # id, human_readable_id, n_tokens; text stored
    reports: RowsById  # id, community, level, title, rank; summary, full_content stored
    # The communities' members (community, entity_ids): which reports an entity is in.
    memberships: pa.Table
    entity_vectors: VectorIndex
    # Entity resolution's aliases (alias title, canonical entity id): a question that names
    # "Holmes" finds SHERLOCK HOLMES.
    aliases: list[tuple[str, str]] = field(default_factory=list)
    by_id: dict[str, int] = field(init=False)
    edges_of: Grouped = field(init=False)  # entity title -> relationship rows
    claims_of: Grouped = field(init=False)  # entity title -> claim rows
    reports_of: Grouped = field(init=False)  # entity id -> report rows
    members_of: Grouped = field(init=False)  # report row -> entity rows
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
        self.reports_of, self.members_of = _report_members(
            self.memberships, self.reports.rows.table.column("community"),
            entities.column("id"))

    def named(self, query_words: str) -> list[tuple[str, int, int]]:
        """(name, entity row, place) of every name whose words stand in `query_words`."""
        return [entry for word in dict.fromkeys(query_words.split())
                for entry in self.names_by_word.get(word, ()) if entry[0] in query_words]

    def best_report(self) -> int | None:
        """The report row with the highest rating (the highest level's first among equals)."""
        if not len(self.reports.rows):
            return None
        rank, level = self.reports.rows.numbers("rank"), self.reports.rows.numbers("level")
        return int(np.lexsort((np.arange(len(rank)), level, -rank))[0])


def _report_members(memberships: pa.Table, report_communities: pa.ChunkedArray,
                    entity_ids: pa.ChunkedArray) -> tuple[Grouped, Grouped]:
    """(entity id -> its reports' rows, report row -> its entities' rows), both in report
    order, from the communities' member lists, flattened in Arrow."""
    lists = memberships.column("entity_ids").combine_chunks()
    members = pc.list_flatten(lists)
    communities = memberships.column("community").combine_chunks().take(
        pc.list_parent_indices(lists))
    report_rows = pc.index_in(communities, value_set=report_communities.combine_chunks())
    report_rows = report_rows.fill_null(-1).to_numpy(zero_copy_only=False)
    entity_rows = pc.index_in(members, value_set=entity_ids.combine_chunks())
    entity_rows = entity_rows.fill_null(-1).to_numpy(zero_copy_only=False)
    order = np.argsort(report_rows, kind="stable")
    order = order[report_rows[order] >= 0]
    reports_of = Grouped(members.take(pa.array(order)), report_rows[order])
    known = order[entity_rows[order] >= 0]
    members_of = Grouped(pa.array(report_rows[known]), entity_rows[known])
    return reports_of, members_of


ENTITY_COLUMNS = ["id", "human_readable_id", "title", "type", "degree"]
# An entity's text units and description: most of the entities table's bytes (a central
# entity is in thousands of units), read for the dozen entities a question matches.
ENTITY_STORED = ("text_unit_ids", "description")
RELATIONSHIP_COLUMNS = ["id", "human_readable_id", "source", "target", "weight",
                        "combined_degree"]
# Read for the hundred relationships a question takes: reading 570,000 descriptions was
# most of a 100M-token index's first local answer.
RELATIONSHIP_STORED = ("description",)
CLAIM_COLUMNS = ["id", "human_readable_id", "subject_id", "type", "status", "description"]
REPORT_COLUMNS = ["id", "community", "level", "title", "rank"]
REPORT_TEXTS = ("summary", "full_content")


def local_data(read: ReadTable, stored: Callable[[str], RowReader],
               entity_vectors: VectorIndex, has_claims: bool,
               has_aliases: bool = False) -> LocalData:
    """`read(name, columns)`: a table held; `stored(name)`: its rows read by number (the
    unit and report texts); `entity_vectors`: the entity description embeddings, as the
    index searches them."""
    claims = read(schema.COVARIATES, CLAIM_COLUMNS) if has_claims else pa.table(
        {name: pa.array([], pa.string()) for name in CLAIM_COLUMNS})
    aliases = read(schema.ENTITY_ALIASES, ["alias", "entity_id"]) if has_aliases else None
    return LocalData(Rows(read(schema.ENTITIES, ENTITY_COLUMNS), stored(schema.ENTITIES),
                          ENTITY_STORED),
                     Rows(read(schema.RELATIONSHIPS, RELATIONSHIP_COLUMNS),
                          stored(schema.RELATIONSHIPS), RELATIONSHIP_STORED),
                     Rows(claims),
                     RowsById(read(schema.TEXT_UNITS, ["id", "human_readable_id", "n_tokens"]),
                              stored(schema.TEXT_UNITS), ("text",)),
                     RowsById(read(schema.COMMUNITY_REPORTS, REPORT_COLUMNS),
                              stored(schema.COMMUNITY_REPORTS), REPORT_TEXTS),
                     read(schema.COMMUNITIES, ["community", "entity_ids"]),
                     entity_vectors,
                     list(zip(aliases.column("alias").to_pylist(),
                              aliases.column("entity_id").to_pylist())) if aliases else [])
