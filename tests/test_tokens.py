from graphrag_ray.tokens import count_tokens, take_within_budget


def test_packing_stops_at_the_first_miss_or_skips_it():
    texts = ["one two", "three " * 50, "four"]
    costs = [count_tokens(t) + 1 for t in texts]
    budget = costs[0] + costs[2]  # room for the first and the last, not the long middle one
    assert take_within_budget(texts, budget) == ([0], costs[0])
    assert take_within_budget(texts, budget, skip_misses=True) == ([0, 2], budget)
    assert take_within_budget(texts, budget, used=budget) == ([], budget)
