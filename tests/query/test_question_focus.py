"""Offline answers stay on the question: framing words ("themes", "matter", "these novels")
are not matched, the kind of entity asked for (in English, French and Chinese) ranks the
findings about it, and a finding sharing only a common word of the question is no point."""

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.query.map_reduce import extractive_map, pack_report_batches
from graphrag_ray.query.question_focus import finding_kinds, question_focus


def test_framing_words_are_not_terms_and_kind_words_name_a_kind():
    assert question_focus("What are the main themes of these novels?").terms == frozenset()
    assert question_focus("What are the main themes of the story?").terms == frozenset()
    places = question_focus("Which places matter most?")
    assert places.terms == frozenset() and places.kinds == {"GEO"}
    assert question_focus("Who are the most important people?").kinds == {"PERSON"}
    assert question_focus("What events take place?").kinds == {"EVENT"}  # not GEO
    focus = question_focus("Are there episodes where the talk was on future tech?")
    assert focus.kinds == frozenset() and focus.terms == {"future", "tech"}  # "where" inside
    assert question_focus("Quels lieux comptent le plus ?").kinds == {"GEO"}
    assert question_focus("Qui sont les personnages principaux ?").kinds == {"PERSON"}
    assert question_focus("Quels problèmes sont décrits ?").terms == {"probleme"}
    chinese = question_focus("哪些地方最重要？")
    assert chinese.kinds == {"GEO"} and chinese.terms == frozenset()
    assert question_focus("关于未来说了什么？").terms == {"未来"}


def _report(community, rank, findings):
    return {"community": community, "title": f"Report {community}", "rank": rank,
            "summary": "", "full_content": "", "findings": [
                {"summary": s, "explanation": e} for s, e in findings]}


def _kinds(read_tables):
    return finding_kinds(lambda name, columns: read_tables[name].select(columns))


TABLES = {
    schema.ENTITIES: pa.table({"human_readable_id": [0, 1, 2, 3],
                               "title": ["LONDON", "SCROOGE", "CAMDEN TOWN", "MARLEY"],
                               "type": ["GEO", "PERSON", "GEO", "PERSON"]}),
    schema.RELATIONSHIPS: pa.table({"human_readable_id": [0], "source": ["SCROOGE"],
                                    "target": ["MARLEY"]}),
}


def test_a_question_for_a_kind_gets_findings_about_that_kind_most_prominent_first():
    reports = [
        _report(1, 9.0, [("Scrooge", "It does not matter to Scrooge. [Data: Entities (1)]"),
                         ("London", "The city where the story is set. [Data: Entities (0)]")]),
        _report(2, 4.0, [("Camden Town", "Bob lives here. [Data: Entities (2)]"),
                         ("Scrooge and Marley", "Partners. [Data: Relationships (0)]")]),
    ]
    batches = pack_report_batches(reports, 10_000, seed=0)
    points, _ = extractive_map("Which places matter most?", batches, kinds_of=_kinds(TABLES))
    points.sort(key=lambda p: -p.score)
    assert [p.description.split(":")[0] for p in points] == ["London", "Camden Town"]
    people, _ = extractive_map("How do the main people relate to each other?", batches,
                               kinds_of=_kinds(TABLES))
    best = max(people, key=lambda p: p.score)
    assert best.description.startswith("Scrooge")
    assert all(not p.description.startswith(("London", "Camden")) for p in people)
    # Without the index's kinds, or with no finding of the kind, the same question is a survey
    # of the reports, and the answer's header says so.
    survey, header = extractive_map("Which places matter most?", batches)
    assert {p.report_ids[0] for p in survey} == {1, 2}
    assert header.startswith("Nothing in the community reports matches") and "places" in header
    _, header = extractive_map("Which events take place?", batches, kinds_of=_kinds(TABLES))
    assert header.startswith("Nothing in the community reports matches")
    _, header = extractive_map("What are the main themes?", batches)
    assert header.startswith("The highest-rated of the community reports")


def test_a_finding_sharing_only_a_common_word_of_the_question_is_no_point():
    findings = [("Award", "Recognised for tech inclusion and diversity work."),
                ("Dei", "Diversity, equity and inclusion programmes.")]
    findings += [(f"Product {k}", f"A tech product number {k}.") for k in range(20)]
    batches = pack_report_batches([_report(1, 5.0, findings)], 10_000, seed=0)
    points, _ = extractive_map("Who discusses diversity and inclusion in tech?", batches)
    assert sorted(p.description.split(":")[0] for p in points) == ["Award", "Dei"]
