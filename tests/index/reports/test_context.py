import json

import numpy as np
import pyarrow as pa

from graphrag_ray.index.reports.context import (
    GraphElements, context_spec, fill_claims, context_ids, fill_descriptions, render_context,
    select_elements, select_with_sub_reports, spec_keys, sub_reports_needed)
from graphrag_ray.index.context_rows import (
    CLAIM_FIELDS, EDGE_FIELDS, ENTITY_FIELDS, context_row_tokens, inner_cells_tokens,
    number_tokens, row_tokens, row_tokens_without_id)
from graphrag_ray.tokens import count_tokens


TITLES = ["HUB", "LEAF ONE", "LEAF TWO", "BRIDGE", "TAIL"]
EDGES = [(0, 1), (0, 2), (0, 3), (3, 4)]
# Element key -> description: entities, then edges (as the report workers read them).
DESCRIPTIONS = [f"{t} description " * 5 for t in TITLES] + \
    [f"{TITLES[s]} relates to {TITLES[t]}" for s, t in EDGES]


CLAIMS = pa.table({"human_readable_id": [0], "subject_id": ["HUB"], "type": ["FACT"],
                   "status": ["TRUE"], "description": ["the hub claim"]})


def _elements():
    # A star around node 0 plus a chain 3-4; degrees: 0->3, 1,2->1, 3->2(0,4), 4->1
    degree = np.array([3, 1, 1, 2, 1])
    elements = GraphElements(
        TITLES, ["X"] * 5, degree, np.array([s for s, _ in EDGES]),
        np.array([t for _, t in EDGES]), np.array([degree[s] + degree[t] for s, t in EDGES]),
        claims_by_entity={0: [0]},  # HUB's claim: row 0 of the claims' block
        claim_tokens={0: [row_tokens_without_id(CLAIMS.to_pylist()[0], CLAIM_FIELDS,
                                                "cl100k_base")]},
        entity_tokens=np.zeros(5, dtype=np.int64), edge_tokens=np.zeros(4, dtype=np.int64),
        entity_numbers=np.arange(5), edge_numbers=np.arange(4))
    for node in range(5):
        elements.entity_tokens[node] = context_row_tokens(
            elements.entity_record(node), DESCRIPTIONS[node], "cl100k_base")
    for edge in range(4):
        elements.edge_tokens[edge] = context_row_tokens(
            elements.edge_record(edge), DESCRIPTIONS[5 + edge], "cl100k_base")
    return elements


def _render(elements, selection) -> str:
    """What a report worker writes: the spec, with descriptions read by key."""
    spec = json.loads(json.dumps(context_spec(elements, selection)))
    keys = spec_keys(selection, len(TITLES))
    return render_context(fill_claims(fill_descriptions(spec, [DESCRIPTIONS[k] for k in keys]),
                                      CLAIMS))


def test_leaf_order_follows_combined_degree_source_target_claims_edge():
    elements = _elements()
    selection = select_elements(elements, np.arange(5), budget=10_000)
    # Edge 2 (HUB-BRIDGE, combined 5) first, then edges 0 and 1 (4), then edge 3 (3).
    assert selection.edges == [2, 0, 1, 3]
    assert selection.entities == [0, 3, 1, 2, 4]
    assert selection.claims == [(0, 0)]
    assert "1|HUB|FACT|TRUE|the hub claim" in _render(elements, selection)


def test_rows_are_numbered_in_their_context_so_unrelated_rows_do_not_change_it():
    """The same community in a bigger index (its entities and edges at other rows) gets the
    same context text; `context_ids` maps its row numbers to the index's ids."""
    elements = _elements()
    selection = select_elements(elements, np.arange(5), budget=10_000)
    spec = json.loads(json.dumps(context_spec(elements, selection)))
    shifted = json.loads(json.dumps(spec))
    for row in shifted["entities"] + shifted["relationships"]:
        row["human_readable_id"] += 1000
    texts = []
    for context in (spec, shifted):
        keys = spec_keys(selection, len(TITLES))
        filled = fill_claims(fill_descriptions(context, [DESCRIPTIONS[k] for k in keys]), CLAIMS)
        texts.append(render_context(filled))
    assert texts[0] == texts[1]
    assert "\n1|HUB|X|" in texts[0] and "\n2|BRIDGE|X|" in texts[0]
    assert context_ids(shifted)["entities"] == [1000, 1003, 1001, 1002, 1004]
    assert context_ids(shifted)["relationships"] == [1002, 1000, 1001, 1003]


def test_budget_is_never_exceeded():
    elements = _elements()
    for budget in (60, 90, 120, 200, 400):  # above the fixed section headers (~56 tokens)
        selection = select_elements(elements, np.arange(5), budget=budget)
        text = _render(elements, selection)
        assert selection.tokens <= budget
        assert count_tokens(text) <= budget


def _two_sub_communities():
    """The hub's group {0, 1, 2} and the tail's {3, 4}, linked by HUB-BRIDGE (edge 2); and
    the tokens of all five elements' context."""
    elements = _elements()
    big = {"community": 7, "title": "Hub group", "summary": "short", "rank": 5.0, "findings": []}
    small = {"community": 8, "title": "Tail group", "summary": "tiny", "rank": 1.0, "findings": []}
    children = [(7, np.array([0, 1, 2]), big), (8, np.array([3, 4]), small)]
    return elements, children, elements.header_tokens + elements.element_tokens(np.arange(5))


def test_sub_community_reports_replace_elements_when_context_overflows():
    elements, children, everything = _two_sub_communities()
    # Fits: same as a leaf, no reports.
    roomy = select_with_sub_reports(elements, np.arange(5), children, budget=everything)
    assert roomy.reports == [] and len(roomy.entities) == 5
    # Overflows: the largest sub-community (by element tokens) is replaced first.
    tight = select_with_sub_reports(elements, np.arange(5), children, budget=everything - 20)
    assert [r["community"] for r in tight.reports] == [7]
    assert sorted(tight.entities) == [3, 4]
    assert tight.tokens <= everything - 20
    text = _render(elements, tight)
    assert "Hub group" in text and "HUB description" not in text
    # The link between the two sub-communities (HUB-BRIDGE) stays, as budget is left.
    assert 2 in tight.edges and "HUB relates to BRIDGE" in text
    assert count_tokens(text) <= everything - 20


def test_links_between_sub_communities_stay_only_while_they_fit():
    elements, children, everything = _two_sub_communities()
    with_link = select_with_sub_reports(elements, np.arange(5), children, budget=everything - 20)
    assert 2 in with_link.edges
    budget = with_link.tokens - 1  # one token short of what it used with the link
    squeezed = select_with_sub_reports(elements, np.arange(5), children, budget=budget)
    assert squeezed.tokens <= budget
    # The link goes; the report and the remaining elements stay as they were.
    assert squeezed.edges == [e for e in with_link.edges if e != 2]
    assert squeezed.reports == with_link.reports and squeezed.entities == with_link.entities


def test_row_tokens_from_inner_cells_and_numbers_equal_the_whole_rows():
    """The merge counts a row without its numbers; the driver adds the degree and the
    context its place. Exact, because
    tokenizers never join a digit run with the `|` around it."""
    rng = np.random.default_rng(7)
    alphabet = list("abcXYZ 0123456789.,;:!?'\"|-/()\n\r\t") + ["é", "中", "  ", "..."]
    for _ in range(400):
        cells = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 30)))) for _ in range(3)]
        first, last = (int(v) for v in rng.integers(0, 10 ** int(rng.integers(1, 8)), size=2))
        entity = {"human_readable_id": first, "title": cells[0], "type": cells[1],
                  "description": cells[2], "degree": last}
        edge = {"human_readable_id": first, "source": cells[0], "target": cells[1],
                "description": cells[2], "combined_degree": last}
        for record, fields in ((entity, ENTITY_FIELDS), (edge, EDGE_FIELDS)):
            without_id = context_row_tokens(dict(record, description=None), cells[2],
                                            "cl100k_base")
            assert without_id == (inner_cells_tokens(record, "cl100k_base")
                                  + number_tokens(np.array([last]), "cl100k_base")[0] + 1)
            assert row_tokens(record, fields, "cl100k_base") == \
                number_tokens(np.array([first]), "cl100k_base")[0] + without_id, record


def test_a_context_waits_only_for_the_reports_it_may_substitute():
    """With every report at its longest, replacing the hub's group is enough: only its
    report is needed; the tail's is not. A budget no substitution meets needs them all."""
    elements, children, everything = _two_sub_communities()
    members = [(child_id, child) for child_id, child, _ in children]
    assert sub_reports_needed(elements, np.arange(5), members, everything, 5) == []
    assert sub_reports_needed(elements, np.arange(5), members, everything - 20, 12) == [7]
    assert sub_reports_needed(elements, np.arange(5), members, 40, 200) == [7, 8]
    # Selected with the tail's report not written yet: the same context as with it.
    without_tail = [children[0], (8, children[1][1], None)]
    assert select_with_sub_reports(elements, np.arange(5), without_tail, everything - 20) \
        == select_with_sub_reports(elements, np.arange(5), children, everything - 20)
    # A context that needs a report not written says so.
    without_hub = [(7, children[0][1], None), children[1]]
    assert select_with_sub_reports(elements, np.arange(5), without_hub, everything - 20) is None


def test_edges_within_a_community_are_those_with_both_ends_in_it_by_combined_degree():
    """From each member's own edges (an index by node), the same edges in the same order
    as a scan of every edge gives."""
    rng = np.random.default_rng(1)
    nodes, count = 400, 2500
    sources, targets = rng.integers(0, nodes, count), rng.integers(0, nodes, count)
    combined = rng.integers(0, 20, count)
    elements = GraphElements(
        titles=[str(i) for i in range(nodes)], types=["X"] * nodes,
        degree=np.zeros(nodes, np.int64), edge_source=sources, edge_target=targets,
        combined_degree=combined, claims_by_entity={}, claim_tokens={},
        entity_tokens=np.ones(nodes, np.int64), edge_tokens=np.ones(count, np.int64),
        entity_numbers=np.arange(nodes), edge_numbers=np.arange(count))
    for size in (0, 1, 7, 60, 399, 400):
        members = rng.choice(nodes, size=size, replace=False)  # in no particular order
        inside = np.zeros(nodes, dtype=bool)
        inside[members] = True
        expected = np.flatnonzero(inside[sources] & inside[targets])
        expected = expected[np.lexsort((expected, -combined[expected]))]
        assert elements.edges_within(members).tolist() == expected.tolist()


def test_the_tokens_left_after_each_substitution_are_those_counted_afresh():
    """`_substitutions` counts the members left after each k substituted sub-communities in
    one pass; each k equals `element_tokens` of those members computed from scratch."""
    from graphrag_ray.index.reports.context import _substitutions

    rng = np.random.default_rng(3)
    nodes, count = 300, 900
    sources, targets = rng.integers(0, nodes, count), rng.integers(0, nodes, count)
    elements = GraphElements(
        titles=[str(i) for i in range(nodes)], types=["X"] * nodes,
        degree=np.zeros(nodes, np.int64), edge_source=sources, edge_target=targets,
        combined_degree=rng.integers(0, 9, count), claims_by_entity={},
        claim_tokens={int(n): rng.integers(1, 40, rng.integers(1, 4)).tolist()
                      for n in rng.choice(nodes, 30, replace=False)},
        entity_tokens=rng.integers(1, 60, nodes), edge_tokens=rng.integers(1, 30, count),
        entity_numbers=np.arange(nodes), edge_numbers=np.arange(count))
    for trial in range(20):
        members = rng.choice(nodes, size=rng.integers(0, nodes), replace=False)
        shuffled = rng.permutation(members)
        ranked = [np.sort(part) for part in np.array_split(shuffled, rng.integers(1, 6))
                  if len(part)][:rng.integers(1, 5)]
        remaining = np.unique(members)
        steps = list(_substitutions(elements, members, ranked))
        assert [k for k, _, _ in steps] == list(range(1, len(ranked) + 1))
        for (k, left, tokens), child in zip(steps, ranked):
            remaining = np.setdiff1d(remaining, child)
            assert np.array_equal(left(), remaining)
            assert tokens == elements.element_tokens(remaining), (trial, k)


def test_numbers_count_the_tokens_the_tokenizer_gives_them():
    values = np.concatenate([np.arange(0, 3000), [9_999, 10_000, 999_999, 1_000_000,
                                                  1_000_001, 10 ** 15, 10 ** 18 - 1],
                             np.random.default_rng(1).integers(0, 10 ** 12, 2000)])
    for encoding in ("cl100k_base", "o200k_base"):
        assert number_tokens(values, encoding).tolist() == [
            count_tokens(str(v), encoding) for v in values.tolist()]
