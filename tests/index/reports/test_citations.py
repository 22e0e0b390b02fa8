from graphrag_ray.index.reports.citations import cite_index_ids, cite_report, cited_ids

IDS = {"entities": [40, 7, 1203], "relationships": [88], "claims": [], "reports": [12, 3]}


def test_row_numbers_become_the_index_ids_of_those_rows():
    text = "Scrooge is central [Data: Entities (1, 3); Relationships (1, +more)]."
    assert cite_index_ids(text, IDS) == \
        "Scrooge is central [Data: Entities (40, 1203); Relationships (88, +more)]."
    assert cite_index_ids("See [Data: Reports (2)]", IDS) == "See [Data: Reports (3)]"


def test_numbers_with_no_row_are_dropped_and_an_empty_citation_goes():
    assert cite_index_ids("x [Data: Entities (2, 9); Claims (1)]", IDS) == \
        "x [Data: Entities (7)]"
    assert cite_index_ids("Nothing behind it [Data: Entities (0, 4)].", IDS) == \
        "Nothing behind it."


def test_text_without_citations_or_with_other_sources_is_kept():
    assert cite_index_ids("plain text (1, 2)", IDS) == "plain text (1, 2)"
    assert cite_index_ids("[Data: Sources (4)]", IDS) == "[Data: Sources (4)]"


def test_a_report_has_every_text_field_mapped():
    report = {"title": "T", "summary": "s [Data: Entities (1)]", "rating": 5.0,
              "rating_explanation": "r [Data: Reports (1)]",
              "findings": [{"summary": "f", "explanation": "e [Data: Entity (2)]"}]}
    cited = cite_report(report, IDS)
    assert cited["summary"] == "s [Data: Entities (40)]"
    assert cited["rating_explanation"] == "r [Data: Reports (12)]"
    assert cited["findings"] == [{"summary": "f", "explanation": "e [Data: Entity (7)]"}]


def test_cited_ids_by_table():
    text = ("Ada met Bob [Data: Entities (2, 5, +more); Relationships (1)] in Lyon "
            "[Data: Reports (3); Sources (9)].")
    assert cited_ids(text) == {"entities": [2, 5], "relationships": [1], "reports": [3]}
    assert cited_ids("no citation") == {}
