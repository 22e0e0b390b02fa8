import numpy as np

from graphrag_ray.index.communities import Community
from graphrag_ray.index.summaries_and_reports import _Schedule


def _tree() -> list[Community]:
    """P = {0,1,2,3} above leaves A = {0,1} and B = {2,3}."""
    return [Community(0, 0, -1, np.array([0, 1, 2, 3]), children=[1, 2]),
            Community(1, 1, 0, np.array([0, 1])),
            Community(2, 1, 0, np.array([2, 3]))]


def test_report_waits_for_the_summaries_inside_and_for_its_children():
    communities = _tree()
    # Entity 0's summary is pending (inside P and A); so is an edge 1-2 (inside P only).
    schedule = _Schedule(communities, {c.id: c for c in communities},
                         {0: [0, 1], 7: [0]})
    assert [c.id for c in schedule.take_ready()] == [2]  # B has nothing pending
    schedule.summary_done(0)
    assert [c.id for c in schedule.take_ready()] == [1]
    assert schedule.report_done(1) == [1] and schedule.take_ready() == []
    assert schedule.report_done(2) == [2]
    assert schedule.take_ready() == []  # children done, but the edge inside P is not
    schedule.summary_done(7)
    assert [c.id for c in schedule.take_ready()] == [0]
    assert schedule.take_ready() == []  # requested once


def test_parent_waits_for_its_last_child_even_with_summaries_done():
    communities = _tree()
    schedule = _Schedule(communities, {c.id: c for c in communities}, {})
    assert sorted(c.id for c in schedule.take_ready()) == [1, 2]
    schedule.report_done(2)
    assert schedule.take_ready() == []
    schedule.report_done(1)
    assert [c.id for c in schedule.take_ready()] == [0]


def test_carried_down_parent_shares_its_childs_report():
    communities = [Community(0, 0, -1, np.array([0, 1]), children=[1]),
                   Community(1, 1, 0, np.array([0, 1]))]
    schedule = _Schedule(communities, {c.id: c for c in communities}, {5: [0, 1]})
    assert schedule.take_ready() == []
    schedule.summary_done(5)
    assert [c.id for c in schedule.take_ready()] == [1]
    assert schedule.report_done(1) == [1, 0]  # the one report serves both
    assert schedule.take_ready() == []
