"""Description summaries through the test server."""

import random

import pyarrow as pa

from graphrag_ray.index.reports.summary_worker import (
    LLMSummarizeWorker, SummaryWork, without_fragments)
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.prompts_loader import load_prompts
from graphrag_testkit.llm_server import run_test_server

from conftest import llm_config


def _work(n: int) -> tuple[list[SummaryWork], list[pa.Table]]:
    lists = [[f"PERSON {i} keeps a shop.", f"PERSON {i} sells coal in winter."] for i in range(n)]
    block = pa.table({"description": [""] * n, "descriptions": lists})
    work = [SummaryWork(i, f"PERSON {i}", 0, i, {"human_readable_id": i, "title": f"PERSON {i}",
                                                 "type": "PERSON", "description": None,
                                                 "degree": 1}) for i in range(n)]
    return work, [block]


def test_an_empty_summary_is_asked_for_again_before_falling_back(tmp_path):
    """A third of the replies are empty: with retries (each attempt its own cache key) nearly
    every element gets an LLM summary, where one try would fall back for about a third."""
    work, blocks = _work(24)
    with run_test_server(rate_malformed=0.33) as server:
        config = llm_config(server, "llm.max_parse_retries=2", "summarize.llm_min_descriptions=2")
        worker = LLMSummarizeWorker(config, load_prompts(config),
                                 LLMServices(cache=ResponseCache(str(tmp_path / "cache"))))
        result = worker(work, blocks)
        requests = server.stats()["requests"]
    fallbacks = [e for e in result.column("error").to_pylist() if e]
    assert requests > len(work)  # the empty ones were asked for again
    assert len(fallbacks) <= 2  # 3 attempts at 1/3 each: about 1 in 27 falls back
    assert all(d for d in result.column("description").to_pylist())


def test_a_few_short_descriptions_are_joined_without_a_call():
    """Two sentences of an element read well as they are: no call; four, or two that run
    past a summary's length, go to the LLM."""
    work, blocks = _work(3)
    long = ["PERSON 2 " + "keeps a very busy shop on the corner of the market " * 30,
            "PERSON 2 sells coal."]
    blocks = [blocks[0].set_column(1, "descriptions", pa.array(
        [blocks[0].column("descriptions")[0].as_py(),
         [f"PERSON 1 fact {k}." for k in range(4)], long]))]
    with run_test_server() as server:
        config = llm_config(server)
        result = LLMSummarizeWorker(config, load_prompts(config), LLMServices())(work, blocks)
        stats = server.stats()
    rows = result.to_pylist()
    assert rows[0]["calls"] == 0
    assert rows[0]["description"] == "PERSON 0 keeps a shop. PERSON 0 sells coal in winter."
    assert [bool(r["joined"]) for r in rows] == [True, False, False]
    assert stats["by_kind"]["summarize"] == 2


def _fragments_by_definition(descriptions: list[str]) -> list[str]:
    """Every description against every other: what `without_fragments` must equal."""
    normal = [" ".join(d.split()).rstrip("…").strip() for d in descriptions]
    return [d for i, d in enumerate(descriptions) if normal[i] and not any(
        j != i and normal[i] in normal[j] and (len(normal[j]) > len(normal[i]) or j < i)
        for j in range(len(normal)))]


def test_a_description_another_holds_whole_is_left_out():
    assert without_fragments(["Ada wrote the program.", "wrote the program…",
                              "Ada  wrote the program. ", "Babbage built it."]) == [
        "Ada wrote the program.", "Babbage built it."]
    rng = random.Random(7)
    words = "ada wrote the first program for an engine x\x00y".split()
    for _ in range(500):
        whole = [" ".join(rng.choices(words, k=rng.randint(0, 7))) for _ in range(10)]
        cut = [w[rng.randint(0, len(w)):] for w in whole] + \
            [w[:rng.randint(0, len(w))] + "…" for w in whole]
        descriptions = rng.sample(whole + cut + whole[:3], 20)
        assert without_fragments(descriptions) == _fragments_by_definition(descriptions)
