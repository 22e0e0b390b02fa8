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
