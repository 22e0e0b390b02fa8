"""LazyGraphRAG end to end, through the real openai client to the test LLM server: an index
with no chat call, a question answered within its relevance budget (counted at the server),
a fact planted in one unit of one small community found where vector RAG misses it, citations
that resolve, a cheaper model for the tests, an LLM-built index, offline answers."""

import json
import random
import re

import pytest

from graphrag_ray import GraphIndex, load_config, schema
from graphrag_ray.cli import main
from graphrag_ray.index.build import build_index
from graphrag_testkit.llm_server import run_test_server

QUESTION = "Who founded the Lighthouse Society of Varnholm?"
PLANTED = "In the spring of 1871 Ilse Marrow founded the Lighthouse Society of Varnholm"
DECOYS = 80


def planted_corpus(folder):
    """80 short notes on the Lighthouse Society's meetings (the question's words, again and
    again, never who founded it), 30 notes on other towns, and one long chronicle of Varnholm
    whose one sentence answers the question."""
    rng = random.Random(7)
    members = ["Greta Holm", "Anton Brandt", "Mira Solberg", "Jonas Falk"]
    tasks = ["repaint the tower", "count the lamps", "mend the stairs", "clean the lens",
             "audit the oil stores", "plan the winter watch", "welcome new keepers"]
    folder.mkdir()
    for n in range(DECOYS):
        a, b = rng.sample(members, 2)
        folder.joinpath(f"minutes_{n:03}.txt").write_text(
            f"Minutes {n}. The Lighthouse Society met at the Harbour Hall. {a} and {b} of the "
            f"Lighthouse Society agreed to {rng.choice(tasks)} by day {rng.randint(1, 300)}. "
            f"The society thanked {rng.choice(members)}; the Lighthouse Society adjourned at "
            f"{rng.randint(5, 11)} o'clock.", encoding="utf-8")
    towns = ["Orchard Vale", "Copper Ridge", "Saltmarsh", "Birchwood", "Red Fen"]
    people = ["Tomas Reed", "Hanna Ek", "Lars Moe", "Eva Lind", "Karl Berg", "Sofia Dahl"]
    for n in range(30):
        town = towns[n % len(towns)]
        a, b = rng.sample(people, 2)
        folder.joinpath(f"town_{n:03}.txt").write_text(
            f"In {town}, {a} sold {rng.randint(2, 90)} barrels of apples to {b}. The market of "
            f"{town} opened on day {rng.randint(1, 300)} and {a} praised the weather.",
            encoding="utf-8")
    chronicle = " ".join(
        f"Year {1850 + i} on the island: Pieter Vos and Ada Kroon kept the ferry, the nets were "
        f"mended {rng.randint(2, 9)} times and the school taught {rng.randint(10, 40)} children."
        for i in range(12))
    folder.joinpath("chronicle.txt").write_text(
        f"{chronicle} {PLANTED}, with Pieter Vos and Ada Kroon as its first keepers. "
        f"{chronicle}", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def server():
    with run_test_server(keep_requests=True) as running:
        yield running


def server_settings(server, *more):
    return [f"llm.api_base={server.url}", "llm.model=test-model",
            f"embeddings.api_base={server.url}", "embeddings.model=test-embedding",
            "embeddings.dimensions=128", "runtime.engine=local", *more]


@pytest.fixture(scope="module")
def lazy_index(server, tmp_path_factory):
    """The lazy index: today's offline build, with embeddings from the endpoint."""
    corpus = planted_corpus(tmp_path_factory.mktemp("planted") / "input")
    out = tmp_path_factory.mktemp("lazy-index")
    before = server.stats()["by_kind"]
    # The notes are near-copies of each other, which the build would extract once.
    manifest = build_index(str(corpus), str(out), load_config(None, server_settings(
        server, "repeated_passages.enabled=false")), progress=lambda _: None)
    asked = {k: v - before.get(k, 0) for k, v in server.stats()["by_kind"].items()}
    assert set(asked) == {"embeddings"}  # no chat call: the index costs what vector RAG does
    stages = manifest.llm_usage.stages
    assert stages["embed"].calls > 0
    assert all(figures.calls == 0 for stage, figures in stages.items() if stage != "embed")
    return out


def relevance_calls(server, since: int) -> list[dict]:
    return [entry for entry in server.chat_requests()[since:]
            if entry["kind"] == "lazy_relevance"]


def passages_tested(call: dict) -> int:
    prompt = call["messages"][0]["content"]
    table = prompt.rsplit("Passages:\n", 1)[1].split("\n\nJSON:")[0]
    return sum(1 for line in table.splitlines()[1:] if re.match(r"\d+\|", line))


def open_index(path, server, *more):
    return GraphIndex.open(str(path), config=load_config(None, server_settings(server, *more)))


def test_the_planted_fact_is_found_within_budget_100_and_by_basic_search(lazy_index, server):
    index = open_index(lazy_index, server, "basic_search.method=llm")
    units = index.store.read_table(schema.TEXT_UNITS, ["id", "human_readable_id", "text"])
    planted = [u for u in units.to_pylist() if PLANTED in u["text"]]
    assert len(planted) == 1
    since = len(server.chat_requests())
    result = index.search("lazy", QUESTION, budget=100)
    assert planted[0]["id"] in result.sources.text_units
    assert f"Sources ({planted[0]['human_readable_id']})" in result.answer
    assert "Ilse Marrow founded the Lighthouse Society" in result.answer
    tests = sum(passages_tested(call) for call in relevance_calls(server, since))
    assert tests == result.details["relevance_tests"] <= 100
    # The decoys' communities were pruned after a few tests each, not read through.
    assert result.details["communities_pruned"] >= 1
    assert tests < DECOYS

    # Basic search, by embedding alone, missed it among the decoys; its retrieval now reads
    # the question's words and the entities it names too (`query/retrieval`).
    basic = index.search("basic", QUESTION)
    assert planted[0]["id"] in basic.sources.text_units


@pytest.mark.parametrize("budget", [1, 7, 30])
def test_relevance_tests_never_pass_the_budget(lazy_index, server, budget):
    index = open_index(lazy_index, server, "query.lazy.passages_per_call=4",
                       "cache.enabled=false")
    since = len(server.chat_requests())
    result = index.search("lazy", "What did the Lighthouse Society agree at the Harbour Hall?",
                          budget=budget)
    calls = relevance_calls(server, since)
    assert sum(passages_tested(call) for call in calls) == result.details["relevance_tests"]
    assert result.details["relevance_tests"] == budget  # the decoys never run out
    assert all(passages_tested(call) <= 4 for call in calls)
    assert result.llm_calls == 1 + len(calls) + result.details["answer_calls"] + \
        result.details["map_calls"]


def test_answers_cite_text_units_that_exist_and_their_documents(lazy_index, server):
    index = open_index(lazy_index, server)
    result = index.search("lazy", "What did Greta Holm and Anton Brandt agree to do?")
    numbers = dict(zip(*index.store.read_table(
        schema.TEXT_UNITS, ["human_readable_id", "id"]).to_pydict().values()))
    cited = {int(n) for group in re.findall(r"Sources \(([^)]*)\)", result.answer)
             for n in re.findall(r"\d+", group)}
    assert cited and cited <= set(numbers)
    assert set(result.sources.text_units) == {numbers[n] for n in cited}
    titles = {d["title"] for d in result.sources.documents}
    assert titles and all(t.startswith("minutes_") for t in titles)


def test_a_cheaper_model_runs_the_tests_and_the_answer_uses_llm(lazy_index, server):
    index = open_index(lazy_index, server, "query.lazy.relevance_llm.model=small-model",
                       "cache.enabled=false")
    since = len(server.chat_requests())
    index.search("lazy", "Which tasks did the Lighthouse Society plan, and who sold apples?")
    models = {}
    for entry in server.chat_requests()[since:]:
        models.setdefault(entry["kind"], set()).add(entry["model"])
    assert models["lazy_subquestions"] == models["lazy_relevance"] == {"small-model"}
    assert models["lazy_answer"] == {"test-model"}


def test_sub_questions_split_the_question_and_share_the_budget(lazy_index, server):
    index = open_index(lazy_index, server)
    result = index.search("lazy", "What did the Lighthouse Society agree at the Harbour Hall, "
                                  "and who sold barrels of apples in Orchard Vale?", budget=60)
    assert result.details["subquestions"] == [
        "What did the Lighthouse Society agree at the Harbour Hall?",
        "who sold barrels of apples in Orchard Vale?"]
    assert result.details["relevance_tests"] <= 60
    # Both halves were answered: the answer's notes hold claims of each.
    notes = [e for e in server.chat_requests() if e["kind"] == "lazy_answer"][-1]
    notes = notes["messages"][0]["content"].split("---Notes---")[1]
    assert "barrels of apples to" in notes and "of the Lighthouse Society agreed to" in notes


def test_streaming_and_history(lazy_index, server):
    index = open_index(lazy_index, server)
    pieces = []
    history = [{"role": "user", "content": "Tell me about Varnholm's Lighthouse Society."},
               {"role": "assistant", "content": "It keeps the lighthouse."}]
    result = index.search("lazy", "Who founded it?", history=history, on_token=pieces.append)
    assert len(pieces) > 1 and "".join(pieces).strip() == result.answer
    # The conversation reached the sub-question prompt.
    asked = [e for e in server.chat_requests() if e["kind"] == "lazy_subquestions"][-1]
    assert "It keeps the lighthouse." in asked["messages"][0]["content"]


def test_a_warm_cache_repeats_no_call(lazy_index, server, tmp_path):
    config = load_config(None, server_settings(server))
    cache = str(tmp_path / "cache")
    first = GraphIndex.open(str(lazy_index), config=config, cache_url=cache).search(
        "lazy", "What did Mira Solberg agree to?")
    before = server.stats()["requests"]
    again = GraphIndex.open(str(lazy_index), config=config, cache_url=cache).search(
        "lazy", "What did Mira Solberg agree to?")
    assert server.stats()["requests"] == before  # the question's embedding is cached too
    assert again.answer == first.answer and again.usage.cache_hits == first.llm_calls


def test_offline_lazy_answers_from_the_passages_sentences(lazy_index, server):
    index = open_index(lazy_index, server, "query.lazy.method=extractive")
    before = server.stats()["by_kind"].get("lazy_relevance", 0)
    result = index.search("lazy", QUESTION, budget=100)
    assert server.stats()["by_kind"].get("lazy_relevance", 0) == before
    assert result.llm_calls == 0 and result.notes
    assert "Ilse Marrow founded the Lighthouse Society of Varnholm" in result.answer


@pytest.mark.slow  # an LLM build
def test_lazy_on_an_index_built_with_the_llm(server, tmp_path):
    corpus = planted_corpus(tmp_path / "input")
    settings = server_settings(server, "repeated_passages.enabled=false",
                               "extraction.method=llm", "extraction.max_gleanings=0")
    build_index(str(corpus), str(tmp_path / "index"), load_config(None, settings),
                progress=lambda _: None)
    result = open_index(tmp_path / "index", server, *settings[-2:]).search(
        "lazy", QUESTION, budget=100)
    assert "Ilse Marrow founded the Lighthouse Society" in result.answer
    assert result.details["relevance_tests"] <= 100


def test_cli_budget_flag(lazy_index, server, capsys):
    assert main(["query", "--index", str(lazy_index), "--method", "lazy", "--budget", "5",
                 "--json", *sum((["--set", s] for s in server_settings(server)), []),
                 QUESTION]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["details"]["relevance_tests"] <= 5 and result["details"]["budget"] == 5
    assert main(["query", "--index", str(lazy_index), "--method", "basic", "--budget", "5",
                 QUESTION]) == 2
    assert "--budget applies to --method lazy only" in capsys.readouterr().err


def test_when_every_relevance_test_fails_the_answer_is_an_error_not_nothing_found(
        small_index, capsys):
    from graphrag_ray.cli import main

    with run_test_server(rate_malformed=1.0) as failing:
        code = main(["query", "--index", str(small_index), "--method", "lazy", "--budget", "20",
                     "--set", f"llm.api_base={failing.url}", "--set", "llm.model=test-model",
                     "Who is Scrooge?"])
    err = capsys.readouterr().err
    assert code == 1 and "every relevance test failed" in err and "no readable reply" in err


def test_the_footer_counts_what_the_provider_received_retries_included(small_index, capsys):
    from graphrag_ray.cli import main

    with run_test_server(fail_first=1, fail_status=500) as flaky:
        code = main(["query", "--index", str(small_index), "--method", "lazy", "--budget", "20",
                     "--set", f"llm.api_base={flaky.url}", "--set", "llm.model=test-model",
                     "--set", "llm.retry_base_delay_s=0.01", "Who is Scrooge?"])
        received = flaky.stats()["requests"]
    footer = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 0 and f"; {received} LLM requests (" in footer and "retries" in footer
