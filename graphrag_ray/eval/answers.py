"""Answer every question under the paper's conditions on one index: C0..C3 (global search at
each level), TS (map-reduce over source texts), SS (vector RAG), and LazyGraphRAG at a
relevance budget (LZ100, LZ500, LZ1500, or any LZ<n>). All use the same context window
(`global_search.map_context_tokens`) and the same answer length; their prompts differ only in
what the context holds."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from graphrag_ray.api import GraphIndex
from graphrag_ray.errors import GraphRagError
from graphrag_ray.eval.questions import Question
from graphrag_ray.eval.records import RecordFile

CONDITIONS: dict[str, tuple[str, dict]] = {
    "C0": ("global", {"level": 0}), "C1": ("global", {"level": 1}),
    "C2": ("global", {"level": 2}), "C3": ("global", {"level": 3}),
    "TS": ("text", {}), "SS": ("basic", {}),
    "LZ100": ("lazy", {"budget": 100}), "LZ500": ("lazy", {"budget": 500}),
    "LZ1500": ("lazy", {"budget": 1500}),
}
_LAZY = re.compile(r"LZ([1-9]\d*)")


def condition(name: str) -> tuple[str, dict]:
    """The method and options of a condition name (LZ<n>: lazy at budget n)."""
    if name in CONDITIONS:
        return CONDITIONS[name]
    lazy = _LAZY.fullmatch(name)
    if lazy:
        return "lazy", {"budget": int(lazy.group(1))}
    raise GraphRagError(f"unknown condition {name!r}; known: {', '.join(CONDITIONS)} "
                        "(or LZ<budget>)")


def same_window(index: GraphIndex) -> None:
    """SS gets the window the map-reduce conditions read per call; the map calls answer in the
    paper's form (one answer and one helpfulness score per batch)."""
    config = index.config
    config.global_search.map_answer = "single"
    config.basic_search.context_tokens = config.global_search.map_context_tokens
    config.basic_search.max_output_tokens = config.global_search.reduce_max_output_tokens
    config.basic_search.response_type = config.global_search.response_type
    config.query.lazy.context_tokens = config.global_search.map_context_tokens
    config.query.lazy.max_output_tokens = config.global_search.reduce_max_output_tokens
    config.query.lazy.response_type = config.global_search.response_type


def answer_questions(index: GraphIndex, questions: list[Question], conditions: list[str],
                     answers: RecordFile, concurrency: int,
                     progress: Callable[[str], None]) -> int:
    """Answers what is not answered yet; returns how many it answered now."""
    deepest = max(index.levels) if index.levels else -1
    for name in conditions:
        method, options = condition(name)
        if method == "global" and options["level"] > deepest:
            raise GraphRagError(f"{name} needs community level {options['level']}; the "
                                f"index has levels 0..{deepest}")
    same_window(index)
    done = answers.done_keys()
    todo = [(q, c) for c in conditions for q in questions if (q.question_id, c) not in done]
    progress(f"{len(todo)} answers to write ({len(done)} already done)")

    def answer(item: tuple[Question, str]) -> None:
        question, name = item
        method, options = condition(name)
        started = time.perf_counter()
        result = index.search(method, question.question_text, **options)
        answers.append({
            "question_id": question.question_id, "question": question.question_text,
            "condition": name, "answer": result.answer,
            "context_tokens": result.context_tokens, "llm_calls": result.llm_calls,
            "prompt_tokens": result.usage.prompt_tokens,
            "completion_tokens": result.usage.completion_tokens,
            "cache_hits": result.usage.cache_hits,
            "wall_s": round(time.perf_counter() - started, 3), "failures": result.failures})

    with ThreadPoolExecutor(concurrency) as pool:
        for number, _ in enumerate(pool.map(answer, todo), start=1):
            if number % 10 == 0 or number == len(todo):
                progress(f"answered {number}/{len(todo)}")
    return len(todo)
