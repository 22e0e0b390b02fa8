"""The approximate vector index (Lance) of an embeddings table: found like brute force, kept
in step with the table by deletes and appends, each index version searching its own Lance
version, old versions forgotten by prune, and the same on S3 (moto)."""

import warnings

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from graphrag_ray.config import VectorIndexConfig
from graphrag_ray.query.vectors import VectorTable, open_vectors
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.lance_vectors import (
    LanceVectors, forget_versions_before, lance_options, lance_uri, sync_vectors)

CONFIG = VectorIndexConfig(ann_min_rows=10)


def unit_rows(rng, count: int, width: int = 64) -> np.ndarray:
    rows = rng.normal(size=(count, width)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def table(ids: list[str], vectors: np.ndarray) -> pa.Table:
    return pa.table({"id": ids, "vector": pa.array(list(vectors), pa.list_(pa.float32()))})


def parts_of(ids, vectors, size=700, read=None):
    """The table as a build writes it: parts, read again on each call, without the rows of
    the ids given (`read`: collects the ids of the rows handed out)."""
    def parts(skip=None):
        for i in range(0, len(ids), size):
            part = table(ids[i:i + size], vectors[i:i + size])
            if skip is not None:
                part = part.filter(pc.invert(pc.is_in(part.column("id"), value_set=skip)))
            if read is not None:
                read.extend(part.column("id").to_pylist())
            yield part
    return parts


def test_found_as_brute_force_finds_them_with_exact_similarities(tmp_path):
    rng = np.random.default_rng(0)
    # Clustered, as texts' vectors are: 40 topics, 4,000 vectors.
    centres = unit_rows(rng, 40)
    vectors = centres[rng.integers(0, 40, 4000)] + 0.35 * unit_rows(rng, 4000)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"unit-{i}" for i in range(4000)]
    figures = sync_vectors(str(tmp_path / "t.lance"), {}, parts_of(ids, vectors), CONFIG)
    assert (figures.rows, figures.added, figures.rewritten, figures.trained) == \
        (4000, 4000, True, True)

    approximate = LanceVectors.open(str(tmp_path / "t.lance"), figures.version, {}, CONFIG)
    exact = VectorTable(ids, vectors)
    assert len(approximate) == len(exact) == 4000
    queries = unit_rows(np.random.default_rng(1), 30) * 0.3 + vectors[:30]
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    recall = []
    for query in queries:
        found, truth = approximate.nearest(query, 10), exact.nearest(query, 10)
        recall.append(len({i for i, _ in found} & {i for i, _ in truth}) / 10)
        scores = dict(truth)
        for unit, score in found:  # the similarity is the vectors' own, not the quantized one
            if unit in scores:
                assert score == pytest.approx(scores[unit], abs=1e-4)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert np.mean(recall) >= 0.95


def test_an_update_deletes_and_appends_and_the_old_version_still_searches_its_own(tmp_path):
    rng = np.random.default_rng(2)
    uri = str(tmp_path / "t.lance")
    ids, vectors = [f"e{i}" for i in range(3000)], unit_rows(rng, 3000)
    first = sync_vectors(uri, {}, parts_of(ids, vectors), CONFIG)

    # The next version: e0..e9 described anew, e10..e14 gone, 20 new entities.
    changed = vectors.copy()
    changed[:10] = unit_rows(rng, 10)
    new = unit_rows(rng, 20)
    ids2 = ids[:10] + ids[15:] + [f"n{i}" for i in range(20)]
    vectors2 = np.concatenate([changed[:10], changed[15:], new])
    second = sync_vectors(uri, {}, parts_of(ids2, vectors2), CONFIG)
    assert (second.rows, second.added, second.deleted) == (3015, 30, 15)
    assert not second.rewritten and not second.trained  # extended, not trained again

    now = LanceVectors.open(uri, second.version, {}, CONFIG)
    before = LanceVectors.open(uri, first.version, {}, CONFIG)
    assert now.nearest(new[3], 1)[0][0] == "n3"
    assert now.nearest(changed[4], 1)[0][0] == "e4"
    assert now.nearest(vectors[12], 1)[0][0] != "e12"  # deleted
    assert before.nearest(vectors[12], 1)[0][0] == "e12"  # the old version still has it
    assert before.nearest(vectors[4], 1)[0][0] == "e4"  # with its old vector

    # Nothing changed: nothing written, the same version searched.
    third = sync_vectors(uri, {}, parts_of(ids2, vectors2), CONFIG)
    assert (third.added, third.deleted, third.trained) == (0, 0, False)

    # Most rows new: the index is trained again on what the table now holds.
    more = [f"m{i}" for i in range(4000)]
    fourth = sync_vectors(uri, {}, parts_of(ids2 + more, np.concatenate(
        [vectors2, unit_rows(rng, 4000)])), CONFIG)
    assert fourth.trained and not fourth.rewritten and fourth.added == 4000

    # Other dimensions (another embeddings model): written whole.
    fifth = sync_vectors(uri, {}, parts_of(ids, unit_rows(rng, 3000, width=32)), CONFIG)
    assert fifth.rewritten and fifth.rows == 3000

    # Versions before the oldest one kept are forgotten; the kept one still opens.
    assert forget_versions_before(uri, {}, fourth.version) > 0
    assert LanceVectors.open(uri, fourth.version, {}, CONFIG).nearest(new[3], 1)[0][0] == "n3"
    with pytest.raises(Exception):
        LanceVectors.open(uri, first.version, {}, CONFIG)


def test_where_lance_cannot_reach_the_index_tables_stay_brute_force(tmp_path, monkeypatch):
    assert lance_uri("memory://index", "t") is None
    assert lance_uri("s3://bucket/index/", "t") == "s3://bucket/index/vectors/t.lance"
    assert lance_uri(str(tmp_path), "t") == f"{tmp_path}/vectors/t.lance"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    options = lance_options("s3://bucket/index", {"key": "id", "secret": "s"})
    assert options["aws_endpoint"] == "http://127.0.0.1:9" and options["allow_http"] == "true"
    assert (options["aws_access_key_id"], options["aws_secret_access_key"]) == ("id", "s")
    assert lance_options(str(tmp_path)) == {}


def test_an_index_whose_lance_version_is_gone_is_searched_brute_force_and_says_so(tmp_path):
    rng = np.random.default_rng(3)
    ids, vectors = [f"e{i}" for i in range(50)], unit_rows(rng, 50)
    stores = {"embeddings_x": {"version": 7}}  # no dataset was ever written there
    staged = IndexVersion(fsspec.filesystem("file"), str(tmp_path / "tables"), "", "")
    staged.write_table("embeddings_x", table(ids, vectors))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = open_vectors("embeddings_x", staged.row_reader, stores, str(tmp_path), {},
                              CONFIG)
    assert isinstance(search, VectorTable)
    assert search.nearest(vectors[5], 1)[0][0] == "e5"
    assert any("brute force" in str(w.message) for w in caught)


def test_a_vector_keeps_its_digest_until_any_of_its_floats_changes():
    from graphrag_ray.storage.lance_vectors import vector_digests

    for width in (4, 5):  # (an odd width is read with a zero float after it)
        rows = np.random.default_rng(width).random((3, width), dtype=np.float32)
        changed = rows.copy()
        changed[1, width - 1] = np.nextafter(changed[1, width - 1], 2)  # one ulp, last float
        first, _ = vector_digests(pa.array(list(rows), pa.list_(pa.float32(), width)))
        second, matrix = vector_digests(pa.array(list(changed), pa.list_(pa.float32(), width)))
        assert np.array_equal(matrix, changed)
        assert first.to_pylist()[0::2] == second.to_pylist()[0::2]
        assert first[1] != second[1] and len(set(first.to_pylist())) == 3


def test_vectors_an_update_carried_are_not_read_again(tmp_path):
    """An update names the ids whose vectors it carried from the previous version: where the
    dataset is still at that version, their rows stay as they are, unread; the dataset ends
    as a sync of the whole table would leave it."""
    from graphrag_ray.storage.lance_vectors import KeptVectors

    rng = np.random.default_rng(4)
    uri = str(tmp_path / "t.lance")
    ids, vectors = [f"e{i}" for i in range(3000)], unit_rows(rng, 3000)
    first = sync_vectors(uri, {}, parts_of(ids, vectors), CONFIG)
    changed = vectors.copy()
    changed[:10] = unit_rows(rng, 10)  # e0..e9 described anew; e10..e14 gone; 20 new
    ids2 = ids[:10] + ids[15:] + [f"n{i}" for i in range(20)]
    vectors2 = np.concatenate([changed[:10], changed[15:], unit_rows(rng, 20)])
    read: list[str] = []
    carried = pa.array(ids[15:])
    second = sync_vectors(uri, {}, parts_of(ids2, vectors2, read=read), CONFIG,
                          KeptVectors(carried, first.version))
    assert (second.rows, second.added, second.deleted, second.kept) == (3015, 30, 15, 2985)
    assert set(read) == set(ids[:10]) | {f"n{i}" for i in range(20)}  # only these read
    now = LanceVectors.open(uri, second.version, {}, CONFIG)
    assert now.nearest(changed[4], 1)[0][0] == "e4"
    assert now.nearest(vectors[500], 1)[0][0] == "e500"
    assert now.nearest(vectors[12], 1)[0][0] != "e12"
    # A dataset moved on since (another build synced it): the kept ids are not trusted.
    read.clear()
    third = sync_vectors(uri, {}, parts_of(ids2, vectors2, read=read), CONFIG,
                         KeptVectors(carried, first.version))
    assert (third.added, third.deleted) == (0, 0)
    assert len(read) == len(ids2)  # every row read for its digest
