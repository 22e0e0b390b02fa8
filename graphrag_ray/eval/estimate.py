"""`eval answer --dry-run`: what answering (and then judging) every question under each
condition would cost at most, from the index's own tables and the settings, with no call.

Upper bounds: every map batch of a level (or of the source texts) is one call holding its
reports; a lazy search spends its whole budget, every relevance call writes its longest reply;
every answer is as long as allowed. The judge compares each pair of conditions per metric and
repeat, reading two such answers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.api import GraphIndex
from graphrag_ray.config import LLMConfig
from graphrag_ray.eval.answers import condition, same_window
from graphrag_ray.eval.commands import judge_llm
from graphrag_ray.llm.accounting import cost_usd
from graphrag_ray.query.context import answerable_units
from graphrag_ray.query.global_search import REPORT_COLUMNS
from graphrag_ray.query.map_reduce import REPORT_CONTEXT_HEADER, pack_report_batches
from graphrag_ray.query.text_search import TEXT_CONTEXT_HEADER, text_rows
from graphrag_ray.tokens import count_tokens


@dataclass
class Estimate:
    name: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0

    def add(self, calls: int, prompt: int, completion: int, llm: LLMConfig) -> None:
        self.calls += calls
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        spent = cost_usd({"prompt_tokens": prompt, "completion_tokens": completion}, llm)
        self.cost = None if spent is None or self.cost is None else self.cost + spent


def estimate_answers(index: GraphIndex, questions: list[str], conditions: list[str]
                     ) -> list[Estimate]:
    """Per condition, the most `eval answer` would spend on `questions`; last, the judge."""
    same_window(index)
    config = index.config
    encoding = config.tokenizer.encoding
    asked = sum(count_tokens(q, encoding) for q in questions)
    n = len(questions)

    def template(name: str) -> int:
        return count_tokens(index.prompts[name], encoding)

    estimates = []
    g = config.global_search
    for name in conditions:
        method, options = condition(name)
        estimate = Estimate(name)
        if method in ("global", "text"):
            if method == "global":
                reports = index.table(schema.COMMUNITY_REPORTS, REPORT_COLUMNS)
                rows = reports.filter(pc.equal(reports.column("level"),
                                               options["level"])).to_pylist()
                header, prompt = REPORT_CONTEXT_HEADER, "global_map_single"
            else:
                units = answerable_units(index.table(schema.TEXT_UNITS, [
                    "id", "human_readable_id", "document_id", "text", "extraction_status"]))
                rows = text_rows(units, index.table(schema.DOCUMENTS, ["id", "title"]))
                header, prompt = TEXT_CONTEXT_HEADER, "text_map_single"
            batches = pack_report_batches(rows, g.map_context_tokens, g.shuffle_seed, encoding,
                                          header)
            mapped = sum(t for batch in batches for _, _, t in batch)
            estimate.add(n * (len(batches) + 1),
                         n * (mapped + len(batches) * template(prompt) + g.reduce_context_tokens
                              + template("global_reduce")) + asked * (len(batches) + 1),
                         n * (len(batches) * g.map_max_output_tokens
                              + g.reduce_max_output_tokens), config.llm)
        elif method == "basic":
            b = config.basic_search
            estimate.add(n, n * (b.context_tokens + template("basic_answer")) + asked,
                         n * b.max_output_tokens, config.llm)
        elif method == "lazy":
            lazy = config.query.lazy
            calls = math.ceil(options["budget"] / lazy.passages_per_call)
            passages = options["budget"] * (lazy.passage_tokens + 4)
            estimate.add(n * (1 + calls), n * (template("lazy_subquestions") + passages
                                                + calls * template("lazy_relevance"))
                         + asked * (1 + calls),
                         n * (1 + calls) * lazy.relevance_max_output_tokens,
                         config.relevance_llm())
            estimate.add(n, n * (lazy.context_tokens + template("lazy_answer")) + asked,
                         n * lazy.max_output_tokens, config.llm)
        estimates.append(estimate)
    judge = Estimate("judge")
    pairs = len(conditions) * (len(conditions) - 1) // 2
    comparisons = n * pairs * len(config.eval.metrics) * config.eval.repeats
    answer = max((config.basic_search.max_output_tokens, g.reduce_max_output_tokens,
                  config.query.lazy.max_output_tokens))
    judge.add(comparisons, comparisons * (template("eval_judge")
                                          + 2 * answer) + asked * pairs * len(
        config.eval.metrics) * config.eval.repeats,
        comparisons * config.eval.max_output_tokens, judge_llm(config))
    return estimates + [judge]


def format_estimates(estimates: list[Estimate], questions: int) -> str:
    lines = [f"at most, for {questions} questions (no call made):",
             f"{'condition':10} {'calls':>8} {'prompt tokens':>14} {'completion':>11} "
             f"{'cost':>10}"]
    for e in estimates:
        cost = "unknown" if e.cost is None else f"${e.cost:,.2f}"
        lines.append(f"{e.name:10} {e.calls:8,} {e.prompt_tokens:14,} {e.completion_tokens:11,} "
                     f"{cost:>10}")
    known = [e.cost for e in estimates]
    if all(c is not None for c in known):
        lines.append(f"{'total':10} {sum(e.calls for e in estimates):8,} "
                     f"{sum(e.prompt_tokens for e in estimates):14,} "
                     f"{sum(e.completion_tokens for e in estimates):11,} "
                     f"{'$' + format(sum(known), ',.2f'):>10}")
    else:
        lines.append("cost unknown for a model without a price: set llm.prices")
    return "\n".join(lines)
