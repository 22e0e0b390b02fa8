"""Activity-centred global questions, as the paper generates them: from a short description of
the corpus, N users, N tasks per user, N questions per (user, task): N^3 questions, each with
the user and task behind it."""

from __future__ import annotations

import csv
import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import GraphRagError, LLMError
from graphrag_ray.llm.client import ChatClient, parse_json_object
from graphrag_ray.prompts_loader import render


@dataclass
class Question:
    question_id: str
    question_text: str
    user: str = ""
    task: str = ""


def question_id(text: str) -> str:
    return hashlib.sha256(text.strip().lower().encode("utf-8")).hexdigest()[:16]


def _ask_json(chat: ChatClient, prompt: str, key: str, max_tokens: int, attempts: int,
              kind: str) -> list:
    def parse(reply: str) -> list:
        value = parse_json_object(reply)[key]
        if not isinstance(value, list) or not value:
            raise ValueError(f"'{key}' is empty or not a list")
        return value

    return chat.complete_parsed([{"role": "user", "content": prompt}], parse,
                                max_tokens=max_tokens, cache_tag="attempt-{attempt}",
                                retries=attempts - 1, kind=kind)


def generate_questions(description: str, config: GraphRagConfig, prompts: dict[str, str],
                       chat: ChatClient) -> list[Question]:
    cfg = config.eval
    attempts = config.llm.max_parse_retries + 1
    users = _ask_json(chat, render(prompts["eval_personas"], description=description,
                                   users=cfg.users, tasks=cfg.tasks_per_user),
                      "users", cfg.max_output_tokens * 2, attempts, "eval_personas")[:cfg.users]
    pairs = []
    for entry in users:
        if not isinstance(entry, dict) or not entry.get("user"):
            continue
        for task in (entry.get("tasks") or [])[:cfg.tasks_per_user]:
            pairs.append((str(entry["user"]).strip(), str(task).strip()))
    if len(pairs) < cfg.users * cfg.tasks_per_user:
        raise LLMError(f"asked for {cfg.users} users x {cfg.tasks_per_user} tasks, got "
                       f"{len(pairs)} (user, task) pairs")

    def for_pair(pair: tuple[str, str]) -> list[Question]:
        user, task = pair
        texts = _ask_json(chat, render(prompts["eval_questions"], description=description,
                                       user=user, task=task, n=cfg.questions_per_task),
                          "questions", cfg.max_output_tokens, attempts, "eval_questions")
        return [Question(question_id(str(t)), str(t).strip(), user, task) for t in texts
                if str(t).strip()][:cfg.questions_per_task]

    with ThreadPoolExecutor(cfg.concurrency) as pool:
        generated = [q for batch in pool.map(for_pair, pairs) for q in batch]
    unique = list({q.question_id: q for q in generated}.values())
    return unique


def write_questions(questions: list[Question], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(asdict(questions[0]) if questions
                                                        else Question("", "").__dict__))
        writer.writeheader()
        writer.writerows(asdict(q) for q in questions)


def read_questions(path: Path) -> list[Question]:
    """Our CSV, or any CSV with a `question_text` (or `question`) column, such as the paper's."""
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise GraphRagError(f"cannot read questions from {path}: {exc}") from None
    if not rows:
        raise GraphRagError(f"{path} holds no questions")
    column = next((c for c in ("question_text", "question") if c in rows[0]), None)
    if column is None:
        raise GraphRagError(f"{path} needs a question_text (or question) column; it has "
                            f"{', '.join(rows[0])}")
    questions = []
    for row in rows:
        text = (row.get(column) or "").strip()
        if text:
            questions.append(Question(row.get("question_id") or question_id(text), text,
                                      row.get("user", ""), row.get("task", "")))
    return questions
