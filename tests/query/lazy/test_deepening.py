"""Iterative deepening over a community tree, with a test that is a plain rule: what is tested
when, what is pruned, what opens, and that the budget is never passed."""

import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray.query.lazy.deepening import OUTSIDE, community_tree, deepen

UNITS = [f"u{i}" for i in range(12)]


def tree():
    """Roots 0 (u0-u5) and 1 (u6-u9); 0 splits into 2 (u0-u2) and 3 (u3-u5); 1 is carried
    down unchanged as 4, which splits into 5 (u6, u7) and 6 (u8, u9); u10, u11 in none."""
    rows = [(0, 0, -1, [2, 3], UNITS[0:6]), (1, 0, -1, [4], UNITS[6:10]),
            (2, 1, 0, [], UNITS[0:3]), (3, 1, 0, [], UNITS[3:6]),
            (4, 1, 1, [5, 6], UNITS[6:10]), (5, 2, 4, [], UNITS[6:8]),
            (6, 2, 4, [], UNITS[8:10])]
    return community_tree(pa.Table.from_pylist([
        {"community": c, "level": lv, "parent": p, "children": ch, "text_unit_ids": u}
        for c, lv, p, ch, u in rows]), UNITS)


def test_the_tree_holds_every_unit_and_looks_through_carried_down_communities():
    t = tree()
    assert t.roots == [OUTSIDE, 0, 1]
    assert t.units[OUTSIDE].tolist() == [10, 11]
    assert t.opened(0) == [2, 3]
    assert t.opened(1) == [5, 6]  # 4 only carries 1 down a level
    assert t.opened(2) == []


def test_irrelevant_communities_are_pruned_and_relevant_ones_opened():
    similarity = np.linspace(1.0, 0.0, len(UNITS))  # u0 best
    relevant = {4}  # only u4 (in community 3) answers
    rounds = []

    def test(probes):
        rounds.append([(p.community, p.unit) for p in probes])
        return [p.unit in relevant for p in probes]

    outcome = deepen(tree(), [similarity], budget=100, round_size=100, units_per_community=2,
                     test=test)
    # Round 1: the best two units of each root; u4 is not among root 0's best two, so every
    # root is pruned and nothing is found: best-first is only as good as the ranking.
    assert rounds[0] == [(0, 0), (0, 1), (1, 6), (1, 7), (OUTSIDE, 10), (OUTSIDE, 11)]
    assert outcome.rounds == 1 and not outcome.relevant
    assert outcome.communities_pruned == 3

    relevant = {1, 4}
    rounds.clear()
    outcome = deepen(tree(), [similarity], budget=100, round_size=100, units_per_community=2,
                     test=test)
    # u1 is relevant: root 0 opens 2 and 3; 2 tests u2 (its only untested unit), 3 tests u3, u4.
    assert rounds[1] == [(2, 2), (3, 3), (3, 4)]
    assert {(p.community, p.unit) for p in outcome.relevant} == {(0, 1), (3, 4)}
    assert outcome.communities_opened == 1 and outcome.deepest_level == 1
    # 3 is a relevant leaf: it tests its last unit, u5, then nothing is left.
    assert rounds[2] == [(3, 5)] and outcome.rounds == 3


@pytest.mark.parametrize("budget", [1, 5, 7, 40])
def test_the_budget_is_never_passed(budget):
    similarity = np.random.default_rng(3).random(len(UNITS))
    calls = []

    def test(probes):
        calls.append(len(probes))
        return [True] * len(probes)  # everything relevant: the search never stops by itself

    outcome = deepen(tree(), [similarity, similarity[::-1].copy()], budget=budget,
                     round_size=4, units_per_community=1, test=test)
    assert sum(calls) == len(outcome.probes) <= budget
    assert all(n <= 4 for n in calls)
    # A unit is tested at most once per sub-question.
    assert len({(p.question, p.unit) for p in outcome.probes}) == len(outcome.probes)
    if budget >= 2 * len(UNITS):
        assert len(outcome.probes) == 2 * len(UNITS)  # all of it, when the budget allows
    else:
        assert len(outcome.probes) == budget
