"""A vector store plugs in as one module and one name (`storage/vector_stores.py`): an
out-of-tree store (`graphrag_testkit.numpy_store`, named module:attribute) holds the
approximate indexes of a build, answers its questions, takes an update's version and drops
what pruning leaves no version searching; an unknown name is a one-line error."""

import shutil

import pytest

from graphrag_ray import GraphIndex
from graphrag_ray.config import load_config
from graphrag_ray.errors import ConfigError
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_ray.storage import IndexStore
from graphrag_ray.storage.vector_stores import vector_store
from graphrag_testkit import numpy_store

NAME = "graphrag_testkit.numpy_store:store"


def test_an_out_of_tree_store_holds_builds_updates_and_answers(carol_excerpt, tmp_path):
    config = load_config(None, ["runtime.engine=local", "embeddings.method=hashing",
                                f"vector_index.store={NAME}", "vector_index.ann_min_rows=1"])
    index = tmp_path / "index"
    manifest = build_index(str(carol_excerpt), str(index), config, progress=lambda _: None)
    entries = manifest.vector_stores
    assert set(entries) == {"embeddings_entity_description", "embeddings_text_unit_text",
                            "embeddings_community_full_content"}
    assert all(e["store"] == NAME and e["version"] == 1 for e in entries.values())
    before = numpy_store.store.searches
    for method in ("local", "basic", "drift"):
        assert GraphIndex.open(str(index)).search(method, "Who is Scrooge?").answer
    assert numpy_store.store.searches > before
    # An update writes the store's next version; pruning to one version drops the first.
    shutil.copy(carol_excerpt / "carol.txt", carol_excerpt / "again.txt")
    (carol_excerpt / "again.txt").write_text("Marley's ghost visits Bob Cratchit in London.")
    updated = update_index(str(index), str(carol_excerpt), config, progress=lambda _: None)
    assert {e["version"] for e in updated.vector_stores.values()} == {2}
    IndexStore(str(index)).prune(keep=1)
    files = sorted(p.name for p in (index / numpy_store.FOLDER).iterdir())
    assert files and all(name.endswith("-2.npz") for name in files)


def test_an_unknown_store_is_named():
    with pytest.raises(ConfigError, match="unknown vector store 'nope': known ones are lance"):
        vector_store("nope")
