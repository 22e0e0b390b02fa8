"""An embeddings table's approximate nearest-neighbour index, in Lance, beside the index.

Brute force (`query/vectors.VectorTable`) holds a table's vectors in memory and reads them
all for every question: at a few million vectors that is gigabytes and a second a question.
Past `vector_index.ann_min_rows` rows a table also gets a Lance dataset (id, digest, vector)
with an IVF index, searched on disk or object storage: a question reads a few partitions.
Lance is what Microsoft GraphRAG stores its vectors in by default (LanceDB is built on it);
it reads and writes `s3://`, `gs://`, `az://` and local paths, and keeps versions.

    <index url>/vectors/<table>.lance    one dataset per table, shared by the index's versions

A build or an update makes the dataset hold exactly its version's embeddings table
(`sync_vectors`): rows whose vector changed (digest) or went are deleted, new ones appended,
the index extended with them (or trained again once most rows postdate its training). The
index version's manifest names the Lance version it was built with, and a query opens that
one, so an older index version still searches its own vectors. Lance versions that no kept
index version names are removed by `forget_versions_before` (`graphrag-ray prune`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.config import VectorIndexConfig
from graphrag_ray.errors import GraphRagError

STORE_FOLDER = "vectors"
# Lance logs to stderr from Rust; its warnings (k-means on repeated vectors) are not the
# user's to read. An environment that sets LANCE_LOG keeps its own.
os.environ.setdefault("LANCE_LOG", "error")
# What Lance's object store reads a URL with (local paths have no scheme).
_LANCE_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "file")
_TRAINED_ROWS = "graphrag_ray.trained_rows"  # the dataset's config: rows the index was trained on


def lance_uri(index_url: str, table: str) -> str | None:
    """Where table `table`'s dataset lives for the index at `index_url`; None where Lance
    cannot reach the index (memory://, http://): those tables stay brute force."""
    scheme = index_url.split("://", 1)[0] if "://" in index_url else ""
    if scheme and scheme not in _LANCE_SCHEMES:
        return None
    base = index_url.rstrip("/")
    if scheme == "file":
        base = base[len("file://"):]
    return f"{base}/{STORE_FOLDER}/{table}.lance"


def lance_options(index_url: str, fsspec_options: dict | None = None) -> dict[str, str]:
    """Lance's storage options for the index's object store, from what fsspec was given
    (`key`, `secret`, `endpoint_url` or `client_kwargs.endpoint_url`) and the environment
    (AWS_ENDPOINT_URL: an S3-compatible server). Credentials are passed through, never
    written anywhere."""
    if not index_url.startswith(("s3://", "s3a://")):
        return {}
    given = dict(fsspec_options or {})
    endpoint = (given.get("endpoint_url") or (given.get("client_kwargs") or {}).get(
        "endpoint_url") or os.environ.get("AWS_ENDPOINT_URL")
        or os.environ.get("AWS_ENDPOINT_URL_S3"))
    options: dict[str, str] = {}
    if endpoint:
        options["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            options["allow_http"] = "true"
    if given.get("key"):
        options["aws_access_key_id"] = given["key"]
    if given.get("secret"):
        options["aws_secret_access_key"] = given["secret"]
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    options["aws_region"] = region or "us-east-1"
    return options


def _lance():
    """pylance, imported where a table is large enough to need it (a 200 MB package)."""
    try:
        import lance
    except ImportError as exc:  # installed with graphrag-ray; a trimmed environment may lack it
        raise GraphRagError("approximate vector search needs pylance (pip install pylance); "
                            "or set vector_index.ann_min_rows above the table's rows") from exc
    return lance


def vector_matrix(vectors: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An embeddings table's `vector` column (lists of floats) as a float32 matrix, one row
    per vector ((0, 0) when empty). Filled chunk by chunk: the vectors exist once more, not
    twice (an index's vectors are hundreds of megabytes)."""
    chunks = [c for c in (vectors.chunks if isinstance(vectors, pa.ChunkedArray) else [vectors])
              if len(c)]
    if not chunks:
        return np.zeros((0, 0), np.float32)
    width = len(chunks[0][0])
    matrix = np.empty((sum(len(c) for c in chunks), width), np.float32)
    start = 0
    for chunk in chunks:
        matrix[start:start + len(chunk)] = pc.list_flatten(chunk).to_numpy(
            zero_copy_only=False).reshape(len(chunk), width)
        start += len(chunk)
    return matrix


def vector_digests(vectors: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """(a 64-bit digest per vector, the vectors as a float32 matrix): a row whose vector did
    not change keeps its digest, so an update rewrites only what changed. The digest is a
    multiply-add hash of the vector's bits, read as 64-bit words (two floats each), with
    fixed odd 64-bit keys, vectorized: for a vector to change and keep its digest, its
    changes would have to cancel modulo 2^64 under random keys. (Faster than hashing each row's
    bytes, or widening every 32-bit word
    first.)"""
    matrix = vector_matrix(vectors)
    if not matrix.size:
        return pa.array([], pa.int64()), matrix
    words = matrix if matrix.shape[1] % 2 == 0 else np.concatenate(
        [matrix, np.zeros((len(matrix), 1), np.float32)], axis=1)
    words = np.ascontiguousarray(words).view(np.uint64)
    keys = np.random.default_rng(words.shape[1]).integers(
        1, 2 ** 63, words.shape[1], dtype=np.uint64) * 2 + 1
    with np.errstate(over="ignore"):  # arithmetic modulo 2^64 is the point
        digests = ((words + np.uint64(0x9E3779B97F4A7C15)) * keys).sum(axis=1,
                                                                        dtype=np.uint64)
    return pa.array(digests.view(np.int64), pa.int64()), matrix


def _store_schema(width: int) -> pa.Schema:
    return pa.schema([("id", pa.string()), ("digest", pa.int64()),
                      ("vector", pa.list_(pa.float32(), width))])


def _store_rows(ids: pa.Array, digests: pa.Array, matrix: np.ndarray) -> pa.Table:
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1), pa.float32()),
                                                matrix.shape[1])
    return pa.Table.from_arrays([ids, digests, vectors], schema=_store_schema(matrix.shape[1]))


@dataclass
class SyncFigures:
    """What `sync_vectors` did, for the manifest (`vector_stores`)."""
    version: int  # the Lance version this index version searches
    rows: int
    added: int
    deleted: int
    rewritten: bool  # written whole (first time, new dimensions, most rows changed)
    kept: int  # rows an update carried, taken as the dataset holds them (not read again)
    trained: bool  # the IVF index trained (again) rather than extended
    index_type: str
    seconds: float
    # Of which: digests compared (the table read once), rows written (read again, deleted,
    # appended), the IVF index trained or extended.
    compare_s: float
    write_s: float
    index_s: float

    def as_json(self, table: str) -> dict:
        return {"store": "lance", "path": f"{STORE_FOLDER}/{table}.lance",
                "version": self.version, "rows": self.rows, "added": self.added,
                "deleted": self.deleted, "rewritten": self.rewritten, "kept": self.kept,
                "trained": self.trained,
                "index_type": self.index_type, "seconds": round(self.seconds, 2),
                "compare_s": round(self.compare_s, 2), "write_s": round(self.write_s, 2),
                "index_s": round(self.index_s, 2)}


@dataclass(frozen=True)
class KeptVectors:
    """Ids whose vectors an update carried unchanged from the previous index version, whose
    dataset version is `version`: where that is still the dataset's latest, their rows (and
    digests) are in it already, and their vectors are neither read nor digested again."""
    ids: pa.Array
    version: int


def sync_vectors(uri: str, options: dict[str, str],
                 parts: Callable[[pa.Array | None], Iterator[pa.Table]],
                 config: VectorIndexConfig, kept: KeptVectors | None = None) -> SyncFigures:
    """Make the dataset at `uri` hold exactly the rows of `parts(None)` (id, vector),
    indexed; `parts(ids)` leaves out the rows of `ids` (a part holding nothing else need
    not be read). The parts are read twice (digests first, then the rows to add), a part at
    a time: the driver holds ids and digests, never the vectors of the whole table. `kept`:
    rows known to be in the dataset as they are (an update's carried vectors)."""
    lance = _lance()
    started = time.perf_counter()
    existing = _open_latest(lance, uri, options)
    new, width, skip = _digested(uri, existing, parts, kept)
    dataset = existing
    if dataset is not None and dataset.schema.field("vector").type.list_size != width:
        dataset = None  # other embeddings settings: the old vectors are no use
    old = (dataset.to_table(columns=["id", "digest"]) if dataset is not None
           else new.slice(0, 0))
    joined = new.join(old, keys="id", join_type="full outer", right_suffix="_old")
    changed = pc.fill_null(pc.not_equal(joined.column("digest"), joined.column("digest_old")),
                           True)
    added = joined.filter(pc.and_(pc.is_valid(joined.column("digest")), changed)).column("id")
    deleted = joined.filter(pc.and_(pc.is_valid(joined.column("digest_old")), changed)) \
        .column("id")
    rewrite = dataset is None or len(deleted) > old.num_rows // 2
    compared = time.perf_counter()

    wanted = None if rewrite else pa.chunked_array(added).combine_chunks()

    def rows() -> Iterator[pa.RecordBatch]:
        for part in parts(None if rewrite else skip):
            if wanted is not None:
                part = part.filter(pc.is_in(part.column("id"), value_set=wanted))
            if part.num_rows:
                digests, matrix = vector_digests(part.column("vector"))
                yield from _store_rows(part.column("id").combine_chunks(), digests,
                                       matrix).to_batches()

    reader = pa.RecordBatchReader.from_batches(_store_schema(width), rows())
    if rewrite:
        dataset = lance.write_dataset(reader, uri,
                                      mode="create" if existing is None else "overwrite",
                                      storage_options=options or None)
    else:
        for start in range(0, len(deleted), 1000):
            chunk = deleted.slice(start, 1000).to_pylist()
            dataset.delete("id IN (" + ", ".join(_quoted(i) for i in chunk) + ")")
        if len(added):
            dataset = lance.write_dataset(reader, uri, mode="append",
                                          storage_options=options or None)
    written = time.perf_counter()
    train = _indexed(dataset, config, rewrite, new.num_rows, bool(len(added) or len(deleted)))
    dataset = _open_latest(lance, uri, options)
    done = time.perf_counter()
    return SyncFigures(version=dataset.version, rows=new.num_rows,
                       added=new.num_rows if rewrite else len(added),
                       deleted=0 if rewrite else len(deleted), rewritten=rewrite,
                       kept=0 if rewrite or skip is None else len(skip),
                       trained=train, index_type=config.lance.index_type,
                       seconds=done - started, compare_s=compared - started,
                       write_s=written - compared, index_s=done - written)


def _digested(uri: str, existing, parts: Callable[[pa.Array | None], Iterator[pa.Table]],
              kept: KeptVectors | None) -> tuple[pa.Table, int, pa.Array | None]:
    """Every row's (id, digest), the vectors' width, and the kept ids not read again."""
    pieces, width, skip = [], None, None
    if kept is not None and existing is not None and existing.version == kept.version:
        held = existing.to_table(columns=["id", "digest"])
        held = held.filter(pc.is_in(held.column("id"), value_set=kept.ids))
        if held.num_rows:
            pieces.append(held)
            skip = held.column("id").combine_chunks()
            width = existing.schema.field("vector").type.list_size
    for part in parts(skip):
        digests, matrix = vector_digests(part.column("vector"))
        if matrix.size:
            width = width or matrix.shape[1]
            if matrix.shape[1] != width:
                raise GraphRagError(f"{uri}: vectors of {width} and {matrix.shape[1]} "
                                    "dimensions in one embeddings table")
        pieces.append(pa.table({"id": part.column("id"), "digest": digests}))
    new = pa.concat_tables(pieces) if pieces else pa.table(
        {"id": pa.array([], pa.string()), "digest": pa.array([], pa.int64())})
    if width is None:
        raise GraphRagError(f"{uri}: the embeddings table is empty")
    return new, width, skip


def _indexed(dataset, config: VectorIndexConfig, rewrite: bool, rows: int,
             changed: bool) -> bool:
    """The approximate index trained again where the rows outgrew what it was trained on
    (or it is new), else brought up to date; whether it was trained."""
    trained_rows = 0 if rewrite else int(dataset.config().get(_TRAINED_ROWS, "0") or 0)
    train = rewrite or not dataset.list_indices() or \
        trained_rows < config.lance.retrain_below_share * rows
    if train:
        dataset.create_index("vector", config.lance.index_type, metric="cosine",
                             replace=True)
        dataset.update_config({_TRAINED_ROWS: str(rows)})
    elif changed:
        dataset.optimize.optimize_indices()
    return train


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _open_latest(lance, uri: str, options: dict[str, str]):
    try:
        return lance.dataset(uri, storage_options=options or None)
    except (ValueError, OSError, FileNotFoundError) as exc:
        if "not found" in str(exc).lower() or "does not exist" in str(exc).lower() or \
                isinstance(exc, FileNotFoundError):
            return None
        raise


class LanceVectors:
    """Approximate cosine search over one Lance version of a table (`VectorIndex`)."""

    def __init__(self, dataset, config: VectorIndexConfig):
        self.dataset = dataset
        self.config = config
        self.rows = dataset.count_rows()

    @classmethod
    def open(cls, uri: str, version: int, options: dict[str, str],
             config: VectorIndexConfig) -> "LanceVectors":
        return cls(_lance().dataset(uri, version=version, storage_options=options or None),
                   config)

    def __len__(self) -> int:
        return self.rows

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The `k` ids most similar to `query` (a unit vector), best first, with cosine
        similarity (ties by id, as brute force breaks them)."""
        if k <= 0 or not self.rows:
            return []
        width = self.dataset.schema.field("vector").type.list_size
        if query.shape[-1] != width:
            raise GraphRagError(f"the question's vector has {query.shape[-1]} dimensions and "
                                f"the index's {width}: query with the embeddings settings "
                                "the index was built with")
        search = {"column": "vector", "q": np.asarray(query, np.float32).reshape(-1),
                  "k": min(k, self.rows), "nprobes": self.config.lance.nprobes,
                  "metric": "cosine", "refine_factor": self.config.lance.refine_factor}
        found = self.dataset.to_table(columns=["id", "_distance"], nearest=search)
        pairs = [(i, 1.0 - float(d)) for i, d in zip(found.column("id").to_pylist(),
                                                     found.column("_distance").to_pylist())]
        return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))


def forget_versions_before(uri: str, options: dict[str, str], oldest_kept: int) -> int:
    """Remove the dataset's versions older than `oldest_kept` (the oldest one a kept index
    version searches) and the files only they used; returns the versions removed."""
    lance = _lance()
    dataset = _open_latest(lance, uri, options)
    if dataset is None:
        return 0
    versions = [v["version"] for v in dataset.versions()]
    if oldest_kept not in versions:
        return 0
    # Versions are numbered one by one: the last `latest - oldest_kept + 1` are those kept.
    dataset.cleanup_old_versions(retain_versions=dataset.latest_version - oldest_kept + 1)
    return len(versions) - len(_open_latest(lance, uri, options).versions())


class LanceStore:
    """Lance as a vector store (`storage/vector_stores.py`): a dataset per table beside the
    index, versioned, IVF-indexed."""

    def reaches(self, index_url: str) -> bool:
        return lance_uri(index_url, "_") is not None

    def sync(self, index_url: str, storage_options: dict, table: str,
             parts: Callable[[pa.Array | None], Iterator[pa.Table]], config: VectorIndexConfig,
             kept_ids: pa.Array | None, previous: dict | None) -> dict:
        kept = KeptVectors(kept_ids, int(previous["version"])) \
            if previous and kept_ids is not None else None
        return sync_vectors(lance_uri(index_url, table), lance_options(
            index_url, storage_options), parts, config, kept).as_json(table)

    def open(self, index_url: str, storage_options: dict, table: str, entry: dict,
             config: VectorIndexConfig) -> LanceVectors:
        return LanceVectors.open(lance_uri(index_url, table), int(entry["version"]),
                                 lance_options(index_url, storage_options), config)

    def forget_before(self, index_url: str, storage_options: dict, table: str,
                      oldest_kept: int, config: VectorIndexConfig | None = None) -> int:
        return forget_versions_before(lance_uri(index_url, table),
                                      lance_options(index_url, storage_options), oldest_kept)
