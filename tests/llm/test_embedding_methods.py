"""An offline embedding method plugs in as one module and one name
(`llm/embedding_methods.py`): an out-of-tree method (`graphrag_testkit.trigram_embedder`,
named module:attribute or registered) makes a build's vectors, is recorded in the manifest,
embeds the questions of every vector-reading method and an update's new texts; the two that
ship are registered ones; an unknown name is a one-line error before any work."""

import pytest

from graphrag_ray import GraphIndex
from graphrag_ray.config import EmbeddingsConfig, load_config
from graphrag_ray.errors import ConfigError
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_ray.llm.embedding_methods import (EMBEDDING_METHODS, Embedder,
                                                register_embedding_method, vectors_model)
from graphrag_ray.llm.embeddings import HASHING_MODEL, hashing_embed
from graphrag_testkit import trigram_embedder

NAME = "graphrag_testkit.trigram_embedder:method"


def test_an_out_of_tree_method_makes_builds_updates_and_questions(carol_excerpt, tmp_path):
    config = load_config(None, ["runtime.engine=local", f"embeddings.method={NAME}",
                                "embeddings.options.dimensions=48"])
    index = tmp_path / "index"
    manifest = build_index(str(carol_excerpt), str(index), config, progress=lambda _: None)
    assert (manifest.embeddings.method, manifest.embeddings.model) == (NAME, "trigrams-48")
    assert manifest.embeddings.dimensions == 48
    opened = GraphIndex.open(str(index))
    assert opened.embedder.method == NAME and opened.embed(["Scrooge"]).shape == (1, 48)
    before = trigram_embedder.method.texts
    for method in ("local", "basic", "drift"):
        assert opened.search(method, "Who is Scrooge?").answer
    assert trigram_embedder.method.texts > before
    (carol_excerpt / "again.txt").write_text("Marley's ghost visits Bob Cratchit in London.")
    before = trigram_embedder.method.texts
    updated = update_index(str(index), str(carol_excerpt), config, progress=lambda _: None)
    assert updated.embeddings.model == "trigrams-48"
    assert trigram_embedder.method.texts > before


def test_a_registered_name_and_the_shipped_methods():
    register_embedding_method("trigrams", trigram_embedder.method)
    try:
        config = EmbeddingsConfig(method="trigrams", options={"dimensions": 16})
        assert Embedder(config).embed(["a", "b", "a"]).shape == (3, 16)
        assert vectors_model(config, "trigrams") == "trigrams-16"
    finally:
        EMBEDDING_METHODS.pop("trigrams")
    config = EmbeddingsConfig(method="hashing", hashing_dimensions=64)
    vectors = Embedder(config).embed(["Scrooge's counting-house", "Marley"])
    assert (vectors == hashing_embed(["Scrooge's counting-house", "Marley"], 64)).all()
    assert vectors_model(config, "hashing") == HASHING_MODEL
    assert vectors_model(config, "api") == config.model


def test_an_unknown_method_is_one_line_before_any_work(carol_excerpt, tmp_path):
    config = load_config(None, ["runtime.engine=local", "embeddings.method=nope"])
    with pytest.raises(ConfigError, match="unknown embedding method 'nope': known ones are "
                                          "hashing, local"):
        build_index(str(carol_excerpt), str(tmp_path / "index"), config,
                    progress=lambda _: None)
    assert not (tmp_path / "index").exists()
    with pytest.raises(ConfigError, match="reserved"):
        register_embedding_method("api", trigram_embedder.method)
