"""Description summaries and community reports, scheduled as one graph of work.

A community's report needs the final descriptions of its entities and of the relationships
inside it, and (above the leaves) its sub-communities' reports; nothing else. So every summary
is requested at once, and each report as soon as the summaries inside its community and its
sub-communities' reports are done. There is no barrier between the two stages: the first
reports overlap the last summaries, and the LLM budget does not idle while one stage drains.
Leiden needs only the graph's structure, so communities are known before any summary.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.index.communities import Community, carried_down, membership_by_level
from graphrag_ray.index.merge import edge_endpoints, element_id
from graphrag_ray.index.report_context import (
    GraphElements, context_record, render_context, select_elements, select_with_sub_reports)
from graphrag_ray.index.reports import ReportWorker, full_content
from graphrag_ray.index.summarize import SummarizeWorker
from graphrag_ray.llm.accounting import table_usage
from graphrag_ray.llm.client import LLMServices, Usage
from graphrag_ray.progress import ProgressBar

REPORT_WORK_SCHEMA = pa.schema([("community", pa.int64()), ("context_text", pa.string()),
                                ("context_json", pa.string())])


@dataclass
class SummariesAndReports:
    entities: pa.Table  # with `description`
    relationships: pa.Table  # with `description`
    reports: pa.Table
    summarize_usage: Usage
    reports_usage: Usage
    # Active spans (they overlap): first request to last result of each kind of work.
    summarize_wall_s: float
    reports_wall_s: float


def summarize_and_report(entities: pa.Table, relationships: pa.Table, covariates: pa.Table,
                         communities: list[Community], config: GraphRagConfig,
                         prompts: dict[str, str], services: LLMServices, pool: WorkerPool,
                         bar: Callable[[str, int, str], ProgressBar | None]) -> SummariesAndReports:
    """`entities`/`relationships`: merged, with degrees; rows in their final order."""
    n_entities = entities.num_rows
    lists = entities.column("descriptions").to_pylist() + \
        relationships.column("descriptions").to_pylist()
    descriptions = [d[0] if len(d) == 1 else "" for d in lists]
    todo = [k for k, d in enumerate(lists) if len(d) > 1]
    elements = _graph_elements(entities, relationships, covariates, descriptions,
                               config.chunks.encoding_model)
    by_id = {c.id: c for c in communities}
    schedule = _Schedule(communities, by_id, _communities_holding(
        todo, n_entities, elements, membership_by_level(communities, n_entities)))
    started = time.perf_counter()
    # Seconds since `started`; summaries are all requested at 0.
    marks: dict[str, float | None] = {"last_summary": 0.0, "first_report": None,
                                      "last_report": 0.0}

    summary_key = pool.bind(SummarizeWorker, {"config": config, "prompts": prompts,
                                              "services": services})
    report_key = pool.bind(ReportWorker, {"config": config, "prompts": prompts,
                                          "services": services})
    summary_bar = bar("summarize", len(todo), "descriptions") if todo else None
    report_bar = bar("reports", sum(1 for c in communities if not carried_down(c, by_id)),
                     "communities")
    summarize_usage, reports_usage = Usage(), Usage()
    reports: dict[int, dict] = {}
    generation: dict[int, str] = {}
    names = entities.column("title").to_pylist() + [
        f"{s} -> {t}" for s, t in zip(relationships.column("source").to_pylist(),
                                      relationships.column("target").to_pylist())]
    rows_per_summary_call = 4 if config.uses_llm(config.summarize.method) else 256
    for start in range(0, len(todo), rows_per_summary_call):
        keys = todo[start:start + rows_per_summary_call]
        pool.submit(summary_key, pa.table({
            "key": pa.array(keys, pa.int64()), "name": [names[k] for k in keys],
            "descriptions": [lists[k] for k in keys]}))
    rows_per_report_call = 1 if config.uses_llm(config.reports.method) else 32

    def context_row(community: Community) -> dict:
        if community.children:
            selection = select_with_sub_reports(
                elements, community.members,
                [(by_id[i].members, reports[i]) for i in community.children],
                config.reports.max_input_tokens)
        else:
            selection = select_elements(elements, community.members,
                                        config.reports.max_input_tokens)
        return {"community": community.id, "context_text": render_context(elements, selection),
                "context_json": context_record(elements, selection)}

    def submit_ready() -> None:
        ready = schedule.take_ready()
        if ready and marks["first_report"] is None:
            marks["first_report"] = time.perf_counter() - started
        for start in range(0, len(ready), rows_per_report_call):
            rows = [context_row(c) for c in ready[start:start + rows_per_report_call]]
            pool.submit(report_key, pa.Table.from_pylist(rows, schema=REPORT_WORK_SCHEMA))

    try:
        submit_ready()  # communities with nothing to summarize inside start right away
        while pool.busy():
            for result in pool.completed():
                if "report_json" in result.column_names:
                    reports_usage.add(table_usage(result))
                    for row in result.to_pylist():
                        report = json.loads(row["report_json"])
                        report["community"] = row["community"]
                        report["rank"] = report["rating"]
                        for community_id in schedule.report_done(row["community"]):
                            # Carried down: the same community one level up, the same report.
                            reports[community_id] = dict(report, community=community_id)
                            generation[community_id] = row["generation"]
                    marks["last_report"] = time.perf_counter() - started
                    if report_bar:
                        report_bar.update(result.num_rows)
                else:
                    summarize_usage.add(table_usage(result))
                    for key, text in zip(result.column("key").to_pylist(),
                                         result.column("description").to_pylist()):
                        descriptions[key] = text
                        if key < n_entities:
                            elements.set_entity_description(key, text)
                        else:
                            elements.set_edge_description(key - n_entities, text)
                        schedule.summary_done(key)
                    marks["last_summary"] = time.perf_counter() - started
                    if summary_bar:
                        summary_bar.update(result.num_rows)
                submit_ready()
    finally:
        for progress in (summary_bar, report_bar):
            if progress:
                progress.close()
    missing = [c.id for c in communities if c.id not in reports]
    if missing:
        raise RuntimeError(f"no report was scheduled for communities {missing[:10]}")
    return SummariesAndReports(
        entities=entities.append_column("description",
                                        pa.array(descriptions[:n_entities], pa.string())),
        relationships=relationships.append_column(
            "description", pa.array(descriptions[n_entities:], pa.string())),
        reports=_reports_table(communities, reports, generation),
        summarize_usage=summarize_usage, reports_usage=reports_usage,
        summarize_wall_s=round(marks["last_summary"], 3),
        reports_wall_s=round(marks["last_report"] - (marks["first_report"] or 0.0), 3))


class _Schedule:
    """When each community's report may be requested: no summary pending inside it, and every
    sub-community's report done. Carried-down communities share their child's report."""

    def __init__(self, communities: list[Community], by_id: dict[int, Community],
                 holding: dict[int, list[int]]):
        self.by_id = by_id
        self.holding = holding  # element key -> communities whose report waits for its summary
        self.pending_summaries: dict[int, int] = defaultdict(int)
        for held in holding.values():
            for community_id in held:
                self.pending_summaries[community_id] += 1
        self.pending_children = {c.id: len(c.children) for c in communities}
        self.candidates = [c.id for c in communities if not c.children]
        self.submitted: set[int] = set()

    def summary_done(self, key: int) -> None:
        for community_id in self.holding.pop(key, []):
            self.pending_summaries[community_id] -= 1
            if not self.pending_summaries[community_id]:
                self.candidates.append(community_id)

    def take_ready(self) -> list[Community]:
        ready = []
        for community_id in self.candidates:
            if (community_id not in self.submitted and not self.pending_summaries[community_id]
                    and not self.pending_children[community_id]):
                self.submitted.add(community_id)
                ready.append(self.by_id[community_id])
        self.candidates = []
        return ready

    def report_done(self, community_id: int) -> list[int]:
        """The communities this report serves (itself and the parents carried down from it);
        their parents may become ready."""
        served = [community_id]
        while True:
            parent_id = self.by_id[served[-1]].parent
            if parent_id < 0:
                break
            self.pending_children[parent_id] -= 1
            if self.pending_children[parent_id]:
                break
            if carried_down(self.by_id[parent_id], self.by_id):
                self.submitted.add(parent_id)
                served.append(parent_id)
            else:
                self.candidates.append(parent_id)
                break
        return served


def _communities_holding(todo: list[int], n_entities: int, elements: GraphElements,
                         membership: dict[int, np.ndarray]) -> dict[int, list[int]]:
    """Element key -> the communities containing it (an entity, or both ends of an edge)."""
    holding: dict[int, list[int]] = {}
    for key in todo:
        if key < n_entities:
            held = [int(labels[key]) for labels in membership.values() if labels[key] >= 0]
        else:
            edge = key - n_entities
            source, target = elements.edge_source[edge], elements.edge_target[edge]
            held = [int(labels[source]) for labels in membership.values()
                    if labels[source] >= 0 and labels[source] == labels[target]]
        holding[key] = held
    return holding


def _graph_elements(entities: pa.Table, relationships: pa.Table, covariates: pa.Table,
                    descriptions: list[str], encoding: str) -> GraphElements:
    n_entities = entities.num_rows
    entity_rows = [{"human_readable_id": i, "title": title, "type": kind,
                    "description": descriptions[i], "degree": degree}
                   for i, (title, kind, degree) in enumerate(zip(
                       entities.column("title").to_pylist(), entities.column("type").to_pylist(),
                       entities.column("degree").to_pylist()))]
    edge_rows = [{"human_readable_id": j, "source": source, "target": target,
                  "description": descriptions[n_entities + j], "combined_degree": degree}
                 for j, (source, target, degree) in enumerate(zip(
                     relationships.column("source").to_pylist(),
                     relationships.column("target").to_pylist(),
                     relationships.column("combined_degree").to_pylist()))]
    index = {row["title"]: i for i, row in enumerate(entity_rows)}
    claims_by_entity: dict[int, list[dict]] = defaultdict(list)
    for claim in covariates.select(["human_readable_id", "subject_id", "type", "status",
                                    "description"]).to_pylist():
        if claim["subject_id"] in index:
            claims_by_entity[index[claim["subject_id"]]].append(claim)
    edge_source, edge_target = edge_endpoints(entities, relationships)
    return GraphElements(
        entities=entity_rows, relationships=edge_rows, edge_source=edge_source,
        edge_target=edge_target, claims_by_entity=dict(claims_by_entity), encoding=encoding)


def _reports_table(communities: list[Community], reports: dict[int, dict],
                   generation: dict[int, str]) -> pa.Table:
    rows = []
    for community in communities:
        report = reports[community.id]
        rows.append({
            "id": element_id("report", str(community.id), report["title"]),
            "human_readable_id": community.id, "community": community.id,
            "level": community.level, "parent": community.parent, "children": community.children,
            "title": report["title"], "summary": report["summary"],
            "full_content": full_content(report), "rank": float(report["rating"]),
            "rating_explanation": report["rating_explanation"],
            "findings": report["findings"],
            "full_content_json": json.dumps({k: report[k] for k in (
                "title", "summary", "rating", "rating_explanation", "findings")}),
            "period": datetime.now(timezone.utc).date().isoformat(),
            "size": len(community.members), "generation": generation[community.id],
        })
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.string()), ("human_readable_id", pa.int64()), ("community", pa.int64()),
        ("level", pa.int64()), ("parent", pa.int64()), ("children", pa.list_(pa.int64())),
        ("title", pa.string()), ("summary", pa.string()), ("full_content", pa.string()),
        ("rank", pa.float64()), ("rating_explanation", pa.string()),
        ("findings", pa.list_(pa.struct([("summary", pa.string()), ("explanation", pa.string())]))),
        ("full_content_json", pa.string()), ("period", pa.string()), ("size", pa.int64()),
        ("generation", pa.string())]))
    return table.select(schema.COMMUNITY_REPORT_COLUMNS)
