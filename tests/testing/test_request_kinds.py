"""The test server answers a request by the kind it declares, whatever its prose says; a
request that declares none is told by its wording (and counted as undeclared)."""

import json

import openai

from graphrag_ray.llm.request_kinds import KINDS, REQUEST_KIND_HEADER
from graphrag_testkit.llm_server import classify, request_kind, run_test_server

# A report prompt whose context quotes an extraction's tuples (an adopted index's merged
# descriptions do): by its wording, an extraction.
REPORT_QUOTING_TUPLES = ('Write a report as JSON with "findings".\n\nEntities\nid|entity|'
                         'description\n1|SCROOGE|("entity"<|>SCROOGE<|>PERSON<|>A miser)\n')


def test_a_declared_kind_wins_over_the_wording_and_an_unknown_one_does_not():
    messages = [{"role": "user", "content": REPORT_QUOTING_TUPLES}]
    assert classify(messages) == "extract_graph"
    assert request_kind("community_report", messages) == ("community_report", True)
    assert request_kind("no-such-kind", messages) == ("extract_graph", False)
    assert request_kind(None, messages) == ("extract_graph", False)
    assert len(set(KINDS)) == len(KINDS)


def test_the_server_answers_the_declared_kind_and_counts_the_undeclared():
    with run_test_server() as server:
        client = openai.OpenAI(base_url=server.url, api_key="test", max_retries=0)
        messages = [{"role": "user", "content": REPORT_QUOTING_TUPLES}]
        declared = client.chat.completions.create(
            model="test-model", messages=messages, max_tokens=800,
            extra_headers={REQUEST_KIND_HEADER: "community_report"})
        client.chat.completions.create(model="test-model", messages=messages, max_tokens=800)
        stats = server.stats()
    report = json.loads(declared.choices[0].message.content)
    assert {"title", "summary", "rating", "findings"} <= set(report)
    assert stats["by_kind"] == {"community_report": 1, "extract_graph": 1}
    assert stats["undeclared_kinds"] == {"extract_graph": 1}
