"""DRIFT search: start broad, then drill down. The question (and, with an LLM, a hypothetical
answer to it, whose embedding looks more like a report than the question does) selects the
most similar community reports; a primer call answers from them and proposes follow-up
queries; each round answers the open follow-ups with local-search contexts, in parallel, and
collects new follow-ups, for `depth` rounds; a reduce call merges the intermediate answers.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.llm.client import LLMServices, Usage, parse_json_object
from graphrag_ray.prompts_loader import render
from graphrag_ray.query.answer import Answering, Asked, answer_from_context
from graphrag_ray.query.citations import merge_sources, sources_of_records
from graphrag_ray.query.context import cell, pack_table
from graphrag_ray.query.local_data import LocalData
from graphrag_ray.query.local_search import build_local_context, extractive_answer, query_text
from graphrag_ray.query.retrieval import rank_units
from graphrag_ray.query.map_reduce import NO_ANSWER
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult
from graphrag_ray.terms import distinct_texts
from graphrag_ray.tokens import take_within_budget, truncate_to_tokens

FOLLOW_UP_THREADS = 4  # contexts built at once; more wait on the same cores


@dataclass
class DriftTask:
    question: str
    query: str
    context: str
    template: str
    config: GraphRagConfig
    services: LLMServices


@dataclass
class DriftStep:
    query: str
    answer: str
    score: float
    follow_ups: list[str]
    usage: Usage = field(default_factory=Usage)
    failure: str = ""
    depth: int = 0
    records: dict = field(default_factory=dict)


def parse_step(reply: str) -> tuple[str, float, list[str]]:
    data = parse_json_object(reply)
    answer = str(data.get("answer") or data.get("response") or "").strip()
    if not answer:
        raise ValueError("no 'answer'")
    follow_ups = data.get("follow_up_queries") or []
    if not isinstance(follow_ups, list):
        raise ValueError("'follow_up_queries' is not a list")
    try:
        score = float(data.get("score", 0))
    except (TypeError, ValueError):
        score = 0.0
    return answer, max(0.0, min(100.0, score)), [str(q).strip() for q in follow_ups
                                                 if str(q).strip()]


def run_drift_task(task: DriftTask) -> DriftStep:
    cfg = task.config.drift_search
    chat = task.services.chat(task.config.llm)
    prompt = render(task.template, question=task.question, query=task.query,
                    context_data=task.context, max_follow_ups=cfg.follow_ups_per_step)
    try:
        answer, score, follow_ups = chat.complete_parsed(
            [{"role": "user", "content": prompt}], parse_step, max_tokens=cfg.max_output_tokens,
            kind="drift_step")
    except LLMError as exc:
        return DriftStep(task.query, "", 0.0, [], chat.usage, f"{task.query}: {exc}")
    return DriftStep(task.query, answer, score, follow_ups, chat.usage)


class _LLMSteps:
    """DRIFT with the LLM: a hypothetical answer finds the primer's reports; every step (the
    primer and each follow-up) is one call, fanned out; the reduce is one streamed call."""
    uses_llm = True
    calls_per_step = 1

    def __init__(self, index: OpenedIndex, question: str):
        self.index, self.question = index, question
        self.config = index.config

    def probe(self, query: str, data: LocalData, result: SearchResult) -> str:
        best = data.best_report()
        if best is None:
            return query
        example = data.reports.rows[best]["full_content"]
        chat = self.index.services.chat(self.config.llm)
        probe = chat.complete([{"role": "user", "content": render(
            self.index.prompts["hypothetical_answer"], question=self.question,
            example_report=truncate_to_tokens(example, 500, self.config.tokenizer.encoding))}],
            max_tokens=self.config.drift_search.max_output_tokens,
            kind="hypothetical_answer").strip() or query
        result.usage.add(chat.usage)
        result.llm_calls += 1
        return probe

    def primer(self, section, reports: list[dict]) -> DriftStep:
        return self.answer([self.question], [section.text])[0]

    def follow_up(self, queries: list[str], contexts: list) -> list[DriftStep]:
        return self.answer(queries, [c.text for c in contexts])

    def answer(self, queries: list[str], contexts: list[str]) -> list[DriftStep]:
        tasks = [DriftTask(self.question, query, context, self.index.prompts["drift_step"],
                           self.config, self.index.services)
                 for query, context in zip(queries, contexts)]
        return self.index.fan_out.map(run_drift_task, tasks, self.config.drift_search.concurrency)


class _ExtractiveSteps:
    """DRIFT offline: the primer is the reports' summaries, a follow-up's answer the local
    context's own sentences; follow-ups ask about the leading entities. No step repeats a
    point or passage an earlier step gave (`said`: the terms of all given so far)."""
    uses_llm = False
    calls_per_step = 0

    def __init__(self, index: OpenedIndex, question: str):
        self.question = question
        self.data = index.local_data()
        self.said: list[set[str]] = []

    def probe(self, query: str, data: LocalData, result: SearchResult) -> str:
        return query

    def primer(self, section, reports: list[dict]) -> DriftStep:
        shown = [r for r in reports if r["community"] in section.keys]
        lines = []
        for report in shown:
            text = f"{report['title']}: {report['summary']}"
            if distinct_texts([text], self.said):  # not a carried-down report's twin
                lines.append(f"- {text} [Data: Reports ({report['community']})]")
        answer = "\n".join(lines) or "No report matches the question."
        leading = [t for r in shown for t in _leading_entities(r, self.data)]
        return DriftStep(self.question, answer, 50.0, _entity_questions(leading))

    def follow_up(self, queries: list[str], contexts: list) -> list[DriftStep]:
        return [DriftStep(query, extractive_answer(query, c.entity_rows, c.unit_texts,
                                                   self.said),
                          10.0 * len(c.entity_rows),
                          _entity_questions([e["title"] for e in c.entity_rows]))
                for query, c in zip(queries, contexts)]


def _follow_up_contexts(index: OpenedIndex, question: str, follow_ups: list[str]) -> list:
    """Each follow-up's local-search context, in threads: ranking is array work and reads,
    which run beside each other."""
    config = index.config

    def context(follow_up: str):
        query = f"{question} {follow_up}"
        return build_local_context(
            query, rank_units(index, query), index.local_data(),
            top_k_entities=config.local_search.top_k_entities,
            top_k_relationships=config.local_search.top_k_relationships,
            budget=config.drift_search.local_context_tokens,
            text_unit_proportion=config.local_search.text_unit_proportion,
            community_proportion=config.local_search.community_proportion,
            encoding=config.tokenizer.encoding)

    if len(follow_ups) < 2:
        return [context(f) for f in follow_ups]
    with ThreadPoolExecutor(min(len(follow_ups), FOLLOW_UP_THREADS),
                            thread_name_prefix="drift-context") as pool:
        return list(pool.map(context, follow_ups))


def drift_search(index: OpenedIndex, question: str, *, history: list[dict] | None = None,
                 on_token: Callable[[str], None] | None = None) -> SearchResult:
    config = index.config
    data, embed, read = index.local_data(), index.embed, index.table
    report_vectors = index.vectors(schema.REPORT_EMBEDDINGS)
    cfg = config.drift_search
    encoding = config.tokenizer.encoding
    steps_by = (_LLMSteps if config.uses_llm(cfg.method) else _ExtractiveSteps)(index, question)
    result = SearchResult(method="drift", answer="")
    query = query_text(question, history)

    # 1. Primer: the reports nearest the question (or a hypothetical answer to it).
    probe = steps_by.probe(query, data, result)
    rows = [data.reports.row_of[i] for i, _ in report_vectors.nearest(
        embed([probe])[0], cfg.top_k_reports) if i in data.reports]
    nearest = _distinct_reports([{**report, "row": row} for row, report in
                                 zip(rows, data.reports.rows.take(rows))])
    primer = pack_table("Reports", "id|title|content",
                        [(r["community"], f"{r['community']}|{cell(r['title'])}|"
                                          f"{cell(r['full_content'])}") for r in nearest],
                        cfg.primer_context_tokens, encoding)
    result.context_tokens += primer.tokens
    first = steps_by.primer(primer, nearest)
    first.records = {"reports": primer.keys}
    history_of_steps = [first]

    # 2. Follow-ups, round by round, each answered from its own local-search context.
    asked = {question.strip().lower()}
    frontier = [first]
    for depth in range(1, cfg.depth + 1):
        follow_ups = []
        for step in sorted(frontier, key=lambda s: -s.score):
            for follow_up in step.follow_ups:
                if follow_up.strip().lower() not in asked and len(follow_ups) < cfg.follow_ups_per_step:
                    asked.add(follow_up.strip().lower())
                    follow_ups.append(follow_up)
        if not follow_ups:
            break
        contexts = _follow_up_contexts(index, question, follow_ups)
        result.context_tokens += sum(c.tokens for c in contexts)
        frontier = steps_by.follow_up(follow_ups, contexts)
        for step, context in zip(frontier, contexts):
            step.depth = depth
            step.records = context.records
        history_of_steps += frontier

    for step in history_of_steps:
        result.usage.add(step.usage)
        if step.failure:
            result.failures.append(step.failure)
    result.llm_calls += steps_by.calls_per_step * len(history_of_steps)

    # 3. Reduce: the primer's answer first, then the follow-ups' by score.
    answered = [s for s in history_of_steps if s.answer]
    ordered = answered[:1] + sorted(answered[1:], key=lambda s: (-s.score, s.depth))
    steps = [f"----Step {number}: {step.query}----\n{step.answer}"
             for number, step in enumerate(ordered, start=1)]
    taken, used = take_within_budget(steps, config.global_search.reduce_context_tokens,
                                     encoding=encoding)
    sections = [steps[i] for i in taken]
    result.context_tokens += used
    answer_from_context(
        result, Asked(question, history, on_token), "\n\n".join(sections),
        Answering(index, "drift_reduce", cfg, kind="drift_reduce"),
        use_llm=steps_by.uses_llm and bool(sections),
        extractive=lambda: "\n\n".join(f"**{s.query}**\n{s.answer}"
                                        for s in ordered[:len(sections)]) or NO_ANSWER)
    result.details = {
        "primer_reports": primer.keys,
        "steps": [{"query": s.query, "depth": s.depth, "score": s.score,
                   "follow_ups": s.follow_ups} for s in history_of_steps],
        "follow_ups_answered": len(history_of_steps) - 1,
    }
    result.sources = merge_sources([sources_of_records(read, s.records)
                                    for s in history_of_steps], read)
    return result


def _distinct_reports(reports: list[dict]) -> list[dict]:
    """The reports in order, each text once: a community carried down unchanged shares its
    report with the levels below it, and the primer would list it at every level."""
    seen: set[str] = set()
    distinct = []
    for report in reports:
        if report["full_content"] not in seen:
            seen.add(report["full_content"])
            distinct.append(report)
    return distinct


def _leading_entities(report: dict, data: LocalData, count: int = 3) -> list[str]:
    members = data.members_of.get(report["row"])
    degree = data.entities.numbers("degree")
    members.sort(key=lambda i: (-degree[i], i))
    titles = data.entities.table.column("title")
    return [titles[i].as_py() for i in members[:count]]


def _entity_questions(titles: list[str]) -> list[str]:
    return [f"What is the role of {title}?" for title in dict.fromkeys(titles)]
