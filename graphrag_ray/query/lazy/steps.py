"""How a lazy search asks its sub-questions and tests relevance: with the relevance model
(`LLMSteps`), or offline (`OfflineSteps`: the question itself, and relevance as shared
words). The search picks one when it starts; the rest of it is the same either way."""

from __future__ import annotations

from graphrag_ray.errors import LLMError
from graphrag_ray.llm.client import parse_json_object
from graphrag_ray.prompts_loader import render
from graphrag_ray.query.context import conversation_text
from graphrag_ray.query.lazy.answer import LazyAnswer, answer_by_llm, list_claims
from graphrag_ray.query.lazy.deepening import Probe
from graphrag_ray.query.lazy.relevance import RelevanceTask, lexical_claims, run_relevance_task
from graphrag_ray.query.local_search import query_text
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult
from graphrag_ray.tokens import count_tokens

OFFLINE_NOTE = ("lazy search ran offline (no LLM endpoint or key configured): relevance was "
                "judged by shared words and the answer lists the passages' sentences")


class OfflineSteps:
    uses_llm = False

    def __init__(self, index: OpenedIndex, result: SearchResult):
        self.index, self.result = index, result
        result.notes.append(OFFLINE_NOTE)

    def subquestions(self, question: str, history: list[dict] | None) -> list[str]:
        """The question with the user's previous turn (what retrieval matches in the other
        methods)."""
        return [query_text(question, history)]

    def test(self, probes: list[Probe], subquestions: list[str], numbers: list[int],
             shown: dict[Probe, str]) -> dict[Probe, list[str]]:
        """The relevant probes and their claims: the shown passage's sentences that share
        the sub-question's words."""
        limit = self.index.config.query.lazy.max_claims_per_passage
        found = {p: lexical_claims(subquestions[p.question], shown[p], limit) for p in probes}
        return {p: c for p, c in found.items() if c is not None}

    def writer(self, question: str, history: list[dict] | None, on_token):
        """The answer: the claims listed."""
        return lambda batches, outcome: list_claims(question, batches, on_token, outcome)


class LLMSteps:
    uses_llm = True

    def __init__(self, index: OpenedIndex, result: SearchResult):
        self.index, self.result = index, result

    def writer(self, question: str, history: list[dict] | None, on_token):
        """The answer: written by the chat model from the claims (`answer.answer_by_llm`)."""
        index = self.index

        def write(batches: list, outcome: LazyAnswer) -> LazyAnswer:
            return answer_by_llm(question, batches, index.config, index.prompts,
                                 index.services, index.fan_out, outcome, history, on_token)
        return write

    def subquestions(self, question: str, history: list[dict] | None) -> list[str]:
        """The question made to stand alone, split (one call); the question itself when the
        call fails."""
        index, result = self.index, self.result
        cfg = index.config.query.lazy
        chat = index.services.chat(index.config.relevance_llm())
        prompt = render(index.prompts["lazy_subquestions"], question=question,
                        conversation_history=conversation_text(history),
                        max_subquestions=cfg.max_subquestions)

        def parse(reply: str) -> list[str]:
            found = parse_json_object(reply).get("subquestions")
            if not isinstance(found, list):
                raise ValueError("reply has no 'subquestions' list")
            return [" ".join(str(q).split()) for q in found if str(q).strip()]

        try:
            found = chat.complete_parsed([{"role": "user", "content": prompt}], parse,
                                         max_tokens=cfg.relevance_max_output_tokens,
                                         kind="lazy_subquestions")
        except LLMError as exc:
            result.failures.append(f"sub-questions: {exc}; searched for the question itself")
            found = []
        result.usage.add(chat.usage)
        result.llm_calls += 1
        distinct = list(dict.fromkeys(q for q in found if q))[:cfg.max_subquestions]
        return distinct or [query_text(question, history)]

    def test(self, probes: list[Probe], subquestions: list[str], numbers: list[int],
             shown: dict[Probe, str]) -> dict[Probe, list[str]]:
        """The relevant probes and their claims: each sub-question's probes go
        `passages_per_call` to a call, all calls at once."""
        index = self.index
        config = index.config
        cfg = config.query.lazy
        batches: list[list[Probe]] = []
        for q in range(len(subquestions)):
            mine = [p for p in probes if p.question == q]
            batches += [mine[i:i + cfg.passages_per_call]
                        for i in range(0, len(mine), cfg.passages_per_call)]
        tasks = [RelevanceTask(subquestions[batch[0].question],
                               [(numbers[p.unit], shown[p]) for p in batch],
                               index.prompts["lazy_relevance"], config, config.relevance_llm(),
                               index.services)
                 for batch in batches]
        found: dict[Probe, list[str]] = {}
        for batch, task, outcome in zip(batches, tasks, index.fan_out.map(
                run_relevance_task, tasks, cfg.concurrency)):
            self._count(task, outcome)
            for probe in batch:
                if numbers[probe.unit] in outcome.claims:
                    found[probe] = outcome.claims[numbers[probe.unit]]
        return found

    def _count(self, task: RelevanceTask, outcome) -> None:
        result, details = self.result, self.result.details
        result.usage.add(outcome.usage)
        result.llm_calls += 1
        details["relevance_calls"] = details.get("relevance_calls", 0) + 1
        result.context_tokens += sum(count_tokens(text, self.index.config.tokenizer.encoding)
                                     for _, text in task.rows)
        if outcome.failure:
            result.failures.append(outcome.failure)
            details["failed_relevance_calls"] = details.get("failed_relevance_calls", 0) + 1
