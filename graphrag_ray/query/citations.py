"""Provenance: from what an answer cites to the rows of the index behind it.

Global answers cite reports; a report is its community's, whose entities, relationships and
text units are in the communities table, and text units name their documents. Local and basic
answers cite the records their context held; their documents come from those text units.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.query.results import Sources
from graphrag_ray.storage.row_reader import RowReader

ReadTable = Callable[[str, list[str]], pa.Table]


def _rows_where(table: pa.Table, column: str, values: list) -> pa.Table:
    return table.filter(pc.is_in(table.column(column), pa.array(values, table.column(column).type)))


def _unique(values) -> list:
    return list(dict.fromkeys(values))


def documents_of(read: ReadTable, text_unit_ids: list[str]) -> list[dict]:
    if not text_unit_ids:
        return []
    units = _rows_where(read(schema.TEXT_UNITS, ["id", "document_id"]), "id", text_unit_ids)
    document_ids = _unique(units.column("document_id").to_pylist())
    documents = _rows_where(read(schema.DOCUMENTS, ["id", "title"]), "id", document_ids)
    titles = dict(zip(documents.column("id").to_pylist(), documents.column("title").to_pylist()))
    return [{"id": d, "title": titles.get(d)} for d in document_ids]


def row_numbers(read: ReadTable, name: str, key: str, wanted: list) -> list[int]:
    """The row of each `wanted` key in table `name` (its first, in the order asked; a key
    not there is left out), found by the key column alone: the rows' other columns are then
    read by number (`OpenedIndex.rows`), not held."""
    keys = read(name, [key]).column(key)
    found = pc.index_in(pa.array(wanted, keys.type), value_set=keys).to_pylist()
    return [row for row in found if row is not None]


def sources_of_reports(read: ReadTable, stored: Callable[[str], RowReader],
                       communities: list[int], level: int | None = None) -> Sources:
    """Reports -> their communities -> entities, relationships, text units -> documents. The
    communities' lists are read for the cited ones only (`stored`: a table's rows by number):
    whole, they were most of a global query process's memory."""
    if not communities:
        return Sources()
    rows = stored(schema.COMMUNITIES).take(
        sorted(row_numbers(read, schema.COMMUNITIES, "community", list(set(communities)))),
        ["community", "level", "entity_ids", "relationship_ids", "text_unit_ids"])
    if level is not None:
        rows = rows.filter(pc.equal(rows.column("level"), level))
    entities, relationships, units = [], [], []
    for row in rows.to_pylist():
        entities += row["entity_ids"]
        relationships += row["relationship_ids"]
        units += row["text_unit_ids"]
    units = _unique(units)
    return Sources(reports=sorted(set(communities)), entities=_unique(entities),
                   relationships=_unique(relationships), text_units=units,
                   documents=documents_of(read, units))


def sources_of_records(read: ReadTable, records: dict[str, list]) -> Sources:
    """The records a local/basic context held, plus the documents of its text units."""
    units = list(records.get("text_units", []))
    return Sources(reports=list(records.get("reports", [])),
                   entities=list(records.get("entities", [])),
                   relationships=list(records.get("relationships", [])),
                   claims=list(records.get("claims", [])), text_units=units,
                   documents=documents_of(read, units))


def merge_sources(parts: list[Sources], read: ReadTable) -> Sources:
    merged = Sources()
    for part in parts:
        merged.reports += part.reports
        merged.entities += part.entities
        merged.relationships += part.relationships
        merged.claims += part.claims
        merged.text_units += part.text_units
    merged.reports = sorted(set(merged.reports))
    merged.entities = _unique(merged.entities)
    merged.relationships = _unique(merged.relationships)
    merged.claims = _unique(merged.claims)
    merged.text_units = _unique(merged.text_units)
    merged.documents = documents_of(read, merged.text_units)
    return merged
