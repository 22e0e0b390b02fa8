"""LazyGraphRAG's answer: the claims of the relevant passages, grouped by the community each
was found through (the most relevant community first), as rows `id|community|text` that cite
their text unit. When they fit one context, one call answers from them; when not, a map call
per context turns its claims into scored points and the answer is written from the best
points, as global search does with reports. Offline, the answer lists the claims."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.llm.client import LLMServices, Usage
from graphrag_ray.prompts_loader import render
from graphrag_ray.query.answer import answer_from_prompt
from graphrag_ray.query.context import cell, conversation_text
from graphrag_ray.query.map_reduce import (
    NO_ANSWER, MapTask, Point, pack_reduce_context, parse_report_ids, rank_points, run_map_task)
from graphrag_ray.distributed.fanout import FanOut
from graphrag_ray.terms import content_terms, says_the_same
from graphrag_ray.tokens import count_tokens

CLAIM_HEADER = "id|community|text"
EXTRACTIVE_CLAIMS = 12


@dataclass
class Claim:
    text: str
    unit: int  # the text unit's human_readable_id, the id answers cite
    community: str  # the title of the community it was found through
    rank: tuple  # sort key: the community's relevance first, then the unit's similarity


@dataclass
class LazyAnswer:
    answer: str
    context_rows: list[Claim]  # the claims the answer was written from
    map_calls: int = 0
    answer_calls: int = 0
    context_tokens: int = 0
    usage: Usage = field(default_factory=Usage)
    failures: list[str] = field(default_factory=list)

    @property
    def cited(self) -> list[int]:
        """The units the answer cites, or, when it cites none of its context, all of them."""
        shown = {c.unit for c in self.context_rows}
        cited = [i for i in parse_report_ids(self.answer) if i in shown]
        return sorted(cited or shown)


def claim_batches(claims: list[Claim], max_tokens: int,
                  encoding: str) -> list[list[tuple[Claim, str]]]:
    """The claims, best first, without repeats, as rows in contexts of at most `max_tokens`."""
    header = count_tokens(CLAIM_HEADER, encoding) + 1
    batches, current, used, seen = [], [], header, []
    for claim in sorted(claims, key=lambda c: c.rank):
        terms = set(content_terms(claim.text))
        if says_the_same(terms, seen):
            continue
        seen.append(terms)
        row = f"{claim.unit}|{cell(claim.community)}|{cell(claim.text)}"
        tokens = count_tokens(row, encoding) + 1
        if current and used + tokens > max_tokens:
            batches.append(current)
            current, used = [], header
        current.append((claim, row))
        used += tokens
    if current:
        batches.append(current)
    return batches


def write_answer(claims: list[Claim], config: GraphRagConfig,
                 write: Callable[[list, LazyAnswer], LazyAnswer],
                 on_token: Callable[[str], None] | None) -> LazyAnswer:
    """The claims in context-sized batches, answered by `write(batches, outcome)`: the
    search's steps' `writer` (the LLM's answer, `answer_by_llm`; offline, `list_claims`)."""
    batches = claim_batches(claims, config.query.lazy.context_tokens, config.tokenizer.encoding)
    outcome = LazyAnswer(NO_ANSWER, [])
    if not batches:
        if on_token:
            on_token(outcome.answer)
        return outcome
    return write(batches, outcome)


def answer_by_llm(question: str, batches: list, config: GraphRagConfig,
                  prompts: dict[str, str], services: LLMServices, fan_out: FanOut,
                  outcome: LazyAnswer, history: list[dict] | None,
                  on_token: Callable[[str], None] | None) -> LazyAnswer:
    """One call over the claims when they fit one context; else a map call per batch and
    the answer from the best points."""
    cfg = config.query.lazy
    if len(batches) == 1:
        rows = batches[0]
        notes = "\n".join([CLAIM_HEADER] + [row for _, row in rows])
        outcome.context_rows = [claim for claim, _ in rows]
    else:
        notes, outcome.context_rows = _map_points(question, batches, config, prompts, services,
                                                  fan_out, outcome)
        if not notes:
            if on_token:
                on_token(outcome.answer)
            return outcome
    outcome.context_tokens += count_tokens(notes, config.tokenizer.encoding)
    chat = services.chat(config.llm)
    prompt = render(prompts["lazy_answer"], question=question, context_data=notes,
                    response_type=cfg.response_type,
                    conversation_history=conversation_text(history))
    outcome.answer = answer_from_prompt(chat, prompt, cfg.max_output_tokens, on_token,
                                        kind="lazy_answer")
    outcome.answer_calls = 1
    outcome.usage.add(chat.usage)
    return outcome


def _map_points(question: str, batches, config: GraphRagConfig, prompts: dict[str, str],
                services: LLMServices, fan_out: FanOut, outcome: LazyAnswer
                ) -> tuple[str, list[Claim]]:
    """Too many claims for one context: map each batch to scored points (citing its units),
    keep the best that fit one context. Returns that context and the claims behind it."""
    cfg = config.query.lazy
    tasks = [MapTask(number, question, "\n".join([CLAIM_HEADER] + [row for _, row in batch]),
                     sorted({claim.unit for claim, _ in batch}), prompts["lazy_map"], config,
                     services)
             for number, batch in enumerate(batches)]
    points: list[Point] = []
    for result in fan_out.map(run_map_task, tasks, cfg.concurrency):
        points += result.points
        outcome.usage.add(result.usage)
        outcome.map_calls += 1
        if result.failure:
            outcome.failures.append(result.failure)
    if len(outcome.failures) == len(batches):
        raise LLMError(f"every map call failed; first: {outcome.failures[0]}")
    outcome.context_tokens += sum(count_tokens(task.context, config.tokenizer.encoding)
                                  for task in tasks)
    context, used, _ = pack_reduce_context(rank_points(points), cfg.context_tokens,
                                           config.tokenizer.encoding)
    units = {i for point in used for i in point.report_ids}
    return context, [claim for batch in batches for claim, _ in batch if claim.unit in units]


def list_claims(question: str, batches, on_token, outcome: LazyAnswer) -> LazyAnswer:
    """Offline: the best claims, listed under their communities."""
    rows = [claim for batch in batches for claim, _ in batch][:EXTRACTIVE_CLAIMS]
    lines = [f"Claims from the passages found relevant to: {question}", ""]
    community = None
    for claim in rows:
        if claim.community != community:
            community = claim.community
            lines.append(f"**{community}**")
        lines.append(f"- {claim.text} [Data: Sources ({claim.unit})]")
    outcome.answer = "\n".join(lines)
    outcome.context_rows = rows
    if on_token:
        on_token(outcome.answer)
    return outcome
