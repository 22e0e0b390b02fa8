"""The writing stages: the index tables other than the embeddings, in parts, into the staged
version. Entities and relationships are joined with their description text by workers
(`element_tables`); documents and text units stream from the work area piece by piece."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.grouped import ranges, runs_as_lists
from graphrag_ray.index.chunks.read_and_chunk import SHARED_CONTENT, stored_pieces
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.graph.communities import Community, edges_by_community
from graphrag_ray.index.graph.merge import element_id
from graphrag_ray.index.graph.stage import Graph
from graphrag_ray.index.write.element_tables import write_element_tables
from graphrag_ray.storage import IndexVersion


def write_graph_tables(ctx: BuildContext, graph: Graph, communities: list[Community],
                       reports: pa.Table, extraction: pa.Table, pool: WorkerPool
                       ) -> dict[str, int]:
    """Entities, relationships, documents, text units, covariates, entity aliases,
    communities and reports written (none is held for later: on a 100M-token index the
    communities and reports tables were a gigabyte of the driver until the end). Returns
    the row count of each table written."""
    rows_per_part = ctx.config.output.rows_per_part
    entities = finalize_entities(graph.entities)
    relationships = finalize_relationships(graph.relationships)
    with ctx.stage("write_entities_and_relationships"):
        counts = write_element_tables(ctx.staged, entities, relationships, graph.addresses,
                                      pool, rows_per_part, ctx.work_url)
    with ctx.stage("write_documents_and_text_units"):
        counts.update(write_documents_and_text_units(
            ctx.staged, ctx.work_url, extraction, entities, relationships, graph.claims,
            rows_per_part))
    if ctx.config.claims.enabled:
        counts[schema.COVARIATES] = graph.claims.num_rows
    if ctx.config.resolution.enabled:
        ctx.staged.write_table(schema.ENTITY_ALIASES, graph.aliases, rows_per_part)
        counts[schema.ENTITY_ALIASES] = graph.aliases.num_rows
    with ctx.stage("write_communities_and_reports"):
        ctx.staged.write_table(schema.COMMUNITY_REPORTS, reports, rows_per_part)
        counts[schema.COMMUNITY_REPORTS] = reports.num_rows
        counts[schema.COMMUNITIES] = ctx.staged.write_stream(
            schema.COMMUNITIES, communities_tables(communities, entities, relationships,
                                                   graph.endpoints), rows_per_part)
    return counts


# The final tables' columns but the text, which the writers join (`element_tables`).
ENTITY_STRUCTURE = [c for c in schema.ENTITY_COLUMNS if c not in ("description", "descriptions")]
RELATIONSHIP_STRUCTURE = [c for c in schema.RELATIONSHIP_COLUMNS
                          if c not in ("description", "descriptions")]


def finalize_entities(entities: pa.Table) -> pa.Table:
    n = entities.num_rows
    entities = entities.append_column("human_readable_id", pa.array(range(n), pa.int64()))
    for name in ("x", "y"):  # the layout's, or none (`layout.enabled: false` in a caller)
        if name not in entities.column_names:
            entities = entities.append_column(name, pa.array([0.0] * n, pa.float64()))
    return entities.select(ENTITY_STRUCTURE)


def finalize_relationships(relationships: pa.Table) -> pa.Table:
    n = relationships.num_rows
    relationships = relationships.append_column("human_readable_id", pa.array(range(n), pa.int64()))
    return relationships.select(RELATIONSHIP_STRUCTURE)



# Communities per piece of the communities table: its text-unit lists are most of a 100M-token
# index's driver at once (640 MB), a piece of them is not.
COMMUNITIES_PER_PIECE = 10_000


def communities_tables(communities: list[Community], entities: pa.Table,
                       relationships: pa.Table, endpoints: tuple[np.ndarray, np.ndarray]):
    """The communities table, `COMMUNITIES_PER_PIECE` rows at a time (at least one piece)."""
    entity_ids = entities.column("id").combine_chunks()
    first_members = entity_ids.to_pylist()
    edges_inside = edges_by_community(communities, *endpoints, entities.num_rows)
    relationship_ids = relationships.column("id").combine_chunks()
    edge_units = EdgeUnits(relationships.column("text_unit_ids"))
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
        "title": pa.array([f"Community {c.id}" + (" (small components sharing documents)"
                                                  if c.loose else "") for c in communities],
                          pa.string()),
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
    """Each relationship's text units as codes into one dictionary (encoded once for every
    piece of the communities table)."""

    def __init__(self, edge_units: pa.ChunkedArray):
        lists = edge_units.combine_chunks()
        encoded = pc.list_flatten(lists).dictionary_encode()
        self.codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        self.dictionary = encoded.dictionary
        self.offsets = lists.offsets.to_numpy().astype(np.int64)

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


def shared_content_links(work_url: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Repeated content is extracted in its first document only; the others that hold it
    are linked to the chunks that extracted it: chunk -> the other documents (its
    `document_ids`), document -> those chunks (its `text_unit_ids`)."""
    chunks_of: dict[str, list[str]] = defaultdict(list)
    sharers: dict[str, list[str]] = defaultdict(list)
    for part in stored_pieces(work_url, SHARED_CONTENT):
        for passage, document, chunk in zip(*(part.column(c).to_pylist() for c in (
                "passage", "document_id", "chunk_id"))):
            (chunks_of[passage] if chunk else sharers[passage]).append(chunk or document)
    documents_of: dict[str, list[str]] = defaultdict(list)
    units_of: dict[str, list[str]] = defaultdict(list)
    for passage, documents in sharers.items():
        for chunk in chunks_of.get(passage, []):
            documents_of[chunk] += [d for d in documents if d not in documents_of[chunk]]
            for document in documents:
                if chunk not in units_of[document]:
                    units_of[document].append(chunk)
    return dict(documents_of), dict(units_of)


def write_documents_and_text_units(staged: IndexVersion, work_url: str, extraction: pa.Table,
                                    entities: pa.Table, relationships: pa.Table,
                                    claims: pa.Table, rows_per_part: int) -> dict[str, int]:
    """The readers' documents and chunks, piece by piece, completed (human_readable_id, the
    elements found in each chunk, its extraction status) and written in parts: the corpus
    text is in memory one read batch at a time."""
    units = StatusRows(extraction)
    entity_ids = ElementsByUnit(entities, "text_unit_ids", units.ids)
    relationship_ids = ElementsByUnit(relationships, "text_unit_ids", units.ids)
    covariate_ids = ElementsByUnit(claims, "text_unit_id", units.ids)

    extra_documents, extra_units = shared_content_links(work_url)

    def text_units():
        next_id = 0
        for chunks in stored_pieces(work_url, "chunks"):
            rows = units.rows_of(chunks)
            documents = chunks.column("document_id")
            unit_ids = chunks.column("id")
            yield pa.table({
                "id": unit_ids,
                "human_readable_id": pa.array(range(next_id, next_id + len(rows)), pa.int64()),
                "text": chunks.column("text"), "n_tokens": chunks.column("n_tokens"),
                "document_ids": pa.array(
                    [[d] + extra_documents.get(u, []) for u, d in
                     zip(unit_ids.to_pylist(), documents.to_pylist())],
                    pa.list_(pa.string())) if extra_documents else
                pa.ListArray.from_arrays(pa.array(np.arange(len(rows) + 1, dtype=np.int32)),
                                         documents.combine_chunks()),
                "entity_ids": entity_ids.lists(rows),
                "relationship_ids": relationship_ids.lists(rows),
                "covariate_ids": covariate_ids.lists(rows),
                "document_id": documents,
                "extraction_status": units.status.take(pa.array(rows)),
                "extraction_error": units.error.take(pa.array(rows)),
            }).select(schema.TEXT_UNIT_COLUMNS)
            next_id += len(rows)

    def documents():
        next_id = 0
        for part in stored_pieces(work_url, "documents"):
            if extra_units:
                column = part.column_names.index("text_unit_ids")
                part = part.set_column(column, "text_unit_ids", pa.array(
                    [own + [u for u in extra_units.get(d, []) if u not in own]
                     for d, own in zip(part.column("id").to_pylist(),
                                       part.column("text_unit_ids").to_pylist())],
                    pa.list_(pa.string())))
            yield part.add_column(1, "human_readable_id", pa.array(
                range(next_id, next_id + part.num_rows), pa.int64())).select(
                schema.DOCUMENT_COLUMNS)
            next_id += part.num_rows

    return {schema.DOCUMENTS: staged.write_stream(schema.DOCUMENTS, documents(), rows_per_part),
            schema.TEXT_UNITS: staged.write_stream(schema.TEXT_UNITS, text_units(),
                                                   rows_per_part)}


class StatusRows:
    """The extraction's status rows (one per chunk), found for a piece of chunks by their
    `seq` (a sorted search, not a dict of every chunk id: 217k ids at 100M tokens, and a
    lookup per id per piece, were a third of the stage)."""

    def __init__(self, extraction: pa.Table):
        seq = np.asarray(extraction.column("seq").to_numpy(), dtype=np.int64)
        self.order = np.argsort(seq, kind="stable")
        self.seq = seq[self.order]
        self.ids = extraction.column("text_unit_id").combine_chunks()
        self.status = extraction.column("status").combine_chunks()
        self.error = extraction.column("error").combine_chunks()

    def rows_of(self, chunks: pa.Table) -> np.ndarray:
        """The status row of each chunk of a piece; fails if one came back without one."""
        seq = np.asarray(chunks.column("seq").to_numpy(), dtype=np.int64)
        rows, same = np.zeros(len(seq), np.int64), np.zeros(len(seq), bool)
        if len(self.seq):
            at = np.minimum(np.searchsorted(self.seq, seq), len(self.seq) - 1)
            rows = self.order[at]
            same = (self.seq[at] == seq) & pc.equal(
                self.ids.take(pa.array(rows)),
                chunks.column("id").combine_chunks()).to_numpy(zero_copy_only=False)
        if not same.all():
            raise RuntimeError(f"{int((~same).sum())} chunks came back from extraction "
                               "without a result")
        return rows


class ElementsByUnit:
    """The ids of the elements (entities, relationships, claims) found in each text unit, in
    table order, as a list column for any text units asked (by their row in `unit_ids`): the
    (unit, element) pairs sorted once by unit row, each holding its element's row, not its
    id (as a dict of Python lists of ids, a 100M-token index's were a gigabyte of the
    driver; as a dict of unit ids to runs, its build and lookups were 10 s of 30)."""

    def __init__(self, elements: pa.Table, unit_column: str, unit_ids: pa.Array):
        units = elements.column(unit_column).combine_chunks()
        self.ids = elements.column("id").combine_chunks()
        owners = np.arange(len(units))
        if pa.types.is_list(units.type):
            owners = pc.list_parent_indices(units).to_numpy()
            units = pc.list_flatten(units)
        unit_row = pc.index_in(units, value_set=unit_ids).fill_null(-1).to_numpy(
            zero_copy_only=False).astype(np.int64)
        known = unit_row >= 0  # (an element's text unit that is not in the table: none)
        order = np.argsort(unit_row[known], kind="stable")  # each unit's in table order
        self.unit_row = unit_row[known][order]
        self.rows = np.asarray(owners, dtype=np.int64)[known][order]

    def lists(self, unit_rows: np.ndarray) -> pa.ListArray:
        starts = np.searchsorted(self.unit_row, unit_rows, side="left")
        lengths = np.searchsorted(self.unit_row, unit_rows, side="right") - starts
        return runs_as_lists(self.rows, starts, lengths, self.ids)
