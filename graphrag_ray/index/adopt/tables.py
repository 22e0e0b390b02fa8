"""Microsoft GraphRAG's output tables as ours. Our tables keep its table and column names, so
most columns are taken as they are (cast to our types); what differs by its version is named
here once:

- 3.x `text_units.document_id` (one document) against 2.x `document_ids` (a list);
- 3.x `documents.raw_data` against 2.x `metadata`;
- 2.x entities with `x`/`y` from its UMAP (kept) against 3.x without (laid out by us);
- reports' `findings` structs (its field order), and `full_content_json` absent in early 2.x.

Columns only we have are filled from what is there: an element's `descriptions` is its one
merged description (Microsoft keeps no per-instance list), a relationship's `instance_count`
the chunks it came from, a report's `generation` says who wrote it, text units are `ok`.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.errors import InputError

# The tables an adoption needs, and the optional one.
REQUIRED = (schema.DOCUMENTS, schema.TEXT_UNITS, schema.ENTITIES, schema.RELATIONSHIPS,
            schema.COMMUNITIES, schema.COMMUNITY_REPORTS)
OPTIONAL = (schema.COVARIATES,)
GENERATION = "llm (Microsoft GraphRAG)"

_STRINGS = pa.list_(pa.string())
_FINDING = pa.struct([("summary", pa.string()), ("explanation", pa.string())])
TYPES = {
    schema.DOCUMENTS: {"id": pa.string(), "human_readable_id": pa.int64(),
                       "title": pa.string(), "text": pa.string(), "text_unit_ids": _STRINGS,
                       "creation_date": pa.string(), "metadata": pa.string()},
    schema.TEXT_UNITS: {"id": pa.string(), "human_readable_id": pa.int64(), "text": pa.string(),
                        "n_tokens": pa.int64(), "document_ids": _STRINGS,
                        "entity_ids": _STRINGS, "relationship_ids": _STRINGS,
                        "covariate_ids": _STRINGS, "document_id": pa.string(),
                        "extraction_status": pa.string(), "extraction_error": pa.string()},
    schema.ENTITIES: {"id": pa.string(), "human_readable_id": pa.int64(), "title": pa.string(),
                      "type": pa.string(), "description": pa.string(),
                      "text_unit_ids": _STRINGS, "frequency": pa.int64(),
                      "degree": pa.int64(), "x": pa.float64(), "y": pa.float64(),
                      "descriptions": _STRINGS, "aliases": _STRINGS},
    schema.RELATIONSHIPS: {"id": pa.string(), "human_readable_id": pa.int64(),
                           "source": pa.string(), "target": pa.string(),
                           "description": pa.string(), "weight": pa.float64(),
                           "combined_degree": pa.int64(), "text_unit_ids": _STRINGS,
                           "instance_count": pa.int64(), "descriptions": _STRINGS},
    schema.COMMUNITIES: {"id": pa.string(), "human_readable_id": pa.int64(),
                         "community": pa.int64(), "level": pa.int64(), "parent": pa.int64(),
                         "children": pa.list_(pa.int64()), "title": pa.string(),
                         "entity_ids": _STRINGS, "relationship_ids": _STRINGS,
                         "text_unit_ids": _STRINGS, "period": pa.string(), "size": pa.int64()},
    schema.COMMUNITY_REPORTS: {"id": pa.string(), "human_readable_id": pa.int64(),
                               "community": pa.int64(), "level": pa.int64(),
                               "parent": pa.int64(), "children": pa.list_(pa.int64()),
                               "title": pa.string(), "summary": pa.string(),
                               "full_content": pa.string(), "rank": pa.float64(),
                               "rating_explanation": pa.string(),
                               "findings": pa.list_(_FINDING),
                               "full_content_json": pa.string(), "period": pa.string(),
                               "size": pa.int64(), "generation": pa.string()},
    schema.COVARIATES: {"id": pa.string(), "human_readable_id": pa.int64(),
                        "covariate_type": pa.string(), "type": pa.string(),
                        "description": pa.string(), "subject_id": pa.string(),
                        "object_id": pa.string(), "status": pa.string(),
                        "start_date": pa.string(), "end_date": pa.string(),
                        "source_text": pa.string(), "text_unit_id": pa.string()},
}


def format_of(tables: dict[str, pa.Table]) -> str:
    """"3.x" or "2.x", from the columns that tell them apart."""
    units = tables[schema.TEXT_UNITS].column_names
    return "2.x" if "document_ids" in units and "document_id" not in units else "3.x"


def adopted_tables(tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """Microsoft's tables (by name) -> ours, each with our columns in our order."""
    missing = [name for name in REQUIRED if name not in tables]
    if missing:
        raise InputError(f"not a Microsoft GraphRAG output: no {', '.join(missing)} table")
    out = {schema.DOCUMENTS: _documents(tables[schema.DOCUMENTS]),
           schema.TEXT_UNITS: _text_units(tables[schema.TEXT_UNITS]),
           schema.ENTITIES: _entities(tables[schema.ENTITIES]),
           schema.RELATIONSHIPS: _relationships(tables[schema.RELATIONSHIPS]),
           schema.COMMUNITIES: _communities(tables[schema.COMMUNITIES]),
           schema.COMMUNITY_REPORTS: _reports(tables[schema.COMMUNITY_REPORTS])}
    if schema.COVARIATES in tables:
        out[schema.COVARIATES] = _typed(schema.COVARIATES, tables[schema.COVARIATES], {})
    return out


def _typed(name: str, table: pa.Table, filled: dict[str, pa.Array]) -> pa.Table:
    """Our columns of table `name`: each taken from `filled`, else from `table` (cast), else
    nulls (a column an older version did not write)."""
    columns = []
    for column, kind in TYPES[name].items():
        if column in filled:
            values = filled[column]
        elif column in table.column_names:
            values = table.column(column)
            if pa.types.is_list(kind) and pa.types.is_null(values.type.value_type):
                values = pa.array([[] if v is not None else None
                                   for v in values.to_pylist()], kind)
        else:
            values = pa.nulls(table.num_rows, kind)
        columns.append(values.cast(kind))
    return pa.table(columns, names=list(TYPES[name]))


def _documents(table: pa.Table) -> pa.Table:
    source = "raw_data" if "raw_data" in table.column_names else "metadata"
    filled = {}
    if source in table.column_names:
        filled["metadata"] = pa.array([None if v is None else
                                       v if isinstance(v, str) else json.dumps(v, default=str)
                                       for v in table.column(source).to_pylist()], pa.string())
    return _typed(schema.DOCUMENTS, table, filled)


def _text_units(table: pa.Table) -> pa.Table:
    n = table.num_rows
    if "document_ids" in table.column_names:
        lists = table.column("document_ids").to_pylist()
    else:
        lists = [[d] if d is not None else [] for d in table.column("document_id").to_pylist()]
    return _typed(schema.TEXT_UNITS, table, {
        "document_ids": pa.array(lists, _STRINGS),
        "document_id": pa.array([ids[0] if ids else None for ids in lists], pa.string()),
        "extraction_status": pa.array(["ok"] * n, pa.string()),
        "extraction_error": pa.nulls(n, pa.string())})


def _entities(table: pa.Table) -> pa.Table:
    descriptions = table.column("description").to_pylist()
    return _typed(schema.ENTITIES, table, {
        "descriptions": pa.array([[d] if d else [] for d in descriptions], _STRINGS),
        "aliases": pa.array([[] for _ in descriptions], _STRINGS)})


def _relationships(table: pa.Table) -> pa.Table:
    descriptions = table.column("description").to_pylist()
    return _typed(schema.RELATIONSHIPS, table, {
        "instance_count": pc.list_value_length(table.column("text_unit_ids")).cast(pa.int64()),
        "descriptions": pa.array([[d] if d else [] for d in descriptions], _STRINGS)})


def _communities(table: pa.Table) -> pa.Table:
    filled = {}
    if "size" not in table.column_names:
        filled["size"] = pc.list_value_length(table.column("entity_ids")).cast(pa.int64())
    return _typed(schema.COMMUNITIES, table, filled)


def _reports(table: pa.Table) -> pa.Table:
    rows = table.to_pylist()
    findings = [[{"summary": f.get("summary"), "explanation": f.get("explanation")}
                 for f in row.get("findings") or []] for row in rows]
    filled = {"findings": pa.array(findings, pa.list_(_FINDING)),
              "generation": pa.array([GENERATION] * len(rows), pa.string())}
    if "full_content_json" not in table.column_names:
        filled["full_content_json"] = pa.array([json.dumps({
            "title": row.get("title"), "summary": row.get("summary"),
            "rating": row.get("rank"), "rating_explanation": row.get("rating_explanation"),
            "findings": found}, indent=4) for row, found in zip(rows, findings)], pa.string())
    return _typed(schema.COMMUNITY_REPORTS, table, filled)
