import numpy as np

from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.reports.schedule import _Schedule


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


def _too_big(community: Community) -> bool:
    return False


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
                         lambda community: True)
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
                         lambda community: community.id == 0)
    assert sorted(c.id for c in schedule.take_ready()) == [1, 2]
    schedule.summary_done(7)
    assert [c.id for c in schedule.take_ready()] == [0]  # children still running
    assert schedule.report_done(1) == [1] and schedule.report_done(2) == [2]
    assert schedule.take_ready() == []  # requested once
