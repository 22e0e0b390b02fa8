"""An answer's sources as the index rows they name, for `POST /v1/query`: a program that
shows citations needs the report's title and the passage's text, not only their ids.

At most `limit` rows of each kind (highest-ranked first, as the method listed them) with
the count of all; long texts are cut at `text_chars`.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.query.citations import row_numbers
from graphrag_ray.query.results import Sources
from graphrag_ray.storage.row_reader import RowReader

ReadTable = Callable[[str, list[str]], pa.Table]
StoredRows = Callable[[str], RowReader]


def rows_by_key(read: ReadTable, stored: StoredRows, name: str, key: str, wanted: list,
                columns: list[str], text_chars: int) -> list[dict]:
    """The rows of `wanted` keys (the first row of each), found by the key column alone and
    read from the index by row number: a served index never holds the passages' text."""
    if not wanted:
        return []
    found = stored(name).take(row_numbers(read, name, key, wanted), columns).to_pylist()
    for row in found:
        for column, value in row.items():
            if isinstance(value, str) and len(value) > text_chars:
                row[column] = value[:text_chars] + "…"
    return found


def resolve(read: ReadTable, stored: StoredRows, has_table: Callable[[str], bool],
            sources: Sources, limit: int = 20, text_chars: int = 2000) -> dict:
    kinds = {
        "reports": (schema.COMMUNITY_REPORTS, "community", sources.reports,
                    ["community", "level", "title", "summary", "rank"]),
        "entities": (schema.ENTITIES, "id", sources.entities,
                     ["id", "human_readable_id", "title", "type", "description"]),
        "relationships": (schema.RELATIONSHIPS, "id", sources.relationships,
                          ["id", "human_readable_id", "source", "target", "description"]),
        "claims": (schema.COVARIATES, "id", sources.claims,
                   ["id", "human_readable_id", "type", "description", "subject_id",
                    "object_id", "status"]),
        "text_units": (schema.TEXT_UNITS, "id", sources.text_units,
                       ["id", "human_readable_id", "text", "document_id"]),
    }
    resolved = {}
    for kind, (table, key, ids, columns) in kinds.items():
        shown = list(dict.fromkeys(ids))[:limit]
        rows = rows_by_key(read, stored, table, key, shown, columns, text_chars) if (
            shown and has_table(table)) else []
        resolved[kind] = {"total": len(set(ids)), "rows": rows}
    resolved["documents"] = {"total": len(sources.documents), "rows": sources.documents[:limit]}
    return resolved
