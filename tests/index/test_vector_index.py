"""The vector index stage, as a user meets it: a build past `vector_index.ann_min_rows` gets
approximate indexes that every query method searches, an update extends them (deletes and
appends, no training), prune forgets the Lance versions no kept version searches, and the
same on S3."""

import shutil

import lance
import pytest

from graphrag_ray import GraphIndex, schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_ray.query.vectors import VectorTable
from graphrag_ray.storage import IndexStore
from graphrag_ray.storage.lance_vectors import LanceVectors

from conftest import carol_input

THRESHOLD = 8
OVERRIDES = ["runtime.engine=local", f"vector_index.ann_min_rows={THRESHOLD}"]
QUESTION = "Who is Scrooge's nephew?"
METHODS = ("local", "basic", "drift", "lazy", "global")


def test_every_method_searches_the_approximate_index_and_an_update_extends_it(tmp_path):
    corpus = carol_input(tmp_path / "input", 30_000)
    index_url = str(tmp_path / "index")
    config = load_config(None, OVERRIDES)
    first = build_index(str(corpus), index_url, config, progress=lambda _: None)
    stores = first.vector_stores
    embedded = {name: rows for name, rows in first.tables.items()
                if name.startswith("embeddings_")}
    assert set(stores) == {name for name, rows in embedded.items() if rows >= THRESHOLD}
    assert schema.TEXT_UNIT_EMBEDDINGS in stores
    for name, store in stores.items():
        assert store["rows"] == first.tables[name] and store["trained"]
        assert (tmp_path / "index" / store["path"]).is_dir()

    index = GraphIndex.open(index_url)
    for name in embedded:
        assert isinstance(index.vectors(name), LanceVectors if name in stores else VectorTable)
    brute = load_config(None, ["runtime.engine=local"])
    exact = GraphIndex.open(index_url, config=brute)
    exact.manifest = exact.manifest.model_copy(update={"vector_stores": {}})
    index.warm()  # a served index holds no table searched on disk
    assert not [key for key in index._tables if key.split(":")[0] in stores]
    for method in METHODS:
        answer = index.search(method, QUESTION)
        assert answer.answer.strip() and not answer.failures, method
    # Basic search retrieves what brute force retrieves, with the same similarities.
    found = index.search("basic", QUESTION).details["scores"]
    truth = exact.search("basic", QUESTION).details["scores"]
    assert found[:5] == pytest.approx(truth[:5], abs=1e-3)

    # A document added: the update appends its vectors and deletes the changed ones.
    (corpus / "more.txt").write_text((corpus / "carol.txt").read_text()[:6000].replace(
        "Scrooge", "Ebenezer Scrooge"), encoding="utf-8")
    second = update_index(index_url, str(corpus), load_config(None, OVERRIDES),
                          progress=lambda _: None)
    units = second.vector_stores[schema.TEXT_UNIT_EMBEDDINGS]
    assert not units["rewritten"] and not units["trained"]
    # The carried text units' vectors were taken as the dataset held them, not read again.
    assert units["kept"] == first.tables[schema.TEXT_UNIT_EMBEDDINGS]
    assert units["added"] == second.tables[schema.TEXT_UNIT_EMBEDDINGS] - \
        first.tables[schema.TEXT_UNIT_EMBEDDINGS] and units["deleted"] == 0
    assert units["version"] > stores[schema.TEXT_UNIT_EMBEDDINGS]["version"]
    # Each dataset holds the table's rows, each once (the parts of carried vectors were not
    # read for others: `vector_index._parts`).
    version = IndexStore(index_url).open()
    for name, store in second.vector_stores.items():
        held = lance.dataset(str(tmp_path / "index" / store["path"]),
                             version=store["version"]).to_table(columns=["id"])
        assert sorted(held.column("id").to_pylist()) == \
            sorted(version.read_table(name, ["id"]).column("id").to_pylist()), name
    updated = GraphIndex.open(index_url)
    assert "Ebenezer" in updated.search("basic", "Ebenezer Scrooge's nephew").answer
    # The first version still searches its own vectors.
    old = GraphIndex.open(index_url, version=first.version)
    assert len(old.vectors(schema.TEXT_UNIT_EMBEDDINGS)) == first.tables[
        schema.TEXT_UNIT_EMBEDDINGS]

    # Pruning to one version forgets the Lance versions only the first one searched.
    lance_versions = tmp_path / "index" / units["path"] / "_versions"
    before = len(list(lance_versions.glob("*.manifest")))
    assert IndexStore(index_url).prune(1) == [first.version]
    assert len(list(lance_versions.glob("*.manifest"))) < before
    assert GraphIndex.open(index_url).search("local", QUESTION).answer


@pytest.mark.slow
def test_the_approximate_index_on_s3(s3_bucket, tmp_path):
    import s3fs

    corpus = carol_input(tmp_path / "input", 20_000)
    index_url = f"s3://{s3_bucket}/indexes/carol"
    manifest = build_index(str(corpus), index_url, load_config(None, OVERRIDES),
                           progress=lambda _: None)
    store = manifest.vector_stores[schema.TEXT_UNIT_EMBEDDINGS]
    fs = s3fs.S3FileSystem()
    assert fs.find(f"{s3_bucket}/indexes/carol/{store['path']}")
    index = GraphIndex.open(index_url)
    assert isinstance(index.vectors(schema.TEXT_UNIT_EMBEDDINGS), LanceVectors)
    for method in ("local", "basic", "lazy"):
        assert index.search(method, QUESTION).answer.strip(), method
    shutil.rmtree(tmp_path / "input")
