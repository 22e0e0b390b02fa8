"""Head-to-head LLM judging, as the paper does it: for every question, every pair of
conditions and every metric, the judge sees the question, the metric's definition and both
answers and names the better one or a tie; each comparison runs `repeats` times with the
order of the answers swapped between repeats. Win rate = mean over repeats, then over
questions, a tie counting half."""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from graphrag_ray.errors import LLMError
from graphrag_ray.eval.records import RecordFile
from graphrag_ray.llm.client import ChatClient, MalformedReply, parse_json_object
from graphrag_ray.prompts_loader import render

METRICS = {
    "comprehensiveness": "How much detail does the answer give to cover all aspects and "
                         "details of the question?",
    "diversity": "How varied and rich is the answer in offering different perspectives and "
                 "insights on the question?",
    "empowerment": "How well does the answer help the reader understand the topic and make "
                   "informed judgements about it?",
    "directness": "How specifically and clearly does the answer address the question?",
}
TIE = 0


def parse_verdict(reply: str) -> tuple[int, str]:
    """1 or 2 for the winner, 0 for a tie; accepts "2", "Answer 2", "tie", "none"."""
    data = parse_json_object(reply)
    winner = data.get("winner")
    reason = str(data.get("reason", "")).strip()
    if winner is None or isinstance(winner, bool):
        raise ValueError(f"unreadable winner {winner!r}")
    if isinstance(winner, (int, float)) and winner in (0, 1, 2):
        return int(winner), reason
    text = str(winner).strip().lower()
    if text in ("tie", "none", "equal", "draw", "0", "neither"):
        return TIE, reason
    digits = re.findall(r"\b[12]\b", text)
    if len(set(digits)) == 1:
        return int(digits[0]), reason
    raise ValueError(f"unreadable winner {winner!r}")


def comparisons(question_ids: list[str], conditions: list[str], metrics: list[str],
                repeats: int) -> list[tuple[str, str, str, str, int]]:
    """(question, metric, a, b, repeat) for every unordered pair a < b (by condition order)."""
    return [(q, m, a, b, r) for q in question_ids for m in metrics
            for a, b in itertools.combinations(conditions, 2) for r in range(repeats)]


def shows_b_first(question_index: int, repeat: int, repeats: int) -> bool:
    """Which answer the judge sees first. Judgements of a pair alternate through questions and
    repeats together, so each condition is shown first in exactly half of them (one more for
    one side when questions x repeats is odd): with an odd number of repeats, alternating
    within each question alone would favour the first condition 3 to 2."""
    return (question_index * repeats + repeat) % 2 == 1


def judge_once(chat: ChatClient, template: str, question: str, metric: str, answer_a: str,
               answer_b: str, repeat: int, max_tokens: int, attempts: int, *,
               swapped: bool) -> dict:
    """`swapped`: B is shown first (`shows_b_first`); the verdict is mapped back to the
    conditions. A reply that cannot be read after `attempts` is recorded as failed."""
    first, second = (answer_b, answer_a) if swapped else (answer_a, answer_b)
    prompt = render(template, metric=metric, definition=METRICS[metric], question=question,
                    first_answer=first, second_answer=second)
    try:
        shown, reason = chat.complete_parsed(
            [{"role": "user", "content": prompt}], parse_verdict, max_tokens=max_tokens,
            cache_tag=f"repeat-{repeat}-attempt-{{attempt}}", retries=attempts - 1,
            kind="eval_judge")
    except MalformedReply as exc:
        return {"swapped": swapped, "winner": None, "reason": "",
                "error": f"malformed verdict: {exc}"}
    except LLMError as exc:
        return {"swapped": swapped, "winner": None, "reason": "", "error": str(exc)}
    winner = "tie" if shown == TIE else ("a" if (shown == 1) != swapped else "b")
    return {"swapped": swapped, "winner": winner, "reason": reason, "error": None}


def judge_answers(answers: dict[tuple[str, str], dict], conditions: list[str],
                  metrics: list[str], repeats: int, chat: ChatClient, template: str,
                  judgments: RecordFile, concurrency: int, max_tokens: int, attempts: int,
                  progress: Callable[[str], None]) -> int:
    question_ids = sorted({q for q, _ in answers})
    missing = [(q, c) for q in question_ids for c in conditions if (q, c) not in answers]
    if missing:
        raise LLMError(f"{len(missing)} answers are missing (first: question {missing[0][0]}, "
                       f"condition {missing[0][1]}); run `eval answer` first")
    done = judgments.done_keys()
    todo = [c for c in comparisons(question_ids, conditions, metrics, repeats) if c not in done]
    progress(f"{len(todo)} judgements to make ({len(done)} already done)")

    position = {question_id: index for index, question_id in enumerate(question_ids)}

    def judge(item: tuple[str, str, str, str, int]) -> None:
        question_id, metric, a, b, repeat = item
        verdict = judge_once(chat.scoped(), template, answers[question_id, a]["question"],
                             metric, answers[question_id, a]["answer"],
                             answers[question_id, b]["answer"], repeat, max_tokens, attempts,
                             swapped=shows_b_first(position[question_id], repeat, repeats))
        judgments.append({"question_id": question_id, "metric": metric, "a": a, "b": b,
                          "repeat": repeat, **verdict})

    with ThreadPoolExecutor(concurrency) as pool:
        for number, _ in enumerate(pool.map(judge, todo), start=1):
            if number % 50 == 0 or number == len(todo):
                progress(f"judged {number}/{len(todo)}")
    return len(todo)


def order_effect(judgments: list[dict]) -> dict:
    """How often the answer shown first won, among decided verdicts (0.5: no effect), and how
    often each side was shown first."""
    decided = [j for j in judgments if j.get("winner") in ("a", "b")]
    first_won = sum(1 for j in decided if (j["winner"] == "a") != bool(j["swapped"]))
    return {"decided": len(decided),
            "first_shown_won": first_won / len(decided) if decided else None,
            "a_shown_first": sum(1 for j in judgments if not j["swapped"]),
            "b_shown_first": sum(1 for j in judgments if j["swapped"])}


def win_rates(judgments: list[dict], conditions: list[str],
              metrics: list[str]) -> dict[str, dict[str, dict[str, float | None]]]:
    """metric -> row condition -> column condition -> share of wins of row over column.
    Per question: mean over its readable repeats (win 1, tie 0.5, loss 0); then the mean over
    questions. Failed judgements are left out."""
    scores: dict[tuple, list[float]] = defaultdict(list)
    for j in judgments:
        if j.get("winner") in ("a", "b", "tie"):
            scores[j["metric"], j["a"], j["b"], j["question_id"]].append(
                {"a": 1.0, "tie": 0.5, "b": 0.0}[j["winner"]])
    by_pair: dict[tuple, list[float]] = defaultdict(list)
    for (metric, a, b, _), values in scores.items():
        by_pair[metric, a, b].append(sum(values) / len(values))
    matrices = {}
    for metric in metrics:
        matrix: dict[str, dict[str, float | None]] = {
            row: {column: None for column in conditions} for row in conditions}
        for a, b in itertools.combinations(conditions, 2):
            values = by_pair.get((metric, a, b)) or by_pair.get((metric, b, a))
            if not values:
                continue
            rate = sum(values) / len(values)
            if (metric, a, b) not in by_pair:
                rate = 1.0 - rate
            matrix[a][b], matrix[b][a] = rate, 1.0 - rate
        matrices[metric] = matrix
    return matrices
