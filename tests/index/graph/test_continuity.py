import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray.config import CommunitiesConfig
from graphrag_ray.index.graph.communities import Community, build_graph, hierarchical_leiden
from graphrag_ray.index.graph.continuity import (
    PreviousPartition, adjusted_rand_index, carry_ids, level0_similarity)


def _previous(communities: list[tuple[int, int, list[str]]], entity_ids: list[str]):
    table = pa.table({"community": [c for c, _, _ in communities],
                      "level": [lvl for _, lvl, _ in communities],
                      "entity_ids": [m for _, _, m in communities]})
    return PreviousPartition.from_tables(table, entity_ids)


def test_adjusted_rand_index_of_known_partitions():
    assert adjusted_rand_index(np.array([0, 0, 1, 1]), np.array([5, 5, 9, 9])) == 1.0
    # One member of a triple moved out on its own: pairs together in both 4, expected
    # 6 * 4 / 15, maximum (6 + 4) / 2, so (4 - 1.6) / (5 - 1.6) = 12/17.
    first, second = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 2, 2, 2])
    assert adjusted_rand_index(first, second) == pytest.approx(12 / 17)
    assert abs(adjusted_rand_index(np.arange(8) % 2, np.arange(8) // 4)) < 0.3


def test_ids_follow_a_majority_of_members_both_ways():
    ids = [f"e{i}" for i in range(8)]
    previous = _previous([(10, 0, ["e0", "e1", "e2"]), (11, 0, ["e3", "e4", "e5"]),
                          (12, 0, ["e6", "e9"])], ids)  # e9 was deleted
    now = [Community(0, 0, -1, np.array([0, 1, 2])),  # same members: kept
           Community(1, 0, -1, np.array([3, 4, 5, 6])),  # 3 of 4, 3 of 3: changed
           Community(2, 0, -1, np.array([7]))]  # a new entity alone: new
    figures = carry_ids(now, previous)
    assert [c.id for c in now] == [10, 11, 13]
    assert figures == {"0": {"kept": 1, "changed": 1, "new": 1, "gone": 1}}


def test_parents_and_children_follow_the_new_ids():
    previous = _previous([(4, 0, ["a", "b"]), (7, 1, ["a"]), (8, 1, ["b"])], ["a", "b"])
    parent = Community(0, 0, -1, np.array([0, 1]), children=[1, 2])
    now = [parent, Community(1, 1, 0, np.array([0])), Community(2, 1, 0, np.array([1]))]
    carry_ids(now, previous)
    assert (parent.id, parent.children) == (4, [7, 8])
    assert [c.parent for c in now[1:]] == [4, 4]


def test_warm_started_leiden_keeps_the_partition_of_an_unchanged_graph():
    """Two dense groups; the previous partition is the one Leiden finds: started from it on
    the same graph plus one new node, every old node stays where it was."""
    rng = np.random.default_rng(3)
    edges = [(i, j) for group in (range(0, 10), range(10, 20)) for i in group for j in group
             if i < j and rng.random() < 0.7] + [(0, 10), (20, 0), (20, 1)]
    sources, targets = (np.array(x) for x in zip(*edges))
    config = CommunitiesConfig(max_cluster_size=100)
    graph = build_graph(21, sources, targets, np.ones(len(edges)))
    cold = hierarchical_leiden(graph, config)
    ids = [f"e{i}" for i in range(21)]
    previous = _previous([(c.id + 100, c.level, [ids[m] for m in c.members if m != 20])
                          for c in cold], ids)
    warm = hierarchical_leiden(graph, config, previous)
    carry_ids(warm, previous)
    assert level0_similarity(warm, previous, 21) == 1.0
    assert sorted(c.id for c in warm if c.level == 0) == \
        sorted(c.id + 100 for c in cold if c.level == 0)


def _kept(communities: list[tuple[int, int, list[str]]], entity_ids: list[str],
          known: list[str]):
    table = pa.table({"community": [c for c, _, _ in communities],
                      "level": [lvl for _, lvl, _ in communities],
                      "entity_ids": [m for _, _, m in communities]})
    return PreviousPartition.from_tables(table, entity_ids, set(known))


def test_a_kept_partition_holds_its_entities_and_places_only_the_new_ones():
    """Another tool's partition (not Leiden's optimum here: one dense group cut in two, and
    a group of 6 it never split though the limit is 4) is kept as it was: the cut stays,
    the unsplit group stays whole, the entity it left out stays out, and a new entity joins
    the community it is linked to, at every level."""
    dense = [(i, j) for i in range(6) for j in range(6) if i < j]
    ring = [(6 + i, 6 + (i + 1) % 6) for i in range(6)]
    edges = dense + ring + [(0, 6), (13, 6), (12, 0), (12, 1), (12, 2)]
    sources, targets = (np.array(x) for x in zip(*edges))
    graph = build_graph(14, sources, targets, np.ones(len(edges)))
    ids = [f"e{i}" for i in range(14)]
    name = lambda *nodes: [ids[n] for n in nodes]  # noqa: E731
    previous = _kept([(0, 0, name(0, 1, 2, 3, 4, 5)), (1, 0, name(6, 7, 8, 9, 10, 11)),
                      (2, 1, name(0, 1, 2)), (3, 1, name(3, 4, 5))],
                     ids, known=ids[:12] + ids[13:])  # e12 is new; e13 was left out
    communities = hierarchical_leiden(graph, CommunitiesConfig(max_cluster_size=4),
                                      previous)
    figures = carry_ids(communities, previous)
    members = {(c.level, c.id): c.members.tolist() for c in communities}
    assert members[(0, 0)] == [0, 1, 2, 3, 4, 5, 12]
    assert members[(0, 1)] == [6, 7, 8, 9, 10, 11]
    assert members[(1, 2)] == [0, 1, 2, 12] and members[(1, 3)] == [3, 4, 5]
    assert all(13 not in m for m in members.values())
    # The unsplit group is carried down whole (a new id at the new level), nothing else.
    assert sorted(m for (level, _), m in members.items() if level == 1) == \
        [[0, 1, 2, 12], [3, 4, 5], [6, 7, 8, 9, 10, 11]]
    assert figures["0"] == {"kept": 1, "changed": 1, "new": 0, "gone": 0}


def test_a_kept_community_that_grew_past_the_limit_is_split():
    """Two pairs it kept together (4 entities, the limit) gain a new entity each: six,
    split at the next level."""
    edges = [(0, 1), (2, 3), (1, 2), (4, 0), (4, 1), (5, 2), (5, 3)]
    sources, targets = (np.array(x) for x in zip(*edges))
    graph = build_graph(6, sources, targets, np.ones(len(edges)))
    ids = [f"e{i}" for i in range(6)]
    previous = _kept([(0, 0, ids[:4])], ids, known=ids[:4])  # e4, e5 are new
    communities = hierarchical_leiden(graph, CommunitiesConfig(max_cluster_size=4),
                                      previous)
    carry_ids(communities, previous)
    top = next(c for c in communities if c.level == 0)
    assert (top.id, top.members.tolist()) == (0, [0, 1, 2, 3, 4, 5])
    assert sorted(c.members.tolist() for c in communities if c.level == 1) == \
        [[0, 1, 4], [2, 3, 5]]


def test_an_update_reclusters_only_the_communities_it_touched():
    """Three dense groups; the previous partition cut group A in two (not Leiden's optimum,
    which a warm start on the whole graph would mend). The update touched a node of group B
    and added a node linked to it: B is clustered again and takes the new node; A's two
    halves and C, untouched, keep their communities without Leiden looking at them."""
    groups = [range(0, 8), range(8, 16), range(16, 24)]
    edges = [(i, j) for group in groups for i in group for j in group if i < j]
    edges += [(0, 8), (8, 16), (24, 9), (24, 10)]
    sources, targets = (np.array(x) for x in zip(*edges))
    graph = build_graph(25, sources, targets, np.ones(len(edges)))
    ids = [f"e{i}" for i in range(25)]
    name = lambda nodes: [ids[n] for n in nodes]  # noqa: E731
    table = pa.table({"community": [0, 1, 2, 3], "level": [0, 0, 0, 0],
                      "entity_ids": [name(range(0, 4)), name(range(4, 8)), name(range(8, 16)),
                                     name(range(16, 24))]})
    touched = np.zeros(25, dtype=bool)
    touched[[9, 10, 24]] = True  # B's two nodes at the ends of new relationships; the new one
    config = CommunitiesConfig(max_cluster_size=100)
    previous = PreviousPartition.from_tables(table, ids, touched=touched)
    communities = hierarchical_leiden(graph, config, previous)
    figures = carry_ids(communities, previous)
    members = sorted(c.members.tolist() for c in communities)
    assert members == [list(range(0, 4)), list(range(4, 8)), list(range(8, 16)) + [24],
                       list(range(16, 24))]
    assert figures["0"] == {"kept": 3, "changed": 1, "new": 0, "gone": 0}
    # Without the touched set, the warm start on the whole graph mends A's cut.
    whole = hierarchical_leiden(graph, config, PreviousPartition.from_tables(table, ids))
    assert list(range(0, 8)) in [c.members.tolist() for c in whole]


def test_in_a_touched_community_only_the_touched_entities_move():
    """The previous partition cut group B in two halves (not Leiden's optimum). The update
    touched one node of the first half and added a node linked to it: the untouched nodes
    keep their halves (their relationships are as they were), and only the touched ones
    are placed again, so the cut stays where re-clustering B whole would mend it."""
    groups = [range(0, 8), range(8, 16)]
    edges = [(i, j) for group in groups for i in group for j in group if i < j]
    edges += [(0, 8), (16, 9), (16, 10)]
    sources, targets = (np.array(x) for x in zip(*edges))
    graph = build_graph(17, sources, targets, np.ones(len(edges)))
    ids = [f"e{i}" for i in range(17)]
    name = lambda nodes: [ids[n] for n in nodes]  # noqa: E731
    table = pa.table({"community": [0, 1, 2], "level": [0, 0, 0],
                      "entity_ids": [name(range(0, 8)), name(range(8, 12)),
                                     name(range(12, 16))]})
    touched = np.zeros(17, dtype=bool)
    touched[[9, 10, 16]] = True
    config = CommunitiesConfig(max_cluster_size=100)
    communities = hierarchical_leiden(
        graph, config, PreviousPartition.from_tables(table, ids, touched=touched))
    label = {int(m): c.id for c in communities for m in c.members}
    assert len({label[n] for n in range(0, 8)}) == 1
    assert label[8] == label[11] != label[12] == label[13] == label[14] == label[15]
    assert label[0] != label[8] and label[0] != label[12]
    whole = hierarchical_leiden(graph, config, PreviousPartition.from_tables(table, ids))
    assert any(set(range(8, 16)) <= set(c.members.tolist()) for c in whole)


def test_an_untouched_community_keeps_its_whole_subtree():
    """Two groups split at level 1 in a way Leiden would not split them: the update touched
    the second group only, so the first keeps its level-1 communities as they were (Leiden
    and the provenance votes are not asked), while the second's are worked out again."""
    groups = [range(0, 6), range(6, 12)]
    edges = [(i, j) for group in groups for i in group for j in group if i < j]
    edges += [(0, 6), (12, 7)]
    sources, targets = (np.array(x) for x in zip(*edges))
    graph = build_graph(13, sources, targets, np.ones(len(edges)))
    ids = [f"e{i}" for i in range(13)]
    name = lambda nodes: [ids[n] for n in nodes]  # noqa: E731
    odd_split = [[0, 2, 4], [1, 3, 5]], [[6, 8, 10], [7, 9, 11]]
    table = pa.table({
        "community": [0, 1, 2, 3, 4, 5], "level": [0, 0, 1, 1, 1, 1],
        "entity_ids": [name(range(0, 6)), name(range(6, 12)),
                       *[name(part) for split in odd_split for part in split]]})
    touched = np.zeros(13, dtype=bool)
    touched[[7, 12]] = True
    previous = PreviousPartition.from_tables(table, ids, touched=touched)
    communities = hierarchical_leiden(graph, CommunitiesConfig(max_cluster_size=4), previous)
    carry_ids(communities, previous)
    level1 = {c.id: c.members.tolist() for c in communities if c.level == 1}
    assert level1[2] == [0, 2, 4] and level1[3] == [1, 3, 5]
    assert previous.unchanged_parts(1, np.arange(6), np.zeros(13, bool)) is not None
    assert previous.unchanged_parts(1, np.arange(6, 13), np.zeros(13, bool)) is None
