"""Dynamic community selection: rate reports from the root level down and descend only into
the communities rated relevant, so a map-reduce reads the reports that matter at the depth
that matters instead of a whole level.

A relevant community with sub-communities hands over to those of its children that are
relevant; when none is, it stays selected itself. A child is rated only when its parent was
rated relevant. A carried-down community (the same report one level down) reuses its rating.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.llm.client import LLMServices, Usage, parse_json_object
from graphrag_ray.prompts_loader import render
from graphrag_ray.terms import content_terms
from graphrag_ray.tokens import truncate_to_tokens


@dataclass
class Selection:
    selected: list[dict]
    ratings: dict[int, int] = field(default_factory=dict)  # community -> rating
    rating_calls: int = 0
    fell_back_to_roots: bool = False


def select_reports(reports: list[dict], rate: Callable[[list[dict]], list[int]],
                   threshold: int) -> Selection:
    """`reports`: every level's, with community, parent, children and full_content; `rate`
    rates a list of them (0-5)."""
    by_id = {r["community"]: r for r in reports}
    roots = [r for r in reports if r["parent"] not in by_id]
    selection = Selection(selected=[])
    known: dict[str, int] = {}  # report text -> rating

    def rate_group(group: list[dict]) -> None:
        unknown = list({r["full_content"]: r for r in group
                        if r["full_content"] not in known}.values())
        for report, rating in zip(unknown, rate(unknown) if unknown else []):
            known[report["full_content"]] = rating
        selection.rating_calls += len(unknown)
        for report in group:
            selection.ratings[report["community"]] = known[report["full_content"]]

    frontier = roots
    rate_group(frontier)
    while frontier:
        parents, next_frontier = [], []
        for report in frontier:
            if selection.ratings[report["community"]] < threshold:
                continue
            children = [by_id[c] for c in report["children"] or [] if c in by_id]
            if children:
                parents.append((report, children))
                next_frontier.extend(children)
            else:
                selection.selected.append(report)
        rate_group(next_frontier)
        for parent, children in parents:
            if all(selection.ratings[c["community"]] < threshold for c in children):
                selection.selected.append(parent)
        frontier = next_frontier
    if not selection.selected:
        selection.selected = roots
        selection.fell_back_to_roots = True
    return selection


@dataclass
class RateTask:
    question: str
    report: str
    template: str
    config: GraphRagConfig
    services: LLMServices


@dataclass
class Rating:
    value: int
    usage: Usage
    failure: str = ""


def run_rate_task(task: RateTask) -> Rating:
    """An unparseable or failed rating counts as relevant (3): better read than lost."""
    cfg = task.config.global_search.dynamic
    chat = task.services.chat(task.config.llm)
    prompt = render(task.template, question=task.question, report=truncate_to_tokens(
        task.report, cfg.report_tokens, task.config.tokenizer.encoding))
    try:
        rating = chat.complete_parsed(
            [{"role": "user", "content": prompt}],
            lambda reply: max(0, min(5, int(float(parse_json_object(reply)["rating"])))),
            max_tokens=cfg.max_output_tokens, kind="rate_report")
    except LLMError as exc:
        return Rating(3, chat.usage, f"rating: {exc}")
    return Rating(rating, chat.usage)


def lexical_rating(question: str, report: str) -> int:
    """Offline: how many of the question's content words the report contains, up to 5."""
    return min(5, len(set(content_terms(question)) & set(content_terms(report))))
