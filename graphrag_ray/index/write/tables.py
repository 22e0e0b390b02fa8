"""The writing stages: the index tables other than the embeddings, in parts, into the staged
version. Entities and relationships are joined with their description text by workers
(`element_tables`); documents and text units stream from the work area piece by piece."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.distributed import WorkerPool
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
                                      pool, rows_per_part)
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
        for name, table in ((schema.COMMUNITY_REPORTS, reports),
                            (schema.COMMUNITIES, communities_table(
                                communities, entities, relationships, graph.endpoints))):
            ctx.staged.write_table(name, table, rows_per_part)
            counts[name] = table.num_rows
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



def communities_table(communities: list[Community], entities: pa.Table,
                      relationships: pa.Table, endpoints: tuple[np.ndarray, np.ndarray]
                      ) -> pa.Table:
    entity_ids = entities.column("id").to_pylist()
    edge_ids = relationships.column("id").to_pylist()
    edge_units = relationships.column("text_unit_ids").to_pylist()
    edges_inside = edges_by_community(communities, *endpoints, entities.num_rows)
    empty = np.zeros(0, dtype=np.int64)
    rows = []
    for community in communities:
        inside = edges_inside.get(community.id, empty).tolist()
        units = list(dict.fromkeys(u for i in inside for u in edge_units[i]))
        rows.append({
            "id": element_id("community", str(community.level), str(community.id),
                             *[entity_ids[m] for m in community.members[:50]]),
            "human_readable_id": community.id, "community": community.id,
            "level": community.level, "parent": community.parent,
            "children": community.children,
            "title": f"Community {community.id}" + (" (small components sharing documents)"
                                                     if community.loose else ""),
            "entity_ids": [entity_ids[m] for m in community.members],
            "relationship_ids": [edge_ids[i] for i in inside],
            "text_unit_ids": units,
            "period": datetime.now(timezone.utc).date().isoformat(),
            "size": len(community.members),
        })
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.string()), ("human_readable_id", pa.int64()), ("community", pa.int64()),
        ("level", pa.int64()), ("parent", pa.int64()), ("children", pa.list_(pa.int64())),
        ("title", pa.string()), ("entity_ids", pa.list_(pa.string())),
        ("relationship_ids", pa.list_(pa.string())), ("text_unit_ids", pa.list_(pa.string())),
        ("period", pa.string()), ("size", pa.int64())]))
    return table.select(schema.COMMUNITY_COLUMNS)



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
    def ids_by_unit(table: pa.Table, unit_column: str) -> dict[str, list[str]]:
        result: dict[str, list[str]] = defaultdict(list)
        for element, units in zip(table.column("id").to_pylist(),
                                  table.column(unit_column).to_pylist()):
            for unit in (units if isinstance(units, list) else [units]):
                result[unit].append(element)
        return result

    entity_ids = ids_by_unit(entities, "text_unit_ids")
    relationship_ids = ids_by_unit(relationships, "text_unit_ids")
    covariate_ids = ids_by_unit(claims, "text_unit_id")
    status = dict(zip(extraction.column("text_unit_id").to_pylist(),
                      zip(extraction.column("status").to_pylist(),
                          extraction.column("error").to_pylist())))

    extra_documents, extra_units = shared_content_links(work_url)

    def text_units():
        next_id = 0
        for chunks in stored_pieces(work_url, "chunks"):
            units = chunks.column("id").to_pylist()
            missing = [u for u in units if u not in status]
            if missing:
                raise RuntimeError(f"{len(missing)} chunks came back from extraction without "
                                   "a result")
            yield pa.table({
                "id": chunks.column("id"),
                "human_readable_id": pa.array(range(next_id, next_id + len(units)), pa.int64()),
                "text": chunks.column("text"), "n_tokens": chunks.column("n_tokens"),
                "document_ids": pa.array(
                    [[d] + extra_documents.get(u, []) for u, d in
                     zip(units, chunks.column("document_id").to_pylist())],
                    pa.list_(pa.string())),
                "entity_ids": pa.array([entity_ids.get(u, []) for u in units],
                                       pa.list_(pa.string())),
                "relationship_ids": pa.array([relationship_ids.get(u, []) for u in units],
                                             pa.list_(pa.string())),
                "covariate_ids": pa.array([covariate_ids.get(u, []) for u in units],
                                          pa.list_(pa.string())),
                "document_id": chunks.column("document_id"),
                "extraction_status": pa.array([status[u][0] for u in units], pa.string()),
                "extraction_error": pa.array([status[u][1] for u in units], pa.string()),
            }).select(schema.TEXT_UNIT_COLUMNS)
            next_id += len(units)

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
