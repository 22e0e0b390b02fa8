"""PostgreSQL with pgvector as a vector store (`vector_index.store: pgvector`,
`vector_index.pgvector.url: postgresql://user@host/db`; the password from PGPASSWORD, as
libpq reads it, never in the URL: the URL is kept in the manifest).

Each embeddings table of an index is one database table, `graphrag_<table>_<hash>`: (id,
embedding, added, removed), where `added` and `removed` are the store versions a row is
searched from and until. A sync (build, update, adoption) adds the new rows and marks the
ones gone as removed at its version, so an update upserts and deletes by id while every
index version still kept searches its own rows (`added <= v AND (removed IS NULL OR removed
> v)`); pruning deletes the rows no kept version searches. From `hnsw_min_rows` live rows the
table gets an HNSW index (inner product: the vectors are unit length, so the score is the
cosine, as brute force scores it).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from graphrag_ray.config import VectorIndexConfig
from graphrag_ray.errors import ConfigError, GraphRagError
from graphrag_ray.storage.lance_vectors import vector_matrix


def connect(url: str | None):
    """A connection with pgvector's types, or a one-line error naming the server (never
    the password)."""
    if not url:
        raise ConfigError("vector_index.store is pgvector but vector_index.pgvector.url is "
                          "not set (postgresql://user@host:port/database)")
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError:
        raise GraphRagError("the pgvector store needs the postgres extra: "
                            "pip install -e \".[postgres]\"") from None
    try:
        connection = psycopg.connect(url, autocommit=False)
        with connection.transaction():
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(connection)
        return connection
    except psycopg.Error as exc:
        where = re.sub(r"//[^@/]*@", "//", url)
        raise GraphRagError(f"cannot use PostgreSQL at {where}: "
                            f"{str(exc).strip().splitlines()[0]}") from None


def table_name(index_url: str, table: str) -> str:
    digest = hashlib.sha1(f"{index_url.rstrip('/')}|{table}".encode()).hexdigest()[:12]
    return f"graphrag_{re.sub(r'[^a-z0-9_]', '_', table.lower())[:40]}_{digest}"


def _create(connection, name: str, dimensions: int) -> None:
    connection.execute(f"CREATE TABLE IF NOT EXISTS {name} (id text NOT NULL, "
                       f"embedding vector({dimensions}) NOT NULL, added integer NOT NULL, "
                       "removed integer)")
    connection.execute(f"CREATE INDEX IF NOT EXISTS {name}_live ON {name} (id) "
                       "WHERE removed IS NULL")


def _retire(connection, name: str, version: int, previous: int | None,
            kept_ids: pa.Array | None) -> None:
    """Every live row not carried from `previous` is removed at `version` (a killed sync's
    rows, added after `previous`, too)."""
    if previous is None or kept_ids is None:
        connection.execute(f"UPDATE {name} SET removed = %s WHERE removed IS NULL", [version])
        return
    connection.execute("CREATE TEMP TABLE graphrag_kept (id text) ON COMMIT DROP")
    with connection.cursor().copy("COPY graphrag_kept (id) FROM STDIN") as copy:
        for kept in kept_ids.to_pylist():
            copy.write_row((kept,))
    connection.execute(f"UPDATE {name} SET removed = %s WHERE removed IS NULL AND "
                       f"(added > %s OR NOT EXISTS (SELECT 1 FROM graphrag_kept k "
                       f"WHERE k.id = {name}.id))", [version, previous])


def _add(connection, name: str, version: int, parts: Iterator[pa.Table]) -> int:
    added = 0
    with connection.cursor().copy(
            f"COPY {name} (id, embedding, added) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["text", "vector", "int4"])
        for part in parts:
            ids = part.column("id").to_pylist()
            for row_id, vector in zip(ids, vector_matrix(part.column("vector"))):
                copy.write_row((row_id, vector, version))
            added += len(ids)
    return added


class PgvectorStore:
    """`storage/vector_stores.py`'s four calls over PostgreSQL (see the module's docstring)."""

    def reaches(self, index_url: str) -> bool:
        return True  # (the database is wherever its URL says, whatever the index's place)

    def check(self, config: VectorIndexConfig) -> None:
        connect(config.pgvector.url).close()

    def sync(self, index_url: str, storage_options: dict, table: str,
             parts: Callable[[pa.Array | None], Iterator[pa.Table]], config: VectorIndexConfig,
             kept_ids: pa.Array | None, previous: dict | None) -> dict:
        name = (previous or {}).get("table") or table_name(index_url, table)
        carried = previous is not None and kept_ids is not None
        rows = iter(parts(kept_ids if carried else None))
        first = next(rows, None)
        with connect(config.pgvector.url) as connection, connection.transaction():
            dimensions = len(first.column("vector")[0]) if first is not None and \
                first.num_rows else int((previous or {}).get("dimensions") or 1)
            _create(connection, name, dimensions)
            connection.execute(f"LOCK TABLE {name} IN EXCLUSIVE MODE")
            version = connection.execute(
                f"SELECT coalesce(max(greatest(added, coalesce(removed, 0))), 0) + 1 "
                f"FROM {name}").fetchone()[0]
            _retire(connection, name, version, int(previous["version"]) if carried else None,
                    kept_ids)
            added = _add(connection, name, version,
                         itertools.chain([first] if first is not None else [], rows))
            live = connection.execute(f"SELECT count(*) FROM {name} WHERE removed IS NULL"
                                      ).fetchone()[0]
            indexed = live >= config.pgvector.hnsw_min_rows
            if indexed:
                # (HNSW builds fast while its graph fits this memory; the default, 64 MB,
                # holds ~40k vectors of 384 dimensions.)
                connection.execute("SET LOCAL maintenance_work_mem = '512MB'")
                connection.execute(f"CREATE INDEX IF NOT EXISTS {name}_hnsw ON {name} "
                                   "USING hnsw (embedding vector_ip_ops)")
        return {"version": version, "table": name, "rows": live, "added": added,
                "dimensions": dimensions, "index": "hnsw" if indexed else "exact"}

    def open(self, index_url: str, storage_options: dict, table: str, entry: dict,
             config: VectorIndexConfig) -> PgvectorSearch:
        return PgvectorSearch(connect(config.pgvector.url), entry["table"],
                              int(entry["version"]), int(entry["rows"]),
                              config.pgvector.ef_search)

    def forget_before(self, index_url: str, storage_options: dict, table: str,
                      oldest_kept: int, config: VectorIndexConfig | None = None) -> int:
        """Deletes the rows removed at or before `oldest_kept` (no kept version sees them);
        returns how many."""
        name = table_name(index_url, table)
        with connect(config.pgvector.url if config else None) as connection, \
                connection.transaction():
            exists = connection.execute("SELECT to_regclass(%s)", [name]).fetchone()[0]
            if exists is None:
                return 0
            return connection.execute(f"DELETE FROM {name} WHERE removed IS NOT NULL AND "
                                      "removed <= %s", [oldest_kept]).rowcount


class PgvectorSearch:
    """One version's rows, searched nearest first; one connection, one query at a time."""

    def __init__(self, connection, name: str, version: int, rows: int, ef_search: int = 100):
        self.connection, self.name, self.version, self.rows = connection, name, version, rows
        self.ef_search = ef_search
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.rows

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        with self.lock, self.connection.transaction():
            # HNSW filters after its scan: a wider one, so removed rows leave k behind.
            self.connection.execute(f"SET LOCAL hnsw.ef_search = {max(self.ef_search, 4 * k)}")
            # (One sort key, the distance, or the HNSW index is not used; ties are put in
            # id order after.)
            found = self.connection.execute(
                f"SELECT id, -(embedding <#> %s) AS score FROM {self.name} WHERE added <= %s "
                "AND (removed IS NULL OR removed > %s) ORDER BY embedding <#> %s LIMIT %s",
                [vector, self.version, self.version, vector, k]).fetchall()
        return sorted(((row_id, float(score)) for row_id, score in found),
                      key=lambda pair: (-pair[1], pair[0]))

    def close(self) -> None:
        self.connection.close()
