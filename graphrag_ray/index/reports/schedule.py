"""Description summaries and community reports, scheduled as one graph of work.

A community's report needs the final descriptions of its entities and of the relationships
inside it, and (above the leaves) its sub-communities' reports; nothing else. So every summary
is requested at once, and each report as soon as the summaries inside its community and its
sub-communities' reports are done. There is no barrier between the two stages: the first
reports overlap the last summaries, and the LLM budget does not idle while one stage drains.
Leiden needs only the graph's structure, so communities are known before any summary.

The driver never holds description text: it chooses each context from the structure and each
row's token count (counted by the merge tasks, and by the summarizers for a summary), and the
workers read the descriptions from their blocks (`description_blocks`) to summarize and to
write the contexts.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Protocol

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.arrow_rows import take_rows
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.graph.communities import Community, carried_down, membership_by_level
from graphrag_ray.index.graph.description_blocks import DescriptionAddresses
from graphrag_ray.index.elements import element_id
from graphrag_ray.index.graph.stage import Graph
from graphrag_ray.index.reports.context import (
    GraphElements, all_elements_fit, context_spec, select_elements, select_with_sub_reports,
    spec_keys, sub_reports_needed)
from graphrag_ray.index.context_rows import number_tokens
from graphrag_ray.index.reports.kept_reports import KeptReports
from graphrag_ray.index.reports.kept_summaries import ELEMENT_DIGESTS, element_digests
from graphrag_ray.index.reports.report_worker import ReportWork, full_content, report_worker
from graphrag_ray.index.reports.summary_worker import SummaryWork, summarize_worker
from graphrag_ray.llm.accounting import table_usage
from graphrag_ray.llm.batch import DEFERRED
from graphrag_ray.llm.client import LLMServices, Usage


@dataclass
class SummariesAndReports:
    reports: pa.Table  # the rows to write (an update's linked parts serve the others)
    report_generations: list[str]  # how each community's report was made
    # Descriptions summarized; those whose LLM summary failed (extractive used), with reasons.
    summaries: dict
    summarize_usage: Usage
    reports_usage: Usage
    # Active spans (they overlap): first request to last result of each kind of work.
    summarize_wall_s: float
    reports_wall_s: float
    reports_kept: int = 0  # an update: reports kept as they were (`kept_reports`)


# A sub-community report's row in a context, beyond the report's own output tokens (its place,
# the separators, "Findings:"): with it, `max_output_tokens` bounds a row's tokens.
REPORT_ROW_OVERHEAD = 16


class FinalTexts(Protocol):
    """Told as texts become final, for work that follows them (the embeddings)."""

    def entities_final(self, keys: list[int]) -> None:
        """These entities' descriptions are final (at their addresses)."""

    def report_done(self, ids: list[str], text: str) -> None:
        """The report rows `ids` (a community and those carried down from it) have `text`."""


def report_id(community_id: int, title: str) -> str:
    return element_id("report", str(community_id), title)


def summarize_and_report(ctx: BuildContext, graph: Graph, communities: list[Community],
                         pool: WorkerPool, final: FinalTexts | None = None,
                         services: LLMServices | None = None, batch_pass: bool = False,
                         kept: KeptReports | None = None,
                         kept_summaries: np.ndarray | None = None
                         ) -> SummariesAndReports | None:
    """Every summary, and each community's report when it may start (`_Schedule`), on
    `pool`; the summaries' blocks are added to `graph.addresses`. `final` hears of each
    entity description and report as it becomes final. `kept` (an update): the previous
    reports the communities keep (`kept_reports`), done before anything is requested;
    `kept_summaries`: the element keys whose description is the previous version's summary
    (`kept_summaries`), already at their addresses, not summarized again.

    `batch_pass` (`llm.batch: true`, with `services` that defer): a pass of a batch round.
    A summary or report whose request was deferred holds back every report that needs it
    (nothing is asked of an input that is not final), the graph's addresses are left as
    they were, and nothing is returned: the round's requests are in the batch queue."""
    run = _Run(ctx, graph, communities, pool, final, services or ctx.services, batch_pass,
               kept or KeptReports(),
               np.empty(0, np.int64) if kept_summaries is None else kept_summaries)
    return run.run()


class _Run:
    """One scheduling of summaries and reports: what is final, what is asked, what is done."""

    def __init__(self, ctx: BuildContext, graph: Graph, communities: list[Community],
                 pool: WorkerPool, final: FinalTexts | None, services: LLMServices,
                 batch_pass: bool, kept: KeptReports, kept_summaries: np.ndarray):
        config = self.config = ctx.config
        self.ctx, self.pool, self.final, self.batch_pass = ctx, pool, final, batch_pass
        self.communities, self.kept, self.kept_summaries = communities, kept, kept_summaries
        self.entities, self.relationships = graph.entities, graph.relationships
        self.addresses = graph.addresses.copy() if batch_pass else graph.addresses
        self.claims_block = graph.claims_block
        n_entities = self.n_entities = graph.entities.num_rows
        self.counts = np.concatenate([graph.entities.column("description_count").to_numpy(),
                                      graph.relationships.column("description_count").to_numpy()])
        final_already = self.counts <= 1
        final_already[kept_summaries] = True
        self.todo = np.flatnonzero(~final_already)
        if final is not None:
            final.entities_final(np.flatnonzero(final_already[:n_entities]).tolist())
        self.elements = _graph_elements(graph.entities, graph.relationships, graph.endpoints,
                                        graph.claims, ctx.tokenizer)
        self.by_id = {c.id: c for c in communities}
        self.budget = config.reports.max_input_tokens
        self.schedule = _Schedule(communities, self.by_id, _communities_holding(
            self.todo.tolist(), n_entities, self.elements,
            membership_by_level(communities, n_entities)), self._needed_children)
        self.started = time.perf_counter()
        # Seconds since `started`; summaries are all requested at 0.
        self.marks: dict[str, float | None] = {"last_summary": 0.0, "first_report": None,
                                               "last_report": 0.0}
        workers = {"config": config, "prompts": ctx.prompts, "services": services}
        self.summarizer, self.reporter = summarize_worker(config), report_worker(config)
        self.summary_key = pool.bind(self.summarizer, workers)
        self.report_key = pool.bind(self.reporter, workers)
        self.summary_bar = ctx.bar("summarize", len(self.todo), "descriptions") \
            if len(self.todo) else None
        self.report_bar = ctx.bar("reports", sum(
            1 for c in communities if not carried_down(c, self.by_id)), "communities")
        self.summarize_usage, self.reports_usage = Usage(), Usage()
        self.reports: dict[int, dict] = {}
        self.generation: dict[int, str] = {}
        self.fallbacks: list[str] = []
        self.fell_back: set[int] = set()  # element keys whose summary is a fallback (not kept)
        self.joined_count = 0
        # A batch pass: communities waiting on a deferred request.
        self.held_back: set[int] = set()
        # Community -> its row in `kept.rows`, carried-down communities too.
        self.kept_row: dict[int, int] = {}
        self.as_dicts: dict[int, dict] = {}

    def _fits(self, community: Community) -> bool:  # once the summaries inside it are final
        return all_elements_fit(self.elements, community.members, self.budget)

    def _needed_children(self, community: Community) -> list[int]:  # likewise
        return sub_reports_needed(
            self.elements, community.members,
            [(i, self.by_id[i].members) for i in community.children], self.budget,
            self.config.reports.max_output_tokens + REPORT_ROW_OVERHEAD)

    def _record(self, key: int) -> dict:
        return self.elements.entity_record(key) if key < self.n_entities \
            else self.elements.edge_record(key - self.n_entities)

    def _submit_summaries(self) -> None:
        """With the LLM, community by community, the tallest trees of reports first, so
        reports start while summaries are asked (`_summary_order`); offline, where nothing
        waits on a budget, in block order (a call's description lists come from one or two
        blocks)."""
        ordered = _summary_order(self.todo, self.counts, self.addresses,
                                 self.schedule.holding, self.communities, self.by_id) \
            if self.summarizer.calls_llm else _in_block_order(self.todo, self.addresses)
        per_call = self.summarizer.rows_per_call
        for start in range(0, len(ordered), per_call):
            keys = ordered[start:start + per_call]
            handles, where = self.addresses.gather(keys, lists=True)
            self.pool.submit(self.summary_key, [
                SummaryWork(key, _name(self.elements, key, self.n_entities), block, row,
                            self._record(key))
                for key, (block, row) in zip(keys, where)], blocks=handles)

    def _take_kept(self) -> None:
        """An update's kept reports, done before anything is requested."""
        kept, schedule = self.kept, self.schedule
        titles = kept.rows.column("title").to_pylist()
        how = kept.rows.column("generation").to_pylist()
        content = kept.rows.column("full_content")
        schedule.submitted.update(kept.row_of)
        for community_id in sorted(kept.row_of, key=lambda c: -self.by_id[c].level):
            if community_id in schedule.carried:  # its child's report serves it
                continue
            row = kept.row_of[community_id]
            served = schedule.report_done(community_id)
            for served_id in served:
                self.kept_row[served_id] = row
                self.generation[served_id] = how[row]
            if self.final is not None:
                self.final.report_done([report_id(c, titles[row]) for c in served],
                                       content[row].as_py())
            if self.report_bar:
                self.report_bar.update(1)

    def _context_spec_of(self, community: Community) -> tuple[dict, list[int]] | None:
        """None: the context needs a sub-community's report that is not written yet."""
        elements = self.elements
        if community.children and not self._fits(community):
            selection = select_with_sub_reports(
                elements, community.members,
                [(i, self.by_id[i].members, report) for i, report in
                 zip(community.children, self._reports_of(community.children))], self.budget)
            if selection is None:
                return None
        else:
            selection = select_elements(elements, community.members, self.budget)
        return context_spec(elements, selection), spec_keys(selection, self.n_entities)

    def _ready(self) -> tuple[list[Community], dict]:
        ready, specs_of = [], {}
        for community in self.schedule.take_ready():
            if community.id in self.held_back:
                continue
            spec = self._context_spec_of(community)
            if spec is None:  # a report row longer than assumed: wait for every child
                self.schedule.wait_for_all_children(community.id)
                continue
            ready.append(community)
            specs_of[community.id] = spec
        if ready and self.marks["first_report"] is None:
            self.marks["first_report"] = time.perf_counter() - self.started
        return ready, specs_of

    def _submit_ready(self) -> None:
        ready, specs_of = self._ready()
        for start in range(0, len(ready), self.reporter.rows_per_call):
            specs = [specs_of[c.id] for c in ready[start:start + self.reporter.rows_per_call]]
            handles, where = self.addresses.gather([k for _, keys in specs for k in keys])
            # The claims' block goes last, when a context has claims.
            claims_at = len(handles) if any(spec["claims"] for spec, _ in specs) else -1
            if claims_at >= 0:
                handles.append(self.claims_block)
            rows, offset = [], 0
            for community, (spec, keys) in zip(ready[start:], specs):
                mine = where[offset:offset + len(keys)]
                offset += len(keys)
                rows.append(ReportWork(community.id, spec, len(community.members),
                                       [b for b, _ in mine], [r for _, r in mine], claims_at,
                                       self.schedule.dependents(community.id)
                                       if self.reporter.calls_llm else 0))
            self.pool.submit(self.report_key, rows, blocks=handles)

    def _finish(self, community_id: int, report: dict, how: str) -> None:
        """A community's report is done: it serves the communities carried down from it."""
        served = self.schedule.report_done(community_id)
        for served_id in served:
            # Carried down: the same community one level up, the same report.
            self.reports[served_id] = dict(report, community=served_id)
            self.generation[served_id] = how
        if self.final is not None:
            self.final.report_done([report_id(c, report["title"]) for c in served],
                                   _content(report))

    def _reports_of(self, community_ids: list[int]) -> list[dict | None]:
        """Sub-communities' reports for a context: written now, or kept (as dicts only when
        a context takes them, a community's children read together)."""
        reports, kept_row, as_dicts = self.reports, self.kept_row, self.as_dicts
        wanted = [c for c in community_ids
                  if c not in reports and c in kept_row and c not in as_dicts]
        as_dicts.update(zip(wanted, self.kept.reports([kept_row[c] for c in wanted], wanted)))
        return [reports[c] if c in reports else as_dicts.get(c) for c in community_ids]

    def _summaries_done(self, result: pa.Table) -> None:
        self.summarize_usage.add(table_usage(result))
        keys = result.column("key").to_pylist()
        errors = result.column("error").to_pylist()
        self.fallbacks.extend(e for e in errors if e)
        self.fell_back.update(k for k, e in zip(keys, errors) if e)
        self.joined_count += sum(1 for j in result.column("joined").to_pylist() if j)
        if self.batch_pass:
            for element, error in zip(keys, errors):
                if error and DEFERRED in error:
                    self.held_back.update(self.schedule.holding.get(element, []))
        # Into the object store; the driver keeps no summary text.
        self.addresses.add_summaries(self.pool.put_block(result.select(["description"])), keys)
        n_entities = self.n_entities
        if self.final is not None:
            self.final.entities_final([k for k in keys if k < n_entities])
        for key, tokens in zip(keys, result.column("row_tokens").to_pylist()):
            if key < n_entities:
                self.elements.entity_tokens[key] = tokens
            else:
                self.elements.edge_tokens[key - n_entities] = tokens
            self.schedule.summary_done(key)
        self.marks["last_summary"] = time.perf_counter() - self.started
        if self.summary_bar:
            self.summary_bar.update(result.num_rows)

    def _reports_done(self, result: pa.Table) -> None:
        self.reports_usage.add(table_usage(result))
        for row in result.to_pylist():
            if self.batch_pass and DEFERRED in row["generation"]:
                self.held_back.add(row["community"])  # its parents wait on it
                continue
            report = dict(row["report"], community=row["community"])
            report["rank"] = report["rating"]
            self._finish(row["community"], report, row["generation"])
        self.marks["last_report"] = time.perf_counter() - self.started
        if self.report_bar:
            self.report_bar.update(result.num_rows)

    def run(self) -> SummariesAndReports | None:
        self._submit_summaries()
        self._take_kept()
        try:
            self._submit_ready()  # communities with nothing to summarize inside start now
            while self.pool.busy():
                for key, result in self.pool.completed():
                    if key == self.summary_key:
                        self._summaries_done(result)
                    else:
                        self._reports_done(result)
                    self._submit_ready()
        finally:
            for progress in (self.summary_bar, self.report_bar):
                if progress:
                    progress.close()
        return None if self.batch_pass else self._result()

    def _result(self) -> SummariesAndReports:
        communities, reports, kept_row = self.communities, self.reports, self.kept_row
        missing = [c.id for c in communities if c.id not in reports and c.id not in kept_row]
        if missing:
            raise RuntimeError(f"no report was scheduled for communities {missing[:10]}")
        elements = self.elements
        self.ctx.staged.write_table(ELEMENT_DIGESTS, element_digests(
            self.entities, self.relationships,
            np.concatenate([elements.entity_tokens, elements.edge_tokens]),
            self.fell_back, self.ctx.tokenizer), self.config.output.rows_per_part)
        marks = self.marks
        return SummariesAndReports(
            reports=_reports_table(communities, reports, self.generation, self.kept, kept_row),
            report_generations=[self.generation[c.id] for c in communities],
            summaries={"summarized": len(self.todo), "kept": len(self.kept_summaries),
                       "joined_without_llm": self.joined_count,
                       "extractive_fallbacks": len(self.fallbacks),
                       "first_fallback_reasons": self.fallbacks[:5]},
            reports_kept=sum(1 for c in communities if c.id in self.kept),
            summarize_usage=self.summarize_usage, reports_usage=self.reports_usage,
            summarize_wall_s=round(marks["last_summary"], 3),
            reports_wall_s=round(marks["last_report"] - (marks["first_report"] or 0.0), 3))


def _in_block_order(keys: np.ndarray, addresses: DescriptionAddresses) -> list[int]:
    blocks, rows = addresses.list_block[keys], addresses.list_row[keys]
    return keys[np.lexsort((rows, blocks))].tolist()


def _summary_order(keys: np.ndarray, counts: np.ndarray, addresses: DescriptionAddresses,
                   holding: dict[int, list[int]], communities: list[Community],
                   by_id: dict[int, Community]) -> list[int]:
    """The order to ask for summaries in: community by community, so each community's report
    can start while other summaries are still asked (the budget admits callers in the order
    they came, `rate_limiter.line_up`). Communities go depth first, the subtree with the most
    levels below it (the longest chain of reports that may wait on one another) and then the
    largest first, so the last summaries asked are those of a short chain; an element goes
    with the deepest community holding it, elements no community holds last. Within a
    community, the longest description lists first (`counts`: descriptions per element key),
    then block order: the community's report waits for its slowest summary, and the longest
    list takes longest to summarize.

    In no particular order, the build's last summaries were spread over nearly every
    community and the reports waited for nearly all of them."""
    height: dict[int, int] = {}
    for community in sorted(communities, key=lambda c: -c.level):  # leaves first
        height[community.id] = 1 + max((height[c] for c in community.children), default=0)

    def rank(ids: list[int]) -> list[int]:
        return sorted(ids, key=lambda i: (-height[i], -len(by_id[i].members), i))

    position: dict[int, int] = {}
    stack = rank([c.id for c in communities if c.parent < 0 or c.parent not in by_id])[::-1]
    while stack:  # depth first, pre-order: a community comes before its sub-communities
        community_id = stack.pop()
        position[community_id] = len(position)
        stack.extend(rank(by_id[community_id].children)[::-1])
    last = len(position)
    where = np.array([max((position[c] for c in holding.get(int(k), ())), default=last)
                      for k in keys], dtype=np.int64)
    blocks, rows = addresses.list_block[keys], addresses.list_row[keys]
    return keys[np.lexsort((rows, blocks, -counts[keys], where))].tolist()


def _name(elements: GraphElements, key: int, n_entities: int) -> str:
    if key < n_entities:
        return elements.titles[key]
    edge = key - n_entities
    return f"{elements.titles[elements.edge_source[edge]]} -> " \
           f"{elements.titles[elements.edge_target[edge]]}"


class _Schedule:
    """When each community's report may be requested: no summary pending inside it, and the
    reports of the sub-communities its context may substitute done (`needed_children`: none
    when all its elements fit, as the paper uses sub-community reports only when they do
    not; otherwise the largest, as many as a context of the longest reports would take).
    Carried-down communities share their child's report. A report that needs nothing of its
    children's starts as soon as its summaries are final, and one that needs some does not
    wait for the others: the levels' critical path is only as long as substitution makes it.
    """

    def __init__(self, communities: list[Community], by_id: dict[int, Community],
                 holding: dict[int, list[int]],
                 needed_children: Callable[[Community], list[int]]):
        self.by_id = by_id
        self.needed_children = needed_children
        self.needed: dict[int, list[int]] = {}  # decided once the summaries inside are final
        self.needed_guess: dict[int, list[int]] = {}  # before that (`dependents`)
        self.carried = {c.id for c in communities if carried_down(c, by_id)}
        self.holding = holding  # element key -> communities whose report waits for its summary
        self.pending_summaries: dict[int, int] = defaultdict(int)
        for held in holding.values():
            for community_id in held:
                self.pending_summaries[community_id] += 1
        self.pending_children = {c.id: len(c.children) for c in communities}
        self.candidates = [c.id for c in communities if c.id not in self.carried]
        self.submitted: set[int] = set()
        self.done: set[int] = set()

    def summary_done(self, key: int) -> None:
        for community_id in self.holding.pop(key, []):
            self.pending_summaries[community_id] -= 1
            if not self.pending_summaries[community_id]:
                self.candidates.append(community_id)

    def take_ready(self) -> list[Community]:
        ready = []
        for community_id in dict.fromkeys(self.candidates):
            if (community_id in self.submitted or community_id in self.carried
                    or self.pending_summaries[community_id]):
                continue
            community = self.by_id[community_id]
            needed = self._needed(community) if self.pending_children[community_id] else ()
            if all(child in self.done for child in needed):
                self.submitted.add(community_id)
                ready.append(community)
        self.candidates = []
        return ready

    def _needed(self, community: Community) -> list[int]:
        """The sub-communities whose reports `community`'s context may take: decided once
        the summaries inside it are final; before that a guess from the tokens counted so
        far (which the summaries can only lower), kept apart."""
        known = self.needed_guess if self.pending_summaries[community.id] else self.needed
        if community.id not in known:
            known[community.id] = self.needed_children(community)
        return known[community.id]

    def dependents(self, community_id: int) -> int:
        """How many reports above this one wait on it, as far as is known: a parent waits if
        its context takes this report (`_needed`). Carried-down parents share the report and
        are passed through. A hint for the budget's line, never a condition."""
        count, child = 0, self.by_id[community_id]
        while child.parent >= 0:
            parent = self.by_id[child.parent]
            if parent.id in self.carried:
                child = parent
                continue
            if child.id not in self._needed(parent):
                break
            count += 1
            child = parent
        return count

    def wait_for_all_children(self, community_id: int) -> None:
        """A community taken as ready whose context turned out to need more sub-community
        reports than `needed_children` said: it waits for every one."""
        self.submitted.discard(community_id)
        self.needed[community_id] = list(self.by_id[community_id].children)
        self.candidates.append(community_id)

    def report_done(self, community_id: int) -> list[int]:
        """The communities this report serves (itself and the parents carried down from it);
        their parents may become ready."""
        served = [community_id]
        while True:
            parent_id = self.by_id[served[-1]].parent
            if parent_id < 0:
                break
            self.pending_children[parent_id] -= 1
            if not self.pending_children[parent_id] \
                    and carried_down(self.by_id[parent_id], self.by_id):
                self.submitted.add(parent_id)
                served.append(parent_id)
                continue
            self.candidates.append(parent_id)
            break
        self.done.update(served)
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


def _graph_elements(entities: pa.Table, relationships: pa.Table,
                    endpoints: tuple[np.ndarray, np.ndarray], claims: pa.Table,
                    encoding: str) -> GraphElements:
    titles = entities.column("title").to_pylist()
    index = {title: i for i, title in enumerate(titles)}
    claims_by_entity: dict[int, list[int]] = defaultdict(list)
    claim_tokens: dict[int, list[int]] = defaultdict(list)
    for row, (subject, tokens) in enumerate(zip(claims.column("subject_id").to_pylist(),
                                                claims.column("row_tokens").to_pylist())):
        if subject in index:
            claims_by_entity[index[subject]].append(row)
            claim_tokens[index[subject]].append(tokens)
    edge_source, edge_target = endpoints
    degree = entities.column("degree").to_numpy()
    combined_degree = relationships.column("combined_degree").to_numpy()
    # Each row's tokens but its id (its place in a context, added there): the tokens the merge
    # counted (`inner_cells_tokens`), the degree's, and the line break.
    entity_tokens = (entities.column("inner_tokens").to_numpy()
                     + number_tokens(degree, encoding) + 1)
    edge_tokens = (relationships.column("inner_tokens").to_numpy()
                   + number_tokens(combined_degree, encoding) + 1)
    return GraphElements(
        titles=titles, types=entities.column("type").to_pylist(), degree=degree,
        edge_source=edge_source, edge_target=edge_target, combined_degree=combined_degree,
        claims_by_entity=dict(claims_by_entity), claim_tokens=dict(claim_tokens),
        entity_tokens=entity_tokens.astype(np.int64),
        edge_tokens=edge_tokens.astype(np.int64),
        entity_numbers=entities.column("human_readable_id").to_numpy(),
        edge_numbers=relationships.column("human_readable_id").to_numpy(), encoding=encoding)


def _content(report: dict) -> str:
    """A report's text: a kept one's as it was (an adopted report's is in its tool's form)."""
    return report.get("full_content") or full_content(report)


def _reports_table(communities: list[Community], reports: dict[int, dict],
                   generation: dict[int, str], kept: KeptReports,
                   kept_row: dict[int, int]) -> pa.Table:
    """The reports table's rows to write, in `communities`' order: the reports written now
    from their dicts, the kept ones from their rows as they were read (`kept_row`:
    community -> row of `kept.rows`), with their community's id, place and size; not the
    rows the previous version's linked parts serve (`kept.linked`: their communities)."""
    rows = []
    for community in communities:
        if community.id in kept_row:
            continue
        report = reports[community.id]
        rows.append({
            "id": report_id(community.id, report["title"]),
            "human_readable_id": community.id, "community": community.id,
            "level": community.level, "parent": community.parent, "children": community.children,
            "title": report["title"], "summary": report["summary"],
            "full_content": _content(report), "rank": float(report["rating"]),
            "rating_explanation": report["rating_explanation"],
            "findings": report["findings"],
            "full_content_json": json.dumps({k: report[k] for k in (
                "title", "summary", "rating", "rating_explanation", "findings")}),
            "period": report.get("period") or datetime.now(timezone.utc).date().isoformat(),
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
    table = table.select(schema.COMMUNITY_REPORT_COLUMNS)
    if not kept_row:
        return table
    held = [c for c in communities if c.id in kept_row and c.id not in kept.linked]
    old = kept.whole_rows([kept_row[c.id] for c in held])
    titles = old.column("title").to_pylist()
    kept_table = pa.table({
        "id": [report_id(c.id, title) for c, title in zip(held, titles)],
        "human_readable_id": [c.id for c in held], "community": [c.id for c in held],
        "level": [c.level for c in held], "parent": [c.parent for c in held],
        "children": pa.array([c.children for c in held], pa.list_(pa.int64())),
        **{name: old.column(name) for name in ("title", "summary", "full_content", "rank",
                                               "rating_explanation", "findings",
                                               "full_content_json", "period")},
        "size": [len(c.members) for c in held], "generation": old.column("generation"),
    }).select(schema.COMMUNITY_REPORT_COLUMNS).cast(table.schema)
    # Back into the communities' order.
    position = {c.id: i for i, c in enumerate(communities)}
    both = pa.concat_tables([table, kept_table])
    order = np.argsort([position[c] for c in both.column("community").to_pylist()],
                       kind="stable")
    return take_rows(both, pa.array(order))
