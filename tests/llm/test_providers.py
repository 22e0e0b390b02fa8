"""A model provider plugs in as one module and one registration (`llm/providers.py`): the
test LLM as an out-of-tree provider (`graphrag_testkit.in_process`, named module:attribute,
no HTTP, no api_base) builds an index and answers its queries; a registered name works
alike; an unknown one is a one-line config error."""

import pytest

from graphrag_ray import GraphIndex
from graphrag_ray.config import load_config
from graphrag_ray.errors import ConfigError
from graphrag_ray.index.build import build_index
from graphrag_ray.llm import providers
from graphrag_ray.llm.client import ChatClient
from graphrag_testkit import in_process, numpy_store

PLUGIN = "graphrag_testkit.in_process:provider"


def _plugin_config(engine: str):
    return load_config(None, [
        "extraction.method=llm", f"llm.provider={PLUGIN}", "llm.model=plugin-model",
        f"embeddings.provider={PLUGIN}", "embeddings.model=plugin-embedding",
        "embeddings.dimensions=64", f"runtime.engine={engine}", "extraction.max_gleanings=0"])


def test_an_out_of_tree_provider_builds_and_answers(carol_excerpt, tmp_path):
    """With an out-of-tree vector store too: nothing of OpenAI's or Lance's in the build."""
    config = _plugin_config("local")
    config.vector_index.store = "graphrag_testkit.numpy_store:store"
    config.vector_index.ann_min_rows = 1
    searches = numpy_store.store.searches
    in_process.CALLS.clear()
    manifest = build_index(str(carol_excerpt), str(tmp_path / "index"), config,
                           progress=lambda _: None)
    assert manifest.tables["entities"] > 10 and manifest.tables["community_reports"] > 0
    assert manifest.embeddings.method == "api" and manifest.embeddings.dimensions == 64
    assert {"extract_graph", "community_report", "embeddings"} <= set(in_process.CALLS)
    assert manifest.llm_usage.total.calls == len(in_process.CALLS)
    index = GraphIndex.open(str(tmp_path / "index"))
    for method in ("global", "local", "basic"):
        result = index.search(method, "Who is Scrooge?")
        assert result.answer.strip(), method
    assert numpy_store.store.searches > searches
    assert {e["store"] for e in manifest.vector_stores.values()} == {config.vector_index.store}
    # A question was embedded through the plugin too, and streaming fell back to one piece.
    assert in_process.CALLS.count("embeddings") > manifest.llm_usage.stages["embed"].calls
    pieces = list(ChatClient(config.llm).stream(
        [{"role": "user", "content": "Say hello."}], max_tokens=20))
    assert len(pieces) == 1 and pieces[0]


def test_a_registered_name_and_an_unknown_one(monkeypatch):
    monkeypatch.setitem(providers.PROVIDERS, "canned", in_process.provider)
    config = load_config(None, ["llm.provider=canned", "llm.model=m"]).llm
    assert ChatClient(config).complete([{"role": "user", "content": "Hi."}], max_tokens=20)
    with pytest.raises(ConfigError, match="unknown provider 'nope': known ones are .*openai"):
        ChatClient(load_config(None, ["llm.provider=nope"]).llm)
    with pytest.raises(ConfigError, match="cannot be loaded"):
        ChatClient(load_config(None, ["llm.provider=no_such_module:make"]).llm)


@pytest.mark.slow  # Ray workers
def test_ray_workers_load_the_provider_by_its_name(ray_session, carol_excerpt, tmp_path):
    """Named module:attribute, the provider is imported in every worker: the same index."""
    local = build_index(str(carol_excerpt), str(tmp_path / "local"), _plugin_config("local"),
                        progress=lambda _: None)
    on_ray = build_index(str(carol_excerpt), str(tmp_path / "ray"), _plugin_config("ray"),
                         progress=lambda _: None)
    assert on_ray.tables == local.tables
    assert on_ray.llm_usage.total.calls == local.llm_usage.total.calls
