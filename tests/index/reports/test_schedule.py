import numpy as np

from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.graph.description_blocks import DescriptionAddresses
from graphrag_ray.index.reports.schedule import _Schedule, _summary_order


def _tree() -> list[Community]:
    """P = {0,1,2,3} above leaves A = {0,1} and B = {2,3}."""
    return [Community(0, 0, -1, np.array([0, 1, 2, 3]), children=[1, 2]),
            Community(1, 1, 0, np.array([0, 1])),
            Community(2, 1, 0, np.array([2, 3]))]


def test_report_waits_for_the_summaries_inside_and_for_its_children():
    communities = _tree()
    # Entity 0's summary is pending (inside P and A); so is an edge 1-2 (inside P only).
    schedule = _Schedule(communities, {c.id: c for c in communities},
                         {0: [0, 1], 7: [0]}, _too_big)
    assert [c.id for c in schedule.take_ready()] == [2]  # B has nothing pending
    schedule.summary_done(0)
    assert [c.id for c in schedule.take_ready()] == [1]
    assert schedule.report_done(1) == [1] and schedule.take_ready() == []
    assert schedule.report_done(2) == [2]
    assert schedule.take_ready() == []  # children done, but the edge inside P is not
    schedule.summary_done(7)
    assert [c.id for c in schedule.take_ready()] == [0]
    assert schedule.take_ready() == []  # requested once


def _too_big(community: Community) -> list[int]:
    """Needs every sub-community's report."""
    return list(community.children)


def test_parent_waits_for_its_last_child_even_with_summaries_done():
    communities = _tree()
    schedule = _Schedule(communities, {c.id: c for c in communities}, {}, _too_big)
    assert sorted(c.id for c in schedule.take_ready()) == [1, 2]
    schedule.report_done(2)
    assert schedule.take_ready() == []
    schedule.report_done(1)
    assert [c.id for c in schedule.take_ready()] == [0]


def test_carried_down_parent_shares_its_childs_report():
    communities = [Community(0, 0, -1, np.array([0, 1]), children=[1]),
                   Community(1, 1, 0, np.array([0, 1]))]
    # Even when its elements fit, it does not request a report of its own.
    schedule = _Schedule(communities, {c.id: c for c in communities}, {5: [0, 1]},
                         lambda community: [])
    assert schedule.take_ready() == []
    schedule.summary_done(5)
    assert [c.id for c in schedule.take_ready()] == [1]
    assert schedule.report_done(1) == [1, 0]  # the one report serves both
    assert schedule.take_ready() == []


def test_parent_whose_elements_fit_starts_once_its_summaries_are_final():
    """It needs none of its children's reports (the paper substitutes them only when the
    elements do not fit), so it does not wait for them."""
    communities = _tree()
    schedule = _Schedule(communities, {c.id: c for c in communities}, {7: [0]},
                         lambda community: [] if community.id == 0 else community.children)
    assert sorted(c.id for c in schedule.take_ready()) == [1, 2]
    schedule.summary_done(7)
    assert [c.id for c in schedule.take_ready()] == [0]  # children still running
    assert schedule.report_done(1) == [1] and schedule.report_done(2) == [2]
    assert schedule.take_ready() == []  # requested once


def test_parent_waits_only_for_the_reports_its_context_substitutes():
    """P's context takes A's report in place of A's elements and keeps B's: B's report,
    still being written, is not waited for."""
    communities = _tree()
    schedule = _Schedule(communities, {c.id: c for c in communities}, {},
                         lambda community: [1] if community.id == 0 else [])
    assert sorted(c.id for c in schedule.take_ready()) == [1, 2]
    schedule.report_done(2)
    assert schedule.take_ready() == []  # A's report is the one it takes
    schedule.report_done(1)
    assert [c.id for c in schedule.take_ready()] == [0]


def test_a_context_that_needs_more_reports_than_assumed_waits_for_every_child():
    communities = _tree()
    schedule = _Schedule(communities, {c.id: c for c in communities}, {},
                         lambda community: [1] if community.id == 0 else [])
    schedule.take_ready()
    schedule.report_done(1)
    assert [c.id for c in schedule.take_ready()] == [0]
    schedule.wait_for_all_children(0)  # A's report came out longer than any report may be
    assert schedule.take_ready() == []
    schedule.report_done(2)
    assert [c.id for c in schedule.take_ready()] == [0]
    assert schedule.take_ready() == []


def test_dependents_count_the_reports_above_that_wait_on_one():
    """G = {0..5} takes P's report; P = {0..3} takes A's (not B's); C = {4, 5} is taken by
    nobody... until G's context is known: A has two waiting above it, B none."""
    communities = [Community(0, 0, -1, np.arange(6), children=[1, 2]),
                   Community(1, 1, 0, np.array([0, 1, 2, 3]), children=[3, 4]),
                   Community(2, 1, 0, np.array([4, 5])),
                   Community(3, 2, 1, np.array([0, 1])),
                   Community(4, 2, 1, np.array([2, 3]))]
    needs = {0: [1], 1: [3]}
    schedule = _Schedule(communities, {c.id: c for c in communities}, {},
                         lambda community: needs.get(community.id, []))
    assert [schedule.dependents(i) for i in (3, 4, 1, 2, 0)] == [2, 0, 1, 0, 0]


def test_summaries_go_community_by_community_the_longest_description_lists_first():
    """Depth first (P, then A before B: the same height and size, so by id); an element
    goes with the deepest community holding it, and within one the element with the most
    descriptions goes first (its summary takes longest); elements no community holds last."""
    communities = _tree()
    by_id = {c.id: c for c in communities}
    # Keys 0-3 entities; 4 an edge inside A; 5 held by nobody. Blocks: key order.
    addresses = DescriptionAddresses([None] * 6, np.arange(6), np.zeros(6))
    holding = {0: [0, 1], 1: [0, 1], 2: [0, 2], 3: [0, 2], 4: [0, 1]}
    counts = np.array([2, 5, 9, 3, 7, 40])
    order = _summary_order(np.arange(6), counts, addresses, holding, communities, by_id)
    assert order == [4, 1, 0, 2, 3, 5]
