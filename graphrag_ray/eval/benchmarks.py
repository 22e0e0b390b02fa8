"""Multi-hop QA question files as the field publishes them, read into one shape: each
question's text, its short answers, and its supporting passages (by id, or by title and
text), so that a method's cited text units can be matched to them.

Layouts read (by their fields, not their file names):
- the shared one (`questions.json` of id, question, answer, supporting_passages: passage ids,
  with `corpus.jsonl` beside it: id, title, text);
- HotpotQA and 2WikiMultiHopQA (`supporting_facts`: [title, sentence] pairs, `context`:
  [title, sentences] pairs), as their releases and HippoRAG's samples keep them;
- MuSiQue (`paragraphs` of title, paragraph_text, is_supporting; `answer_aliases`).
A JSON list or JSON lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from graphrag_ray.errors import GraphRagError


@dataclass
class Gold:
    """A supporting passage: its id in the corpus file when known, its title, its text when
    the question file gives it."""
    title: str
    text: str | None = None
    id: str | None = None


@dataclass
class Question:
    id: str
    question: str
    answers: list[str]
    supporting: list[Gold]
    kind: str = ""
    extra: dict = field(default_factory=dict)


def _records(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8").strip()
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _corpus(folder: Path) -> dict[str, dict]:
    path = folder / "corpus.jsonl"
    if not path.is_file():
        return {}
    return {row["id"]: row for row in _records(path)}


def _shared(row: dict, corpus: dict[str, dict]) -> Question:
    gold = [Gold(corpus.get(p, {}).get("title", ""), corpus.get(p, {}).get("text"), p)
            for p in row["supporting_passages"]]
    return Question(str(row.get("id", "")), row["question"], [row.get("answer", "")], gold,
                    row.get("type", ""))


def _hotpot(row: dict) -> Question:
    """HotpotQA and 2WikiMultiHopQA: gold passages are the titles of the supporting facts,
    their texts the context's sentences under those titles."""
    context = {title: "".join(sentences) if isinstance(sentences, list) else str(sentences)
               for title, sentences in row.get("context", [])}
    titles = list(dict.fromkeys(title for title, _ in row["supporting_facts"]))
    answers = [row.get("answer", "")] + list(row.get("answer_aliases", []) or [])
    return Question(str(row.get("_id", row.get("id", ""))), row["question"], answers,
                    [Gold(t, context.get(t)) for t in titles], row.get("type", ""))


def _musique(row: dict) -> Question:
    gold = [Gold(p["title"], p["paragraph_text"]) for p in row["paragraphs"]
            if p.get("is_supporting")]
    answers = [row.get("answer", "")] + list(row.get("answer_aliases", []) or [])
    return Question(str(row.get("id", "")), row["question"], answers, gold)


def read_questions(path: str | Path) -> list[Question]:
    """The questions of `path` in whichever layout it is (see the module's docstring)."""
    path = Path(path)
    if not path.is_file():
        raise GraphRagError(f"no question file at {path}")
    try:
        rows = _records(path)
    except json.JSONDecodeError as exc:
        raise GraphRagError(f"{path} is not JSON or JSON lines ({exc})") from None
    corpus = _corpus(path.parent)
    questions = []
    for number, row in enumerate(rows):
        if "supporting_passages" in row:
            questions.append(_shared(row, corpus))
        elif "supporting_facts" in row:
            questions.append(_hotpot(row))
        elif "paragraphs" in row:
            questions.append(_musique(row))
        else:
            raise GraphRagError(f"{path}: question {number + 1} is in no layout read here "
                                "(supporting_passages, supporting_facts or paragraphs)")
    return questions


def normalized_answer(text: str) -> str:
    """SQuAD's answer normalization: lower case, no punctuation, no articles, one space."""
    text = re.sub(r"[^\w\s]", " ", (text or "").lower())
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, answers: list[str]) -> float:
    return float(any(normalized_answer(prediction) == normalized_answer(a) for a in answers if a))


def token_f1(prediction: str, answers: list[str]) -> float:
    """The best token F1 of `prediction` against any of the `answers` (SQuAD's)."""
    from collections import Counter

    best = 0.0
    predicted = normalized_answer(prediction).split()
    for answer in answers:
        truth = normalized_answer(answer).split()
        common = sum((Counter(predicted) & Counter(truth)).values())
        if not common:
            continue
        precision, recall = common / len(predicted), common / len(truth)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best
