import json

import pytest

from graphrag_ray.eval.judge import (
    comparisons, judge_once, order_effect, parse_verdict, shows_b_first, win_rates)
from graphrag_ray.llm.client import ChatClient


@pytest.mark.parametrize("reply, verdict", [
    ('{"winner": 1, "reason": "more detail"}', 1),
    ('```json\n{"reason": "same", "winner": 0}\n```', 0),
    ('{"winner": "Answer 2", "reason": "x"}', 2),
    ('{"winner": "tie"}', 0),
    ('{"winner": "2"}', 2),
])
def test_verdicts_are_read_in_the_forms_models_write_them(reply, verdict):
    assert parse_verdict(reply)[0] == verdict


@pytest.mark.parametrize("reply", ["Answer 1 is better.", '{"winner": "both 1 and 2"}',
                                   '{"winner": true}', '{"reason": "no verdict"}'])
def test_unreadable_verdicts_raise(reply):
    with pytest.raises(ValueError):
        parse_verdict(reply)


class ScriptedChat:
    """Replies in turn; records the prompts it was shown."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.prompts = []
        self.cache_tags = []

    def complete(self, messages, max_tokens, cache_tag="", kind=None, urgency=0):
        self.prompts.append(messages[0]["content"])
        self.cache_tags.append(cache_tag)
        return self.replies.pop(0)

    # The client's own parse-and-retry, over the scripted replies.
    complete_parsed = ChatClient.complete_parsed


def test_order_swaps_between_repeats_and_the_verdict_maps_back():
    template = "{metric}|{definition}|{question}|{first_answer}|{second_answer}"
    chat = ScriptedChat(['{"winner": 1}', '{"winner": 1}'])
    first = judge_once(chat, template, "Q", "directness", "ANSWER-A", "ANSWER-B", 0, 10, 1,
                       swapped=False)
    second = judge_once(chat, template, "Q", "directness", "ANSWER-A", "ANSWER-B", 1, 10, 1,
                        swapped=True)
    assert chat.prompts[0].endswith("ANSWER-A|ANSWER-B")
    assert chat.prompts[1].endswith("ANSWER-B|ANSWER-A")
    # "Answer 1" both times: A in the first repeat, B in the swapped one.
    assert (first["winner"], first["swapped"]) == ("a", False)
    assert (second["winner"], second["swapped"]) == ("b", True)


def test_a_malformed_reply_is_retried_then_recorded_as_failed():
    chat = ScriptedChat(["no json", '{"winner": 2}'])
    verdict = judge_once(chat, "{first_answer}{second_answer}", "Q", "diversity", "a", "b", 0, 10, 2,
                         swapped=False)
    assert verdict["winner"] == "b" and verdict["error"] is None
    # Each attempt has its own cache key: the retry is never the cached malformed reply.
    assert chat.cache_tags == ["repeat-0-attempt-0", "repeat-0-attempt-1"]
    failed = judge_once(ScriptedChat(["no", "nope"]), "{first_answer}", "Q", "diversity", "a",
                        "b", 0, 10, 2, swapped=False)
    assert failed["winner"] is None and "malformed" in failed["error"]


def test_win_rate_arithmetic_on_a_hand_made_example():
    def j(question, winner, repeat, a="C0", b="TS", metric="comprehensiveness"):
        return {"question_id": question, "metric": metric, "a": a, "b": b, "repeat": repeat,
                "winner": winner}

    judgments = [
        # q1: C0 wins 2 of 4 repeats, one tie, one loss -> (1 + 1 + 0.5 + 0) / 4 = 0.625
        j("q1", "a", 0), j("q1", "a", 1), j("q1", "tie", 2), j("q1", "b", 3),
        # q2: C0 wins the one readable repeat; the failed one is left out -> 1.0
        j("q2", "a", 0), j("q2", None, 1),
    ]
    matrix = win_rates(judgments, ["C0", "TS", "SS"], ["comprehensiveness"])["comprehensiveness"]
    assert matrix["C0"]["TS"] == pytest.approx((0.625 + 1.0) / 2)
    assert matrix["TS"]["C0"] == pytest.approx(1 - (0.625 + 1.0) / 2)
    assert matrix["C0"]["SS"] is None and matrix["C0"]["C0"] is None


def test_every_pair_metric_and_repeat_is_compared_once():
    items = comparisons(["q1", "q2"], ["C0", "C1", "TS"], ["diversity", "directness"], 5)
    assert len(items) == 2 * 2 * 3 * 5 == len(set(items))
    assert json.dumps(items[0]) == '["q1", "diversity", "C0", "C1", 0]'


def test_each_condition_of_a_pair_is_shown_first_in_exactly_half_the_judgements():
    """Five repeats per question: alternating within a question alone shows A first 3 times
    in 5, which a judge that favours "answer 1" turns into a 60% win rate for A."""
    for questions, repeats in ((4, 5), (2, 5), (3, 4), (6, 1)):
        shown = [shows_b_first(q, r, repeats) for q in range(questions) for r in range(repeats)]
        assert shown.count(True) == shown.count(False)
    # A judge that always picks the first answer: no condition wins by it.
    judgments = [{"question_id": f"q{q}", "metric": "m", "a": "C0", "b": "SS", "repeat": r,
                  "swapped": shows_b_first(q, r, 5),
                  "winner": "b" if shows_b_first(q, r, 5) else "a"}
                 for q in range(4) for r in range(5)]
    assert win_rates(judgments, ["C0", "SS"], ["m"])["m"]["C0"]["SS"] == pytest.approx(0.5)
    assert order_effect(judgments)["first_shown_won"] == 1.0
