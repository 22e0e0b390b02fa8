from graphrag_ray.query.dynamic_selection import lexical_rating, select_reports


def _tree():
    """0 -> (2, 3), 1 -> (4); 2 -> (5, 6); 4 carries 1 down (same report)."""
    shape = {0: (-1, [2, 3]), 1: (-1, [4]), 2: (0, [5, 6]), 3: (0, []), 4: (1, []),
             5: (2, []), 6: (2, [])}
    return [{"community": c, "parent": p, "children": kids, "level": 0 if p < 0 else 1,
             "full_content": "report of 1" if c == 4 else f"report of {c}"}
            for c, (p, kids) in shape.items()]


def test_descends_only_below_relevant_parents_and_keeps_a_parent_without_relevant_children():
    relevant = {0, 2, 3}
    asked = []

    def rate(group):
        asked.append([r["community"] for r in group])
        return [5 if r["community"] in relevant else 0 for r in group]

    selection = select_reports(_tree(), rate, threshold=1)
    # 1 was rejected: its child 4 is never rated; 2 was relevant but 5 and 6 are not: 2 stays.
    assert asked == [[0, 1], [2, 3], [5, 6]]
    assert sorted(r["community"] for r in selection.selected) == [2, 3]
    assert 4 not in selection.ratings and selection.rating_calls == 6
    assert not selection.fell_back_to_roots


def test_carried_down_reports_reuse_their_rating_and_nothing_relevant_falls_back_to_roots():
    calls = []

    def rate(group):
        calls.extend(r["community"] for r in group)
        return [3 if r["community"] == 1 else 0 for r in group]

    selection = select_reports(_tree(), rate, threshold=1)
    assert [r["community"] for r in selection.selected] == [4]  # 1 hands over to its copy
    assert 4 not in calls and selection.ratings[4] == 3

    nothing = select_reports(_tree(), lambda group: [0] * len(group), threshold=1)
    assert nothing.fell_back_to_roots
    assert sorted(r["community"] for r in nothing.selected) == [0, 1]


def test_lexical_rating_counts_shared_content_words():
    assert lexical_rating("Who is Marley's ghost?", "The ghost of Marley, in chains") == 2
    assert lexical_rating("What are the themes?", "Scrooge counts money") == 0
