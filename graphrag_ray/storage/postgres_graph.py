"""The `postgres` graph store (`output.graph_stores: [postgres]`): each published version's
entities, relationships, communities and community reports written into PostgreSQL, the
database of `vector_index.pgvector.url`, so users query the graph with SQL.

One table per index table, `graphrag_<table>`, with the index's columns (Microsoft
GraphRAG's names; lists as arrays, nested values as jsonb) and `index_version`: a version's
rows replace that version's, and the versions already written stay beside them.
"""

from __future__ import annotations

import json

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import config_from_manifest
from graphrag_ray.storage.pgvector_store import connect

TABLES = (schema.ENTITIES, schema.RELATIONSHIPS, schema.COMMUNITIES, schema.COMMUNITY_REPORTS)


def _sql_type(kind: pa.DataType) -> str:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "text"
    if pa.types.is_integer(kind):
        return "bigint"
    if pa.types.is_floating(kind):
        return "double precision"
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        inner = _sql_type(kind.value_type)
        return f"{inner}[]" if inner in ("text", "bigint", "double precision") else "jsonb"
    return "jsonb"


def _value(value, sql_type: str):
    if value is None or sql_type != "jsonb":
        return value
    from psycopg.types.json import Jsonb

    return Jsonb(json.loads(json.dumps(value, default=str)))


def _columns(connection, name: str, schema: pa.Schema) -> dict[str, str]:
    """Table `name` given (at least) the columns of `schema`; their SQL types."""
    columns = {field.name: _sql_type(field.type) for field in schema}
    for column, sql_type in columns.items():
        connection.execute(f'ALTER TABLE {name} ADD COLUMN IF NOT EXISTS "{column}" {sql_type}')
    return columns


def _write(connection, table: str, parts, version: str) -> int:
    """The index table's `parts` as `version`'s rows of `graphrag_<table>`, part by part."""
    name, written = f"graphrag_{table}", 0
    connection.execute(f"CREATE TABLE IF NOT EXISTS {name} (index_version text NOT NULL)")
    connection.execute(f"CREATE INDEX IF NOT EXISTS {name}_version ON {name} (index_version)")
    connection.execute(f"DELETE FROM {name} WHERE index_version = %s", [version])
    for part in parts:
        columns = _columns(connection, name, part.schema)
        quoted = ", ".join(f'"{column}"' for column in columns)
        with connection.cursor().copy(f"COPY {name} (index_version, {quoted}) FROM STDIN"
                                      ) as copy:
            for row in part.to_pylist():
                copy.write_row([version] + [_value(row[c], t) for c, t in columns.items()])
        written += part.num_rows
    return written


class PostgresGraphStore:
    def write(self, version) -> str:
        manifest = version.read_manifest()
        url = config_from_manifest(manifest).vector_index.pgvector.url
        written = {}
        with connect(url) as connection, connection.transaction():
            for table in TABLES:
                if version.has_table(table):
                    written[table] = _write(connection, table, version.iter_table(table),
                                            manifest.version)
        return ", ".join(f"{rows:,} {table}" for table, rows in written.items()) + \
            f" written to PostgreSQL as version {manifest.version}"
