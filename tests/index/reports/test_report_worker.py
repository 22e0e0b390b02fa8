import pytest

from graphrag_ray.index.reports.report_worker import extractive_report, full_content, validate_report


def test_validate_report_cleans_and_rejects():
    report = validate_report({"title": " T ", "summary": "S", "rating": "12",
                              "findings": [{"summary": "f", "explanation": "e"}, "plain", 3]})
    assert report["rating"] == 10.0 and report["title"] == "T"
    assert report["findings"] == [{"summary": "f", "explanation": "e"},
                                  {"summary": "plain", "explanation": ""}]
    with pytest.raises(ValueError, match="summary"):
        validate_report({"title": "T"})
    with pytest.raises(ValueError, match="rating"):
        validate_report({"title": "T", "summary": "S", "rating": "high"})


def test_extractive_report_uses_only_context_text():
    context = {
        "entities": [{"human_readable_id": 1, "title": "EBENEZER SCROOGE", "type": "PERSON",
                      "description": "A miser. He hates Christmas.", "degree": 5},
                     {"human_readable_id": 2, "title": "MARLEY", "type": "PERSON",
                      "description": "His dead partner.", "degree": 2}],
        "relationships": [{"human_readable_id": 9, "source": "EBENEZER SCROOGE",
                           "target": "MARLEY", "description": "Business partners",
                           "combined_degree": 7}],
        "claims": [], "reports": []}
    report = extractive_report(context, max_findings=5)
    assert report["title"] == "Ebenezer Scrooge and Marley"
    assert "A miser." in report["summary"]
    assert report["findings"][0]["explanation"].endswith("[Data: Relationships (9)]")
    assert 0 <= report["rating"] <= 10
    assert full_content(report).startswith("# Ebenezer Scrooge and Marley")


def test_an_extractive_report_says_each_sentence_once():
    """Entities and relationships drawn from one sentence share it as their description:
    the report gives it once, in the summary and in the findings."""
    shared = "There were Cains and Abels, Pharaoh's daughters and Queens of Sheba."
    names = ["CAINS", "ABELS", "PHARAOH", "QUEENS OF SHEBA"]
    context = {
        "entities": [{"human_readable_id": i, "title": n, "type": "OTHER",
                      "description": shared, "degree": 3} for i, n in enumerate(names)],
        "relationships": [{"human_readable_id": 10 + i, "source": names[0], "target": n,
                           "description": shared, "combined_degree": 6}
                          for i, n in enumerate(names[1:])],
        "claims": [], "reports": []}
    report = extractive_report(context, max_findings=10)
    assert report["summary"].count(shared) == 1
    assert [f["explanation"] for f in report["findings"]] == \
        [f"{shared} [Data: Relationships (10)]"]
    assert full_content(report).count(shared) == 2  # the summary and one finding
