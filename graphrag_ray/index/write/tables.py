"""The writing stages: the index tables other than the embeddings, in parts, into the staged
version. Entities and relationships are joined with their description text by workers
(`element_tables`); documents and text units stream from the work area piece by piece
(`documents_and_text_units`), or, in an update, from the previous version's parts
(`carried_tables`)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.grouped import ranges
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.graph.communities import Community, edges_by_community
from graphrag_ray.index.elements import element_id
from graphrag_ray.index.graph.stage import Graph, with_layout
from graphrag_ray.index.graph.unit_rows import UNIT_IDS, UNIT_ROWS
from graphrag_ray.index.write.carried_tables import (
    CarriedTables, carry_documents_and_text_units)
from graphrag_ray.index.write.documents_and_text_units import write_documents_and_text_units
from graphrag_ray.index.write.element_tables import CarriedElements, write_element_tables
from graphrag_ray.index.write.kept_communities import community_title, link_kept_communities
from graphrag_ray.storage import IndexVersion


class CommunitiesTable:
    """The communities table, written by a thread from the moment the communities are
    found, while the reports are made (its lists are gathered in numpy and Arrow, which let
    go of the interpreter, while the driver's other core would idle). An update whose merge knows
    what it
    touched links the previous parts whose rows are unchanged (`kept_communities`) and
    writes the other rows after them. `rows()` waits for it."""

    def __init__(self, ctx: BuildContext, graph: Graph, communities: list[Community],
                 previous: IndexVersion | None = None):
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="communities-table")
        # (the graph's tables as they are now: the layout adds columns meanwhile)
        self._written = self._thread.submit(
            self._write, ctx, communities, (graph.entities, graph.relationships,
                                            graph.endpoints, graph.unit_ids),
            graph.touched, previous if graph.touched is not None else None)

    @staticmethod
    def _write(ctx: BuildContext, communities: list[Community], structure: tuple,
               touched: np.ndarray | None, previous: IndexVersion | None) -> int:
        started = time.perf_counter()
        ctx.stage_starts["communities_table"] = round(started - ctx.created, 3)
        served, first_part = link_kept_communities(
            previous, ctx.staged, communities, structure[0].column("id").combine_chunks(),
            touched) if previous is not None else (set(), 0)
        written = [c for c in communities if c.id not in served]
        pieces = communities_tables(written, *structure) if written or not served \
            else iter(())
        rows = ctx.staged.write_stream(schema.COMMUNITIES, pieces,
                                       ctx.config.output.rows_per_part, first_part=first_part)
        ctx.timings["communities_table"] = round(time.perf_counter() - started, 3)
        return rows + len(served)

    def rows(self) -> int:
        """The rows written (the thread's exception, if it failed)."""
        try:
            return self._written.result()
        finally:
            self._thread.shutdown()

    def close(self) -> None:
        """Waits for the thread (a failed build removes the version it writes into)."""
        self._thread.shutdown(wait=True)


def write_graph_tables(ctx: BuildContext, graph: Graph, communities_table: CommunitiesTable,
                       reports: pa.Table, reports_first_part: int, extraction: pa.Table,
                       pool: WorkerPool,
                       carried: CarriedTables | None = None,
                       elements: CarriedElements | None = None) -> dict[str, int]:
    """Entities, relationships, documents, text units, covariates, entity aliases and
    reports written, and the communities table's writing (`CommunitiesTable`) waited for
    (none is held for later: on a 100M-token index the communities and reports tables were
    a gigabyte of the driver until the end); an update's documents and text units from the
    previous version's (`carried`), and its unchanged entities and relationships served by
    the previous version's parts (`elements`), and its reports after the previous
    version's parts it linked (`reports_first_part`, `kept_reports.link_kept_reports`).
    Returns the row count of each table."""
    rows_per_part = ctx.config.output.rows_per_part
    entities = finalize_entities(with_layout(graph))
    relationships = finalize_relationships(graph.relationships)
    with ctx.stage("write_entities_and_relationships"):
        counts = write_element_tables(ctx.staged, entities, relationships, graph.addresses,
                                      pool, rows_per_part, ctx.work_url, graph.unit_ids,
                                      elements)
    with ctx.stage("write_documents_and_text_units"):
        write = partial(carry_documents_and_text_units, carried=carried,
                        changed=_changed_elements(graph)) if carried \
            else write_documents_and_text_units
        counts.update(write(ctx.staged, ctx.work_url, extraction=extraction, entities=entities,
                            relationships=relationships, claims=graph.claims,
                            rows_per_part=rows_per_part))
    if ctx.config.claims.enabled:
        counts[schema.COVARIATES] = graph.claims.num_rows
    if ctx.config.resolution.enabled:
        ctx.staged.write_table(schema.ENTITY_ALIASES, graph.aliases, rows_per_part)
        counts[schema.ENTITY_ALIASES] = graph.aliases.num_rows
    with ctx.stage("write_communities_and_reports"):
        ctx.staged.write_table(schema.COMMUNITY_REPORTS, reports,
                               min(rows_per_part, REPORT_ROWS_PER_PART), reports_first_part)
        counts[schema.COMMUNITIES] = communities_table.rows()
        counts[schema.COMMUNITY_REPORTS] = counts[schema.COMMUNITIES]  # (one report each)
    return counts


# The final tables' columns but the text, which the writers join, and the text units' ids,
# which they write for the driver's numbers (`element_tables`).
ENTITY_STRUCTURE = [UNIT_ROWS if c == UNIT_IDS else c for c in schema.ENTITY_COLUMNS
                    if c not in ("description", "descriptions")]
RELATIONSHIP_STRUCTURE = [UNIT_ROWS if c == UNIT_IDS else c for c in schema.RELATIONSHIP_COLUMNS
                          if c not in ("description", "descriptions")]


def _changed_elements(graph: Graph) -> tuple[np.ndarray, np.ndarray] | None:
    """Per entity and relationship row, whether an update's merge touched it (a relationship:
    an end), when the merge knows (`Graph.touched`) and no claims are kept (their ids are
    their rows' numbers, which any change moves)."""
    if graph.touched is None or graph.claims.num_rows:
        return None
    touched = np.asarray(graph.touched, dtype=bool)
    sources, targets = graph.endpoints
    return touched, touched[sources] | touched[targets]


def finalize_entities(entities: pa.Table) -> pa.Table:
    n = entities.num_rows
    for name in ("x", "y"):  # the layout's, or none (`layout.enabled: false` in a caller)
        if name not in entities.column_names:
            entities = entities.append_column(name, pa.array([0.0] * n, pa.float64()))
    return entities.select(ENTITY_STRUCTURE)


def finalize_relationships(relationships: pa.Table) -> pa.Table:
    return relationships.select(RELATIONSHIP_STRUCTURE)



# Rows per part of the reports table: an update links the parts most of whose reports it
# keeps (`kept_reports.link_kept_reports`), so the reports it writes again are its changes
# and the few parts they fill past `LEFT_OUT_SHARE`.
REPORT_ROWS_PER_PART = 8_192
# Communities per piece of the communities table: its text-unit lists at once are most of a
# large index's driver, a piece of them is not.
COMMUNITIES_PER_PIECE = 10_000


def communities_tables(communities: list[Community], entities: pa.Table,
                       relationships: pa.Table, endpoints: tuple[np.ndarray, np.ndarray],
                       unit_ids: pa.Array):
    """The communities table, `COMMUNITIES_PER_PIECE` rows at a time (at least one piece).
    `unit_ids`: the text unit ids the relationships' `unit_rows` count in."""
    entity_ids = entities.column("id").combine_chunks()
    first_members = entity_ids.to_pylist()
    edges_inside = edges_by_community(communities, *endpoints, entities.num_rows)
    relationship_ids = relationships.column("id").combine_chunks()
    edge_units = EdgeUnits(relationships.column(UNIT_ROWS), unit_ids)
    for start in range(0, max(1, len(communities)), COMMUNITIES_PER_PIECE):
        yield communities_table(communities[start:start + COMMUNITIES_PER_PIECE], entity_ids,
                                first_members, relationship_ids, edge_units, edges_inside)


def communities_table(communities: list[Community], entity_ids: pa.Array,
                      first_members: list[str], relationship_ids: pa.Array,
                      edge_units: EdgeUnits, edges_inside: dict[int, np.ndarray]
                      ) -> pa.Table:
    """One row per community: its members, the relationships inside it and their text units
    (each once, in the order the relationships give them). The lists are gathered in Arrow
    and numpy: as Python lists of strings, a 100M-token index's were gigabytes."""
    empty = np.zeros(0, dtype=np.int64)
    inside = [edges_inside.get(community.id, empty) for community in communities]
    today = datetime.now(timezone.utc).date().isoformat()
    table = pa.table({
        "id": pa.array([element_id("community", str(c.level), str(c.id),
                                   *[first_members[m] for m in c.members[:50]])
                        for c in communities], pa.string()),
        "human_readable_id": pa.array([c.id for c in communities], pa.int64()),
        "community": pa.array([c.id for c in communities], pa.int64()),
        "level": pa.array([c.level for c in communities], pa.int64()),
        "parent": pa.array([c.parent for c in communities], pa.int64()),
        "children": pa.array([c.children for c in communities], pa.list_(pa.int64())),
        "title": pa.array([community_title(c) for c in communities], pa.string()),
        "entity_ids": gathered_lists(entity_ids, [c.members for c in communities]),
        "relationship_ids": gathered_lists(relationship_ids, inside),
        "text_unit_ids": edge_units.distinct(inside),
        "period": pa.array([today] * len(communities), pa.string()),
        "size": pa.array([len(c.members) for c in communities], pa.int64()),
    })
    return table.select(schema.COMMUNITY_COLUMNS)


def gathered_lists(values: pa.Array, groups: list[np.ndarray]) -> pa.ListArray:
    """A list per group: `values` at the group's positions."""
    lengths = np.array([len(g) for g in groups], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    positions = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
    return pa.ListArray.from_arrays(pa.array(offsets), values.take(pa.array(positions)))


class EdgeUnits:
    """Each relationship's text units (`unit_rows`: rows of `unit_ids`), for every piece of
    the communities table."""

    def __init__(self, edge_units: pa.ChunkedArray, unit_ids: pa.Array):
        lists = edge_units.combine_chunks()
        self.codes = pc.list_flatten(lists).to_numpy().astype(np.int64)
        self.dictionary = unit_ids
        offsets = lists.offsets.to_numpy().astype(np.int64)
        self.offsets = offsets - offsets[0]

    def distinct(self, groups: list[np.ndarray]) -> pa.ListArray:
        """Per group of edges: their text units, each once, in first-seen order."""
        edges = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
        group_of = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
        per_edge = self.offsets[edges + 1] - self.offsets[edges]
        units = self.codes[ranges(self.offsets[edges], per_edge)]
        group_of = np.repeat(group_of, per_edge)
        _, first = np.unique(group_of * max(1, len(self.dictionary)) + units, return_index=True)
        kept = np.sort(first)
        offsets = np.searchsorted(group_of[kept], np.arange(len(groups) + 1)).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets),
                                        self.dictionary.take(pa.array(units[kept])))
