import pytest

from graphrag_ray.query.map_reduce import (
    NO_ANSWER, MapCache, Point, distinct_points, extractive_map, extractive_reduce, pack_reduce_context,
    pack_report_batches, parse_map_points, parse_report_ids, rank_points)
from graphrag_ray.tokens import count_tokens


def _reports(n):
    return [{"community": i, "title": f"Report {i}", "rank": float(i % 10),
             "full_content": f"# Report {i}\n\n" + "content words " * (20 + i),
             "summary": f"Summary of report {i}",
             "findings": [{"summary": f"finding {i}", "explanation": "about whales" if i % 3 == 0
                           else "about ships"}]} for i in range(n)]


def test_batches_are_shuffled_complete_and_within_budget():
    batches = pack_report_batches(_reports(30), max_tokens=300, seed=1)
    ids = [r["community"] for batch in batches for r, _, _ in batch]
    assert sorted(ids) == list(range(30)) and ids != list(range(30))
    for batch in batches:
        text = "\n".join(["id|title|rank|content"] + [row for _, row, _ in batch])
        assert count_tokens(text) <= 300
    assert pack_report_batches(_reports(30), 300, seed=1)[0][0][1] == batches[0][0][1]


def test_map_points_parse_and_rank():
    reply = ('```json\n{"points": [{"description": "Whales matter [Data: Reports (3, 99)]", '
             '"score": 80}, {"description": "noise", "score": 0}, {"description": "x", '
             '"score": "bad"}, {"description": "Ships [Data: Reports (4)]", "score": 95}]}\n```')
    points = parse_map_points(reply, batch=0, batch_report_ids=[3, 4])
    assert [p.report_ids for p in points] == [[3], [3, 4], [4]]
    ranked = rank_points(points)
    assert [p.score for p in ranked] == [95, 80]


def test_reduce_context_respects_limit_and_order():
    points = [Point(f"point {i} " + "words " * 30, 100 - i, [i], 0) for i in range(20)]
    context, used, tokens = pack_reduce_context(points, max_tokens=200)
    assert tokens <= 200 and count_tokens(context) <= 200
    assert [p.score for p in used] == sorted((p.score for p in used), reverse=True)
    assert 0 < len(used) < 20


def test_parse_report_ids():
    assert parse_report_ids("a [Data: Reports (1, 2, +more)] b Report (7)") == [1, 2, 7]


def test_extractive_map_scores_lexical_matches():
    batches = pack_report_batches(_reports(9), 10_000, seed=0)
    points, _ = extractive_map("What about whales?", batches)
    assert points and all("whales" in p.description for p in points)
    assert {p.report_ids[0] for p in points} == {0, 3, 6}


def test_a_cache_gives_the_same_batches_and_points_for_every_later_question():
    cache = MapCache()
    for question in ("What about whales?", "What about ships?", "What about whales?"):
        cached = pack_report_batches(_reports(12), 200, seed=3, cache=cache)
        fresh = pack_report_batches(_reports(12), 200, seed=3)
        assert cached == fresh
        assert extractive_map(question, cached, cache=cache) == extractive_map(question, fresh)
    assert len(cache.rows) == 12 and len(cache.terms) == 12  # worked out once each


def test_extractive_reduce_without_points_says_so():
    assert extractive_reduce("Anything?", []) == NO_ANSWER
    answer = extractive_reduce("Whales?", [Point("x" * 1000 + " [Data: Reports (3)]", 50, [3], 0)])
    assert answer.endswith("… [Data: Reports (3)]")  # shortened, reference kept


def test_extractive_map_surveys_reports_for_thematic_questions():
    batches = pack_report_batches(_reports(5), 10_000, seed=0)
    points, _ = extractive_map("What are the main themes?", batches)
    assert sorted(p.report_ids[0] for p in points) == [0, 1, 2, 3, 4]
    assert all(p.score > 0 for p in points)


def test_a_report_larger_than_the_budget_still_fits_its_batch():
    from graphrag_ray.query.map_reduce import REPORT_CONTEXT_HEADER, pack_report_batches
    from graphrag_ray.tokens import count_tokens

    huge = {"community": 12345, "title": "A very long report title about everything", "rank": 7.5,
            "full_content": "word " * 5_000}
    small = {"community": 2, "title": "Small", "rank": 1.0, "full_content": "a short report"}
    for budget in (200, 1_000):
        for batch in pack_report_batches([huge, small], budget, seed=0):
            text = "\n".join([REPORT_CONTEXT_HEADER] + [row for _, row, _ in batch])
            assert count_tokens(text) <= budget
            assert sum(tokens for _, _, tokens in batch) + count_tokens(
                REPORT_CONTEXT_HEADER) + 1 <= budget


def test_the_papers_map_form_is_one_answer_and_one_score_per_batch():
    from graphrag_ray.query.map_reduce import parse_map_answer

    points = parse_map_answer('{"answer": "Whales matter [Data: Reports (3, 99)]", "score": 70}',
                              batch=2, batch_report_ids=[3, 4])
    assert [(p.description, p.score, p.report_ids, p.batch) for p in points] == [
        ("Whales matter [Data: Reports (3, 99)]", 70.0, [3], 2)]
    assert parse_map_answer('{"answer": "", "score": 0}', 0, [1]) == []
    with pytest.raises(ValueError):
        parse_map_answer('{"points": []}', 0, [1])


@pytest.fixture(scope="module")
def carol_llm_index(tmp_path_factory):
    """Carol built through the test server once; the map form is a query-time setting."""
    from graphrag_ray.index.build import build_index
    from graphrag_testkit.llm_server import run_test_server

    from conftest import carol_input, llm_config

    out = tmp_path_factory.mktemp("carol-llm")
    with run_test_server() as server:
        build_index(str(carol_input(out.parent / f"{out.name}-input", 25_000)), str(out),
                    llm_config(server, "runtime.engine=local"), progress=lambda _: None)
    return out


@pytest.mark.parametrize("form", ["single", "points"])
def test_global_search_map_forms_through_the_test_server(form, carol_llm_index):
    """`single` (the paper's, the default): one map call per batch answers once; `points`: a
    list of scored points per batch. Either way the reduce ranks them, and the sources are
    the reports they cite."""
    from graphrag_ray import GraphIndex
    from graphrag_testkit.llm_server import run_test_server

    from conftest import llm_config

    with run_test_server() as server:
        config = llm_config(server, "runtime.engine=local", f"global_search.map_answer={form}",
                            "global_search.map_context_tokens=600")
        before = server.stats()["by_kind"]
        result = GraphIndex.open(str(carol_llm_index), config=config).global_search(
            "What does Scrooge do at Christmas?", level=0)
        kinds = server.stats()["by_kind"]
    used, other = ("global_map_single", "global_map") if form == "single" \
        else ("global_map", "global_map_single")
    map_calls = kinds.get(used, 0) - before.get(used, 0)
    assert map_calls == result.details["map_calls"] > 1
    assert kinds.get(other, 0) == before.get(other, 0)  # no call in the other form
    if form == "single":
        assert len(result.details["points"]) <= map_calls  # at most one answer per batch
    assert result.sources.reports and result.answer


def test_an_extractive_answer_never_repeats_a_point_and_names_its_sources():
    points = [Point("Scrooge is a miser who hoards his money [Data: Reports (1)]", 90, [1], 0),
              Point("Scrooge is a miser, who hoards his money. [Data: Reports (4)]", 80, [4], 0),
              Point("Marley's ghost warns Scrooge [Data: Reports (2)]", 70, [2], 0)]
    answer = extractive_reduce("Who is Scrooge?", points)
    assert answer.count("hoards his money") == 1 and "Marley's ghost" in answer
    assert answer.startswith("Points from the community reports")
    text = extractive_reduce("Who is Scrooge?", points, "Sources")
    assert text.startswith("Points from the source text")


def test_two_findings_quoting_the_same_passage_are_one_point():
    """They go on differently, so their words alone do not look alike; the sentence they both
    show does."""
    opening = ("Ashley is a scientist and engineer with a twenty year career in research and "
               "development of machine learning technologies at the Applied Physics Laboratory. ")
    points = [Point(f"Ashley: {opening}" + " ".join(f"alpha{k}" for k in range(60))
                    + " [Data: Reports (1)]", 90, [1], 0),
              Point(f"Applied Physics Laboratory: {opening}"
                    + " ".join(f"beta{k}" for k in range(60)) + " [Data: Reports (2)]", 80, [2], 0)]
    assert distinct_points(points, 10) == points[:1]
    assert extractive_reduce("Who is Ashley?", points).count("twenty year career") == 1
