"""Real replies from public model runs, parsed as a reader reads them.

The fixtures (`tests/fixtures/real_replies/sources.json`) name each reply's source, its model
family, its quirks, and what is in it. The reply texts are third-party data and stay out of
this repository: they are read from GRAPHRAG_REAL_REPLIES (a JSON-lines file that
`scripts/collect_real_replies.py` writes) or from shared/real_replies/replies.jsonl beside the
checkout, and from more_replies.jsonl beside it (Qwen 2.5 and Mistral replies from Microsoft
GraphRAG caches). Without them these tests skip; the quirk tests in test_tuples.py, written in our
own words, keep each shape covered in CI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import SHARED
from graphrag_ray.index.extract.tuples import parse_graph_records
from graphrag_ray.index.reports.report_worker import validate_report
from graphrag_ray.llm.client import parse_json_object
from graphrag_ray.llm.replies import visible_reply
from graphrag_ray.query.map_reduce import parse_map_points

SOURCES = Path(__file__).resolve().parents[2] / "fixtures" / "real_replies" / "sources.json"
FIXTURES = json.loads(SOURCES.read_text())["fixtures"]


@pytest.fixture(scope="module")
def replies() -> dict[str, str]:
    """Both files: `replies.jsonl` and, beside it, `more_replies.jsonl` (fixtures naming it
    in their `file`)."""
    path = Path(os.environ.get("GRAPHRAG_REAL_REPLIES")
                or SHARED / "real_replies" / "replies.jsonl")
    if not path.is_file():
        pytest.skip(f"no real replies at {path} (scripts/collect_real_replies.py writes them)")
    found = {}
    for file in (path, path.with_name("more_replies.jsonl")):
        if file.is_file():
            for line in file.read_text(encoding="utf-8").splitlines():
                if line:
                    row = json.loads(line)
                    found[row["id"]] = row["reply"]
    return found


def test_the_fixtures_cover_eight_families_and_every_kind():
    families = {fixture["family"] for fixture in FIXTURES}
    kinds = {fixture["kind"] for fixture in FIXTURES}
    assert len(FIXTURES) == 71 and len(families) >= 8
    assert {"extraction", "report", "map", "answer", "summary"} <= kinds
    assert all(fixture["source"]["licence"] for fixture in FIXTURES)
    assert len({fixture["id"] for fixture in FIXTURES}) == len(FIXTURES)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f"{f['id']}-{f['model']}")
def test_a_real_reply_gives_the_records_a_reader_finds(fixture, replies):
    if fixture["id"] not in replies:
        pytest.fail(f"{fixture['id']} is missing from the real replies files "
                    f"({fixture.get('file', 'replies.jsonl')})")
    text = visible_reply(replies[fixture["id"]])
    expected = fixture["expected"]
    if fixture["kind"] == "extraction":
        parsed = parse_graph_records(text)
        assert (len(parsed.entities), len(parsed.relationships)) == (
            expected["entities"], expected["relationships"])
        assert [e["title"] for e in parsed.entities[:2]] == expected["first_entities"]
    elif fixture["kind"] == "report":
        report = validate_report(parse_json_object(text))
        assert (len(report["findings"]), report["rating"]) == (
            expected["findings"], expected["rating"])
    elif fixture["kind"] == "map":
        assert len(parse_map_points(text, 0, [1])) == expected["points"]
    else:
        assert len(text) >= expected["visible_chars_at_least"] and "<think>" not in text
