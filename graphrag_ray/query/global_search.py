"""Global search: map-reduce over the community reports of one level (the paper's C0..C3), or
over the reports dynamic selection found relevant; the answer cites reports, and through them
communities, entities, relationships, text units and documents."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import GraphRagError
from graphrag_ray.llm.client import Usage
from graphrag_ray.query.citations import sources_of_reports
from graphrag_ray.query.dynamic_selection import (
    RateTask, lexical_rating, run_rate_task, select_reports)
from graphrag_ray.query.question_focus import finding_kinds, question_focus
from graphrag_ray.query.map_reduce import (
    REPORT_CONTEXT_HEADER, MapCache, findings_of, map_reduce, pack_report_batches, report_row)
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult
from graphrag_ray.tokens import count_tokens

REPORT_COLUMNS = ["community", "level", "parent", "children", "title", "summary", "rank",
                  "full_content", "findings"]


def global_search(index: OpenedIndex, question: str, *, level: int | None = None,
                  dynamic: bool | None = None, history: list[dict] | None = None,
                  on_token: Callable[[str], None] | None = None) -> SearchResult:
    """Over the reports of `level` (default `global_search.default_level`), or, with `dynamic`
    (default `global_search.dynamic.enabled` when no level is given), over those rated
    relevant from the root down."""
    if dynamic is None:
        dynamic = index.config.global_search.dynamic.enabled and level is None
    if dynamic and not index.levels:
        raise GraphRagError("the index has no communities (no relationships were extracted)")
    level = None if dynamic else index.resolve_level(level)
    config, prompts, services, fan_out = (index.config, index.prompts, index.services,
                                          index.fan_out)
    result = SearchResult(method="global", answer="")
    steps = global_steps(index)
    if level is None:
        rows, details, rating_usage = _dynamic_rows(
            question, index.table(schema.COMMUNITY_REPORTS, REPORT_COLUMNS), config, steps)
        result.usage.add(rating_usage)
        result.llm_calls += rating_usage.calls
        result.details["dynamic"] = details
        result.context_tokens += details["rating_context_tokens"]
    else:
        rows = level_rows(index, level)
        result.details["level"] = level
    outcome = map_reduce(question, rows, config, prompts, map_prompt="global_map",
                         header=REPORT_CONTEXT_HEADER, services=services, fan_out=fan_out,
                         history=history, on_token=on_token,
                         kinds_of=steps.kinds_of(question), cache=map_cache(index))
    result.answer = outcome.answer
    result.usage.add(outcome.usage)
    result.llm_calls += outcome.map_calls + outcome.reduce_calls
    result.context_tokens += outcome.map_context_tokens + outcome.reduce_context_tokens
    result.failures += outcome.failures
    result.details.update({
        "map_calls": outcome.map_calls, "reduce_calls": outcome.reduce_calls,
        "reports_mapped": len(rows), "map_context_tokens": outcome.map_context_tokens,
        "reduce_context_tokens": outcome.reduce_context_tokens,
        "points": [p.__dict__ for p in outcome.points]})
    if "dynamic" in result.details:
        dynamic = result.details["dynamic"]
        dynamic["map_context_tokens"] = outcome.map_context_tokens
        dynamic["saved_tokens"] = dynamic["static_map_context_tokens"] - (
            outcome.map_context_tokens + dynamic["rating_context_tokens"])
    # Points cite reports by community number; a community number names one community.
    result.sources = sources_of_reports(index.table, index.rows, outcome.cited_ids)
    return result


def level_rows(index: OpenedIndex, level: int) -> list[dict]:
    """The reports of `level` as map-reduce rows, made once per open index."""
    def make() -> list[dict]:
        reports = index.table(schema.COMMUNITY_REPORTS, REPORT_COLUMNS)
        return reports.filter(pc.equal(reports.column("level"), level)).to_pylist()
    return index.kept(f"global:level:{level}", make)


def map_cache(index: OpenedIndex) -> MapCache:
    return index.kept("global:map", MapCache)


def prepare_level(index: OpenedIndex, level: int | None = None) -> None:
    """What a global question over `level` (default: the configured one) works out whatever
    the question, worked out now: the level's rows, their rendered map rows and, offline,
    their findings' terms (a served index's `warm`, so that no first question pays for them). No
    call."""
    cfg = index.config.global_search
    batches = pack_report_batches(level_rows(index, index.resolve_level(level)),
                                  cfg.map_context_tokens, cfg.shuffle_seed,
                                  index.config.tokenizer.encoding, REPORT_CONTEXT_HEADER,
                                  map_cache(index))
    global_steps(index).prepare(batches)


class _LLMSteps:
    """Global search by the LLM: reports rated by calls; the map and reduce are calls too
    (`map_reduce`, which follows the same setting)."""

    def __init__(self, index: OpenedIndex):
        self.index = index

    def prepare(self, batches: list) -> None:
        """(nothing a question does not ask for: the map's rows are its prompt's)"""

    def rate(self, question: str, group: list[dict], usage: Usage,
             failures: list[str]) -> list[int]:
        index = self.index
        tasks = [RateTask(question, r["full_content"], index.prompts["rate_community"],
                          index.config, index.services) for r in group]
        ratings = index.fan_out.map(run_rate_task, tasks,
                                    index.config.global_search.concurrency)
        for rating in ratings:
            usage.add(rating.usage)
            if rating.failure:
                failures.append(rating.failure)
        return [rating.value for rating in ratings]

    def kinds_of(self, question: str) -> None:
        return None


class _OfflineSteps:
    """Global search offline: reports rated by the question's terms; the map takes each
    report's findings (worked out once per level), and a question for a kind of entity
    ranks the findings about that kind."""

    def __init__(self, index: OpenedIndex):
        self.index = index

    def prepare(self, batches: list) -> None:
        findings_of(batches, map_cache(self.index))

    def rate(self, question: str, group: list[dict], usage: Usage,
             failures: list[str]) -> list[int]:
        return [lexical_rating(question, r["full_content"]) for r in group]

    def kinds_of(self, question: str) -> Callable[[str], list[str]] | None:
        return finding_kinds(self.index.table) if question_focus(question).kinds else None


def global_steps(index: OpenedIndex) -> _LLMSteps | _OfflineSteps:
    """By the LLM or offline, chosen once: `global_search.method`."""
    method = index.config.global_search.method
    return (_LLMSteps if index.config.uses_llm(method) else _OfflineSteps)(index)


def _dynamic_rows(question: str, reports: pa.Table, config: GraphRagConfig,
                  steps: _LLMSteps | _OfflineSteps) -> tuple[list[dict], dict, Usage]:
    cfg = config.global_search
    encoding = config.tokenizer.encoding
    all_reports = reports.select(REPORT_COLUMNS).to_pylist()
    usage = Usage()
    failures: list[str] = []
    rated_tokens = [0]

    def rate(group: list[dict]) -> list[int]:
        rated_tokens[0] += sum(count_tokens(r["full_content"], encoding) for r in group)
        return steps.rate(question, group, usage, failures)

    selection = select_reports(all_reports, rate, cfg.dynamic.threshold)
    deepest = max((r["level"] for r in selection.selected), default=0)
    static = [r for r in all_reports if r["level"] == deepest]
    static_tokens = sum(count_tokens(report_row(r, cfg.map_context_tokens, encoding), encoding)
                        + 1 for r in static)
    details = {
        "reports_total": len(all_reports), "reports_rated": len(selection.ratings),
        "rating_calls": selection.rating_calls, "reports_selected": len(selection.selected),
        "selected": sorted(r["community"] for r in selection.selected),
        "rejected": sorted(c for c, v in selection.ratings.items()
                           if v < cfg.dynamic.threshold),
        "fell_back_to_roots": selection.fell_back_to_roots,
        "deepest_level": deepest, "static_reports_at_deepest_level": len(static),
        "static_map_context_tokens": static_tokens,
        "rating_context_tokens": rated_tokens[0], "rating_failures": failures,
    }
    return selection.selected, details, usage
