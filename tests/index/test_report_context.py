import numpy as np

from graphrag_ray.index.report_context import (
    GraphElements, render_context, select_elements, select_with_sub_reports)
from graphrag_ray.tokens import count_tokens


def _elements():
    # A star around node 0 plus a chain 3-4; degrees: 0->3, 1,2->1, 3->2(0,4), 4->1
    titles = ["HUB", "LEAF ONE", "LEAF TWO", "BRIDGE", "TAIL"]
    edges = [(0, 1), (0, 2), (0, 3), (3, 4)]
    degree = [3, 1, 1, 2, 1]
    entities = [{"human_readable_id": i, "title": t, "type": "X",
                 "description": f"{t} description " * 5, "degree": degree[i]}
                for i, t in enumerate(titles)]
    relationships = [{"human_readable_id": i, "source": titles[s], "target": titles[t],
                      "description": f"{titles[s]} relates to {titles[t]}",
                      "combined_degree": degree[s] + degree[t]} for i, (s, t) in enumerate(edges)]
    claims = {0: [{"human_readable_id": 0, "subject_id": "HUB", "type": "FACT", "status": "TRUE",
                   "description": "the hub claim"}]}
    return GraphElements(entities, relationships, np.array([s for s, _ in edges]),
                         np.array([t for _, t in edges]), claims)


def test_leaf_order_follows_combined_degree_source_target_claims_edge():
    elements = _elements()
    selection = select_elements(elements, np.arange(5), budget=10_000)
    # Edge 2 (HUB-BRIDGE, combined 5) first, then edges 0 and 1 (4), then edge 3 (3).
    assert selection.edges == [2, 0, 1, 3]
    assert selection.entities == [0, 3, 1, 2, 4]
    assert selection.claims == [(0, 0)]


def test_budget_is_never_exceeded():
    elements = _elements()
    for budget in (60, 90, 120, 200, 400):  # above the fixed section headers (~56 tokens)
        selection = select_elements(elements, np.arange(5), budget=budget)
        text = render_context(elements, selection)
        assert selection.tokens <= budget
        assert count_tokens(text) <= budget


def test_sub_community_reports_replace_elements_when_context_overflows():
    elements = _elements()
    big = {"community": 7, "title": "Hub group", "summary": "short", "rank": 5.0, "findings": []}
    small = {"community": 8, "title": "Tail group", "summary": "tiny", "rank": 1.0, "findings": []}
    children = [(np.array([0, 1, 2]), big), (np.array([3, 4]), small)]
    everything = elements.header_tokens + elements.element_tokens(np.arange(5))
    # Fits: same as a leaf, no reports.
    roomy = select_with_sub_reports(elements, np.arange(5), children, budget=everything)
    assert roomy.reports == [] and len(roomy.entities) == 5
    # Overflows: the largest sub-community (by element tokens) is replaced first.
    tight = select_with_sub_reports(elements, np.arange(5), children, budget=everything - 20)
    assert [r["community"] for r in tight.reports] == [7]
    assert sorted(tight.entities) == [3, 4]
    assert tight.tokens <= everything - 20
    text = render_context(elements, tight)
    assert "Hub group" in text and "HUB description" not in text
