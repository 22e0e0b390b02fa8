"""A graph store plugs in as one module and one name (`storage/graph_stores.py`): an
out-of-tree sink receives every version a build or update publishes; one that fails is a
one-line error naming the version, which stays published."""

import pytest

from graphrag_ray.config import load_config
from graphrag_ray.errors import ConfigError, GraphRagError
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_ray.storage import IndexStore
from graphrag_ray.storage.graph_stores import graph_store
from graphrag_testkit import graph_sink

NAME = "graphrag_testkit.graph_sink:sink"


def test_a_sink_receives_each_published_version(carol_excerpt, tmp_path):
    config = load_config(None, ["runtime.engine=local", "embeddings.method=hashing",
                                f"output.graph_stores=[{NAME!r}]"])
    index, said = str(tmp_path / "index"), []
    graph_sink.sink.received.clear()
    first = build_index(str(carol_excerpt), index, config, progress=said.append)
    got = graph_sink.sink.received[first.version]
    assert len(got["nodes"]) == first.tables["entities"] > 10
    assert len(got["edges"]) == first.tables["relationships"]
    assert f"graph store {NAME}: {len(got['nodes'])} nodes" in "\n".join(said)
    (carol_excerpt / "more.txt").write_text("Tiny Tim met Ebenezer Scrooge in London.")
    graph_sink.sink.fail = True
    try:
        with pytest.raises(GraphRagError, match="was published, but graph store .* failed: "
                                                "RuntimeError: the graph database refused"):
            update_index(index, str(carol_excerpt), config, progress=lambda _: None)
    finally:
        graph_sink.sink.fail = False
    assert IndexStore(index).open().version != first.version  # published all the same


def test_an_unknown_graph_store_is_named():
    with pytest.raises(ConfigError, match="unknown graph store 'neo'"):
        graph_store("neo")
