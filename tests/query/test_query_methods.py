"""Every query method end to end over a stored index, against the test LLM server (chat,
embeddings, streaming), plus the offline methods, citations, budgets and lazy reading."""

import asyncio
import json

import fsspec

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from graphrag_ray import GraphIndex, schema
from graphrag_ray.cli import main
from graphrag_ray.errors import GraphRagError, IndexNotFoundError
from graphrag_ray.index.build import build_index
from graphrag_ray.distributed.fanout import FanOut
from graphrag_ray.query.methods import QUERY_METHODS
from graphrag_testkit.llm_server import run_test_server

from conftest import CAROL_DIR, llm_config

QUESTION = "What does Marley tell Scrooge about the chain he wears?"
METHODS = list(QUERY_METHODS)


@pytest.fixture(scope="module")
def server():
    with run_test_server() as running:
        yield running


@pytest.fixture(scope="module")
def llm_index(server, tmp_path_factory):
    text = (CAROL_DIR / "book.txt").read_text(encoding="utf-8")
    start = text.find("STAVE ONE")
    folder = tmp_path_factory.mktemp("carol")
    (folder / "carol.txt").write_text(text[start:start + 40_000], encoding="utf-8")
    out = tmp_path_factory.mktemp("index")
    config = llm_config(server, "claims.enabled=true", f"embeddings.api_base={server.url}",
                        "embeddings.model=test-embedding", "embeddings.dimensions=128",
                        "runtime.engine=local")
    manifest = build_index(str(folder), str(out), config, progress=lambda _: None)
    assert manifest.embeddings.model_dump() == {"method": "api", "model": "test-embedding",
                                                "dimensions": 128, "note": None}
    assert manifest.llm_usage.stages["embed"].calls > 0
    return out, config


@pytest.fixture(scope="module")
def offline_index(tmp_path_factory):
    out = tmp_path_factory.mktemp("offline")
    build_index(str(CAROL_DIR), str(out), llm_config_offline(), progress=lambda _: None)
    return out


def llm_config_offline():
    from graphrag_ray.config import load_config

    return load_config(None, ["runtime.engine=local"])


def _assert_sources_exist(index: GraphIndex, sources) -> None:
    def ids(name, column="id"):
        return set(index.store.read_table(name, [column]).column(column).to_pylist())

    assert set(sources.reports) <= ids(schema.COMMUNITY_REPORTS, "community")
    assert set(sources.entities) <= ids(schema.ENTITIES)
    assert set(sources.relationships) <= ids(schema.RELATIONSHIPS)
    if sources.claims:
        assert set(sources.claims) <= ids(schema.COVARIATES)
    assert set(sources.text_units) <= ids(schema.TEXT_UNITS)
    assert {d["id"] for d in sources.documents} <= ids(schema.DOCUMENTS)
    assert sources.text_units and sources.documents


@pytest.mark.parametrize("method", METHODS)
def test_each_method_answers_with_sources_that_resolve(llm_index, server, method):
    out, config = llm_index
    index = GraphIndex.open(str(out), config=config)
    before = server.stats()["requests"]
    result = index.search(method, QUESTION)
    assert result.method == method and result.answer.strip()
    assert result.llm_calls >= 1 and result.usage.calls == result.llm_calls
    assert not result.failures
    # Every LLM call and the question's embedding went to the server.
    assert server.stats()["requests"] - before >= result.llm_calls
    _assert_sources_exist(index, result.sources)


def test_local_context_holds_every_kind_of_record_within_budget(llm_index):
    out, config = llm_index
    for budget in (600, 3000):
        config = config.model_copy(deep=True)
        config.local_search.context_tokens = budget
        result = GraphIndex.open(str(out), config=config).local_search(QUESTION)
        assert 0 < result.context_tokens <= budget
    assert "MARLEY" in " ".join(result.details["matched_entities"]).upper()
    sources = result.sources
    assert sources.entities and sources.relationships and sources.text_units and sources.reports
    assert sources.claims  # the index was built with claims


def test_basic_and_drift_budgets_are_kept(llm_index):
    out, config = llm_index
    config = config.model_copy(deep=True)
    config.basic_search.context_tokens = 900
    config.drift_search.primer_context_tokens = 1200
    config.drift_search.local_context_tokens = 700
    index = GraphIndex.open(str(out), config=config)
    basic = index.basic_search(QUESTION)
    assert 0 < basic.context_tokens <= 900 and basic.details["in_context"] >= 1
    drift = index.drift_search(QUESTION)
    steps = drift.details["steps"]
    assert steps[0]["depth"] == 0 and any(s["depth"] == 1 for s in steps)
    assert len(steps) <= 1 + config.drift_search.depth * config.drift_search.follow_ups_per_step
    # primer + each follow-up's context + the reduce context, each within its budget
    assert drift.context_tokens <= 1200 + (len(steps) - 1) * 700 + \
        config.global_search.reduce_context_tokens


def test_dynamic_selection_descends_only_into_relevant_communities(llm_index):
    out, config = llm_index
    index = GraphIndex.open(str(out), config=config)
    result = index.global_search("What is the chain Marley wears made of?", dynamic=True)
    dynamic = result.details["dynamic"]
    reports = index.store.read_table(schema.COMMUNITY_REPORTS, ["community", "parent"])
    parent = dict(zip(reports.column("community").to_pylist(), reports.column("parent").to_pylist()))
    rejected = set(dynamic["rejected"])
    rated = dynamic["reports_rated"]
    assert 0 < dynamic["reports_selected"] < dynamic["reports_total"]
    assert rated < dynamic["reports_total"] and dynamic["rating_calls"] <= rated
    for community in dynamic["selected"]:
        assert parent[community] not in rejected
    assert dynamic["saved_tokens"] == dynamic["static_map_context_tokens"] - (
        dynamic["map_context_tokens"] + dynamic["rating_context_tokens"])
    assert result.details["reports_mapped"] == dynamic["reports_selected"]


def test_streaming_gives_the_same_answer_in_pieces(llm_index):
    out, config = llm_index
    index = GraphIndex.open(str(out), config=config)
    for method in ("local", "global"):
        stream = index.stream(method, QUESTION)

        async def collect():
            return [piece async for piece in stream]

        pieces = asyncio.run(collect())
        assert len(pieces) > 1
        assert "".join(pieces).strip() == stream.result.answer
        assert stream.result.answer == index.search(method, QUESTION).answer


def test_history_reaches_the_prompt(llm_index):
    out, config = llm_index
    index = GraphIndex.open(str(out), config=config)
    history = [{"role": "user", "content": "Tell me about Jacob Marley."},
               {"role": "assistant", "content": "He was Scrooge's partner."}]
    answer = index.local_search("And his chains?", history=history).answer
    assert "He was Scrooge's partner" in answer


def test_ray_and_asyncio_fan_outs_give_the_same_answers(llm_index, ray_session):
    out, config = llm_index
    asyncio_index = GraphIndex.open(str(out), config=config)
    ray_index = GraphIndex.open(str(out), config=config)
    ray_index.fan_out = FanOut(config.runtime.model_copy(update={"engine": "ray"}))
    assert ray_index.fan_out.use_ray and not asyncio_index.fan_out.use_ray
    try:
        for method, options in (("global", {"level": 1}), ("drift", {}), ("lazy", {})):
            on_ray = ray_index.search(method, QUESTION, **options)
            in_process = asyncio_index.search(method, QUESTION, **options)
            assert on_ray.answer == in_process.answer
            assert on_ray.sources == in_process.sources
            assert on_ray.llm_calls == in_process.llm_calls
        assert ray_index.fan_out._actors  # the calls really went through actors
    finally:
        ray_index.close()


@pytest.mark.parametrize("method", METHODS)
def test_offline_methods_answer_without_any_llm(offline_index, method):
    index = GraphIndex.open(str(offline_index))
    result = index.search(method, "Who is Marley and what does he tell Scrooge?")
    assert result.llm_calls == 0 and result.usage.calls == 0
    assert "Marley" in result.answer
    _assert_sources_exist(index, result.sources)
    # No report is there twice (DRIFT's primer listed a carried-down community's report
    # once per level; global and text answers dropped near-duplicate points).
    reports = [line.split(" [Data:")[0] for line in result.answer.splitlines()
               if line.startswith("- ") and "[Data: Reports" in line]
    assert len(reports) == len(set(reports)), result.answer


@pytest.mark.parametrize("question, message", [(None, "must be a string, not NoneType"),
                                                 ("  ", "the question is empty")])
def test_a_question_that_is_not_text_is_a_clear_error(offline_index, question, message):
    with pytest.raises(GraphRagError, match=message):
        GraphIndex.open(str(offline_index)).global_search(question)


class CountingFileSystem(MemoryFileSystem):
    """memory:// that records which files were opened."""
    protocol = "counting"
    opened: list[str] = []

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(path.replace("counting://", "memory://", 1))

    def _open(self, path, *args, **kwargs):
        CountingFileSystem.opened.append(path)
        return super()._open(path, *args, **kwargs)


def test_opening_an_index_reads_only_what_the_method_needs(offline_index):
    fsspec.register_implementation("counting", CountingFileSystem, clobber=True)
    memory = fsspec.filesystem("memory")
    memory.put(str(offline_index), "/lazy-index", recursive=True)
    CountingFileSystem.opened.clear()
    index = GraphIndex.open("counting://lazy-index")
    opened_at_open = list(CountingFileSystem.opened)
    assert all(p.endswith(("index.json", "manifest.json")) for p in opened_at_open)

    index.basic_search("Who is Marley?")
    tables = {_table_of(p) for p in CountingFileSystem.opened[len(opened_at_open):]}
    # The retrieval's: the lexical index, the graph (entities and their units, the
    # relationships, the documents' titles); not the hashed vectors, which add nothing to
    # BM25 (an index embedded by a model reads the unit and entity vectors too).
    assert tables == {"lexical", "text_units", "documents", "entities", "relationships"}
    CountingFileSystem.opened.clear()
    index.basic_search("Who is Bob Cratchit?")
    # The tables read once, then kept; only the passages this question takes are read.
    assert {_table_of(p) for p in CountingFileSystem.opened} <= {"text_units"}
    CountingFileSystem.opened.clear()
    index.global_search("What did Marley say?", level=0)
    assert {_table_of(p) for p in CountingFileSystem.opened} == {"community_reports",
                                                                 "communities"}
    CountingFileSystem.opened.clear()
    # Offline, a question for a kind of entity reads which kinds the findings cite.
    index.global_search("Who is Marley?", level=0)
    assert {_table_of(p) for p in CountingFileSystem.opened} == {"entities", "relationships"}


def test_unit_and_report_texts_are_read_for_the_rows_a_question_takes(offline_index):
    """Local, DRIFT, basic and lazy hold no unit or report text: on a 100M-token index those
    were gigabytes per query process."""
    index = GraphIndex.open(str(offline_index))
    for method in ("local", "drift", "basic", "lazy"):
        assert "Marley" in index.search(method, QUESTION).answer
    held: dict[str, set] = {}
    for key, table in index._tables.items():
        held.setdefault(key.split(":")[0], set()).update(table.column_names)
    assert "text" not in held[schema.TEXT_UNITS]
    assert not {"summary", "full_content"} & held[schema.COMMUNITY_REPORTS]
    assert not any(name.startswith("embeddings_") for name in held)  # only as matrices


def test_a_warmed_index_has_its_default_level_rendered_for_global_search(offline_index):
    from graphrag_ray.query.global_search import map_cache

    warmed = GraphIndex.open(str(offline_index))
    warmed.warm()
    rendered = len(map_cache(warmed).rows)
    assert rendered > 0
    assert {"retrieval_graph", "lexical"} <= warmed._kept.keys()  # what every ranking reads
    answer = warmed.global_search(QUESTION).answer
    assert len(map_cache(warmed).rows) == rendered  # the question rendered nothing
    assert answer == GraphIndex.open(str(offline_index)).global_search(QUESTION).answer


def _table_of(path: str) -> str:
    """`.../<table>.parquet` or `.../<table>/part-N.parquet` -> table."""
    folder, name = path.rsplit("/", 2)[-2:]
    if folder == "lexical":  # the lexical index's files: its segments, their units
        return "lexical"
    return folder if name.startswith("part-") else name.removesuffix(".parquet")


def test_cli_methods_print_sources_and_stream(offline_index, capsys, tmp_path):
    assert main(["query", "--index", str(offline_index), "--method", "local", "--stream",
                 "Who is Marley?"]) == 0
    out = capsys.readouterr().out
    assert "Marley" in out and "Sources:" in out and "documents: book.txt" in out
    history = tmp_path / "history.json"
    history.write_text(json.dumps([{"role": "user", "content": "Who is Scrooge?"}]))
    assert main(["query", "--index", str(offline_index), "--method", "basic", "--json",
                 "--history", str(history), "And his partner?"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "basic" and result["sources"]["text_units"]
    assert main(["query", "--index", str(offline_index), "--method", "local", "--level", "1",
                 "Who?"]) == 2
    history.write_text("{not json")
    assert main(["query", "--index", str(offline_index), "--method", "local",
                 "--history", str(history), "Who?"]) == 2


def test_an_index_without_embeddings_says_how_to_fix_it(offline_index, tmp_path):
    import shutil

    copy = tmp_path / "old-index"
    shutil.copytree(offline_index, copy)
    for table in copy.glob("versions/*/embeddings_*"):
        shutil.rmtree(table) if table.is_dir() else table.unlink()
    # Basic search on hashed vectors reads none (BM25 and the graph find its units) ...
    assert GraphIndex.open(str(copy)).basic_search("Who is Marley?").sources.text_units
    # ... DRIFT starts from the reports nearest the question.
    with pytest.raises(IndexNotFoundError, match="rebuild it"):
        GraphIndex.open(str(copy)).search("drift", "Who is Marley?")

