"""What the explorer's site holds for one community (the browser test covers the page)."""

from graphrag_ray.explore import site


def test_a_community_larger_than_the_graph_cap_draws_its_best_connected_members(monkeypatch):
    monkeypatch.setattr(site, "MAX_GRAPH_NODES", 2)
    entities = [{"title": t, "type": "PERSON", "degree": d, "x": 0.0, "y": 0.0,
                 "description": ""} for t, d in (("A", 3), ("B", 2), ("C", 1), ("D", 1))]
    relationships = [{"source": s, "target": t, "weight": 1.0, "description": ""}
                     for s, t in (("A", "B"), ("A", "C"), ("B", "C"), ("A", "D"))]
    neighbours = {0: [(1.0, 1, 0), (1.0, 2, 1), (1.0, 3, 3)], 1: [(1.0, 0, 0), (1.0, 2, 2)],
                  2: [(1.0, 0, 1), (1.0, 1, 2)], 3: [(1.0, 0, 3)]}
    view = site._community_view({"entity_ids": ["a", "b", "c"], "level": 0, "size": 3}, None,
                                entities, {"a": 0, "b": 1, "c": 2, "d": 3}, neighbours,
                                relationships)
    assert [n[0] for n in view["graph"]["nodes"]] == ["A", "B"]  # C (a member) is past the cap
    assert [sorted(e[:2]) for e in view["graph"]["edges"]] == [[0, 1]]
    assert view["graph"]["members_total"] == 3
