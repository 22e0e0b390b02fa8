"""Relevance tests: which passages help answer a sub-question, and what they state that
bears on it (the claims), in one call per batch of passages.

A test reads a passage, not the whole text unit: the unit's sentences that share the most
content words with the sub-question, in their order, within `passage_tokens` (the unit's
opening when none shares a word: it was ranked by its embedding). Offline, a passage is
relevant when it holds more than half of the sub-question's content words (sharing only the
topic's words is not answering), and its claims are its sentences that hold any of them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from graphrag_ray.config import GraphRagConfig, LLMConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.llm.client import LLMServices, Usage, parse_json_object
from graphrag_ray.prompts_loader import render
from graphrag_ray.query.context import cell
from graphrag_ray.sentences import split_sentences
from graphrag_ray.terms import content_terms
from graphrag_ray.tokens import count_tokens, truncate_to_tokens

PASSAGE_HEADER = "id|passage"


@functools.lru_cache(maxsize=1 << 16)
def _sentences(text: str, encoding: str) -> tuple[tuple[str, ...], tuple[frozenset[str], ...],
                                                  tuple[int, ...]]:
    """A unit's sentences, their content words and tokens, kept across questions: cutting and
    reading them was most of a lazy search's own time."""
    sentences = tuple(" ".join(s.split()) for s in split_sentences(text) if s.strip())
    return (sentences, tuple(frozenset(content_terms(s)) for s in sentences),
            tuple(count_tokens(s, encoding) for s in sentences))


def passage(text: str, question: str, max_tokens: int, encoding: str) -> str:
    """The sentences of `text` nearest `question` by shared content words (the most first,
    earlier first on ties), shown in the text's order, within `max_tokens`."""
    wanted = set(content_terms(question))
    sentences, terms, tokens_of = _sentences(text, encoding)
    if not sentences:
        return truncate_to_tokens(" ".join(text.split()), max_tokens, encoding)
    shared = [len(wanted & words) for words in terms]
    if not any(shared):
        return truncate_to_tokens(" ".join(sentences), max_tokens, encoding)
    chosen, used = [], 0
    for position in sorted(range(len(sentences)), key=lambda i: (-shared[i], i)):
        if not shared[position]:
            break
        tokens = tokens_of[position] + 1
        if used + tokens > max_tokens:
            if not chosen:  # one long sentence: as much of it as fits
                return truncate_to_tokens(sentences[position], max_tokens, encoding)
            continue
        chosen.append(position)
        used += tokens
    return " ".join(sentences[i] for i in sorted(chosen))


def lexical_claims(question: str, text: str, max_claims: int) -> list[str] | None:
    """Offline verdict: the claims (sentences holding a content word of the question) when
    the passage holds more than half of the question's content words, else None."""
    wanted = set(content_terms(question))
    if not wanted:
        return None
    if 2 * len(wanted & set(content_terms(text))) <= len(wanted):
        return None
    claims = [s for s in split_sentences(text) if wanted & set(content_terms(s))]
    return claims[:max_claims] or [text]


def parse_relevance(reply: str, ids: list[int]) -> dict[int, list[str]]:
    """id -> claims of the passages the reply found relevant (ids it was not shown are
    dropped; a relevant passage without claims keeps none)."""
    data = parse_json_object(reply)
    found = data.get("relevant")
    if not isinstance(found, list):
        raise ValueError("relevance reply has no 'relevant' list")
    shown = set(ids)
    verdicts: dict[int, list[str]] = {}
    for item in found:
        if not isinstance(item, dict):
            continue
        try:
            number = int(item.get("id"))
        except (TypeError, ValueError):
            continue
        if number not in shown:
            continue
        claims = item.get("claims") or []
        if isinstance(claims, str):
            claims = [claims]
        verdicts[number] = [" ".join(str(c).split()) for c in claims
                            if isinstance(c, (str, int, float)) and str(c).strip()]
    return verdicts


@dataclass
class RelevanceTask:
    """One relevance call, self-contained so it can run in a Ray actor: `rows` are
    (human_readable_id, passage) of one sub-question's probes."""
    question: str
    rows: list[tuple[int, str]]
    template: str
    config: GraphRagConfig
    llm: LLMConfig
    services: LLMServices


@dataclass
class RelevanceOutcome:
    claims: dict[int, list[str]]  # relevant id -> its claims
    usage: Usage
    failure: str = ""


def run_relevance_task(task: RelevanceTask) -> RelevanceOutcome:
    cfg = task.config.query.lazy
    context = "\n".join([PASSAGE_HEADER] + [f"{number}|{cell(text)}" for number, text in task.rows])
    prompt = render(task.template, question=task.question, context_data=context,
                    max_claims=cfg.max_claims_per_passage)
    chat = task.services.chat(task.llm)
    ids = [number for number, _ in task.rows]
    try:
        claims = chat.complete_parsed([{"role": "user", "content": prompt}],
                                      lambda reply: parse_relevance(reply, ids),
                                      max_tokens=cfg.relevance_max_output_tokens,
                                      kind="lazy_relevance")
    except LLMError as exc:
        return RelevanceOutcome({}, chat.usage, f"relevance test of {len(ids)} passages: {exc}")
    return RelevanceOutcome(claims, chat.usage)
