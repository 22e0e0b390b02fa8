"""The context a community report is written from, built exactly as the paper prescribes.

Leaf communities: edges in decreasing combined degree; for each, its source, its target, their
claims, then the edge itself, until the token budget is used. Entities without edges follow,
most connected first.

Higher communities: if all their element summaries fit, as for leaves. Otherwise sub-communities
are ranked by the tokens of their element summaries, descending, and their elements are replaced
by their (shorter) reports one at a time until the context fits.

Rows are numbered within their context (1, 2, ... per table), not with the index's ids: a
community's prompt then depends on its own content only, so inserting or deleting unrelated
entities does not change it and its cached report is reused. The report's `[Data: ...]`
citations are turned back into the index's ids (`citations.cite_index_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from graphrag_ray.index.context_rows import (
    CLAIM_FIELDS, CLAIM_HEADER, EDGE_FIELDS, ENTITY_FIELDS, ENTITY_HEADER, REPORT_HEADER,
    RELATIONSHIP_HEADER, _cell, number_tokens, row_text)
from graphrag_ray.tokens import count_tokens


@dataclass
class GraphElements:
    """What the driver needs to choose each community's context: the graph's structure and
    every element's row tokens. The description text stays in the workers' blocks; the rows
    are written out by the report workers (`fill_descriptions`, `render_context`)."""
    titles: list[str]
    types: list[str]
    degree: np.ndarray
    edge_source: np.ndarray
    edge_target: np.ndarray
    combined_degree: np.ndarray
    claims_by_entity: dict[int, list[int]]  # entity -> its claims' rows in the claims' block
    claim_tokens: dict[int, list[int]]  # entity -> its claims' row tokens
    # Row tokens without the id cell's number (`row_tokens_without_id`): a row's id is its
    # place in the context it is in, added by `id_tokens`.
    entity_tokens: np.ndarray
    edge_tokens: np.ndarray
    # Each entity's and relationship's `human_readable_id` (`graph/numbers`), which the
    # report's citations name.
    entity_numbers: np.ndarray
    edge_numbers: np.ndarray
    encoding: str = "cl100k_base"
    header_tokens: int = field(init=False)
    # ids_prefix[k]: the tokens of the ids 1..k written out.
    ids_prefix: np.ndarray = field(init=False, repr=False)
    # Each node's edges (`edges_within`): incident[starts[n]:starts[n + 1]].
    incident: np.ndarray | None = field(default=None, init=False, repr=False)
    starts: np.ndarray | None = field(default=None, init=False, repr=False)
    # Each node's claims' row tokens summed, and their count (`element_tokens`).
    claim_sums: np.ndarray | None = field(default=None, init=False, repr=False)
    claim_counts: np.ndarray | None = field(default=None, init=False, repr=False)
    # Arrays of members asked of (`_edges_of`): id -> (the array, its edges).
    _edges_by_array: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.header_tokens = sum(count_tokens(h, self.encoding) + 2 for h in (
            ENTITY_HEADER, CLAIM_HEADER, RELATIONSHIP_HEADER, REPORT_HEADER))
        self.ids_prefix = np.zeros(1, dtype=np.int64)

    def ids_tokens(self, count: int) -> int:
        """The tokens of the ids 1..count: the id cells of a table of `count` rows."""
        if count >= len(self.ids_prefix):
            size = max(count + 1, 2 * len(self.ids_prefix))
            tokens = number_tokens(np.arange(1, size), self.encoding)
            self.ids_prefix = np.concatenate([[0], np.cumsum(tokens)]).astype(np.int64)
        return int(self.ids_prefix[count])

    def id_tokens(self, local_id: int) -> int:
        """The tokens of one row's id (its 1-based place in its table)."""
        return self.ids_tokens(local_id) - self.ids_tokens(local_id - 1)

    def entity_record(self, node: int) -> dict:
        """The entity's row without its description (filled in by the report worker)."""
        return {"human_readable_id": int(self.entity_numbers[node]), "title": self.titles[node],
                "type": self.types[node],
                "description": None, "degree": int(self.degree[node])}

    def edge_record(self, edge: int) -> dict:
        return {"human_readable_id": int(self.edge_numbers[edge]),
                "source": self.titles[self.edge_source[edge]],
                "target": self.titles[self.edge_target[edge]], "description": None,
                "combined_degree": int(self.combined_degree[edge])}

    def edges_within(self, members: np.ndarray) -> np.ndarray:
        """Edges with both ends in `members`, by combined degree descending (ties: edge order).
        From the members' own edges (an index by node, built once): the cost follows the
        community, not the graph. A mask over every node and edge per call was a quarter of
        a 100M-token update's driver time, where few communities are reported again but
        each asks of its sub-communities' sizes several times."""
        if self.incident is None:
            ends = np.concatenate([self.edge_source, self.edge_target]).astype(np.int64)
            order = np.argsort(ends, kind="stable")
            self.incident = np.tile(np.arange(len(self.edge_source), dtype=np.int64), 2)[order]
            self.starts = np.searchsorted(ends[order], np.arange(len(self.titles) + 1))
        members = np.sort(np.asarray(members, dtype=np.int64))
        first, counts = self.starts[members], self.starts[members + 1] - self.starts[members]
        total = int(counts.sum())
        if not total:
            return np.empty(0, dtype=np.int64)
        offsets = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(total)
        candidates = self.incident[offsets]

        def inside(nodes: np.ndarray) -> np.ndarray:
            at = np.minimum(np.searchsorted(members, nodes), len(members) - 1)
            return members[at] == nodes

        edges = np.unique(candidates[inside(self.edge_source[candidates])
                                     & inside(self.edge_target[candidates])])
        return edges[np.lexsort((edges, -self.combined_degree[edges]))] if len(edges) else edges

    def element_tokens(self, members: np.ndarray) -> int:
        """The tokens of every entity, relationship and claim of `members` in one context.
        Claims by node from arrays built once: a loop over the members per call was a fifth
        of a 100M-token update's report schedule, with no claim at all."""
        claim_sums, claim_counts = self.claim_totals()
        edges = self._edges_of(members)
        return int(self.entity_tokens[members].sum() + self.edge_tokens[edges].sum()
                   + claim_sums[members].sum() + self.ids_tokens(len(members))
                   + self.ids_tokens(len(edges))
                   + self.ids_tokens(int(claim_counts[members].sum())))

    def _edges_of(self, members: np.ndarray) -> np.ndarray:
        """`edges_within(members)`, found once per array: a community's members are asked
        of whether they fit, and as a sub-community in its parent's order, by the schedule
        and again by the context (17k counts for ~200 reports of a 100M-token update, most
        twice). The graph's structure does not change; the tokens, which summaries change,
        are summed each time. The array is held with its edges, so its id is not reused."""
        held = self._edges_by_array.get(id(members))
        if held is None or held[0] is not members:
            held = self._edges_by_array[id(members)] = (members, self.edges_within(members))
        return held[1]

    def claim_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Per node: its claims' row tokens summed, and their count."""
        if self.claim_sums is None:
            self.claim_sums = np.zeros(len(self.titles), dtype=np.int64)
            self.claim_counts = np.zeros(len(self.titles), dtype=np.int64)
            for node, tokens in self.claim_tokens.items():
                self.claim_sums[node], self.claim_counts[node] = sum(tokens), len(tokens)
        return self.claim_sums, self.claim_counts


@dataclass
class Selection:
    entities: list[int] = field(default_factory=list)
    claims: list[tuple[int, int]] = field(default_factory=list)  # (node, claim index)
    edges: list[int] = field(default_factory=list)
    reports: list[dict] = field(default_factory=list)
    tokens: int = 0


def select_elements(elements: GraphElements, members: np.ndarray, budget: int,
                    selection: Selection | None = None) -> Selection:
    """The paper's leaf prioritisation, stopping at the first element that does not fit."""
    selection = selection or Selection(tokens=elements.header_tokens)
    added: set[int] = set()

    def try_add_entity(node: int) -> bool:
        if node in added:
            return True
        cost = int(elements.entity_tokens[node]) + elements.id_tokens(len(selection.entities) + 1)
        if selection.tokens + cost > budget:
            return False
        selection.entities.append(node)
        selection.tokens += cost
        added.add(node)
        for index, tokens in enumerate(elements.claim_tokens.get(node, [])):
            tokens += elements.id_tokens(len(selection.claims) + 1)
            if selection.tokens + tokens > budget:
                return False
            selection.claims.append((node, index))
            selection.tokens += tokens
        return True

    for edge in elements.edges_within(members):
        if not try_add_entity(int(elements.edge_source[edge])):
            return selection
        if not try_add_entity(int(elements.edge_target[edge])):
            return selection
        cost = int(elements.edge_tokens[edge]) + elements.id_tokens(len(selection.edges) + 1)
        if selection.tokens + cost > budget:
            return selection
        selection.edges.append(int(edge))
        selection.tokens += cost
    for node in [int(members[i]) for i in np.lexsort((members, -elements.degree[members]))]:
        if not try_add_entity(node):
            return selection
    return selection


def report_row(report: dict, local_id: int) -> str:
    """A sub-community report's row; `local_id`: its place in the context's reports."""
    findings = "; ".join(f.get("summary", "") for f in report.get("findings", []))
    return "|".join(_cell(v) for v in (local_id, report["title"],
                                        f"{report['summary']} Findings: {findings}"))


def all_elements_fit(elements: GraphElements, members: np.ndarray, budget: int) -> bool:
    """A community whose element summaries all fit needs none of its sub-communities'
    reports."""
    return elements.header_tokens + elements.element_tokens(members) <= budget


def substitution_order(elements: GraphElements,
                       children: list[tuple[int, np.ndarray]]) -> list[int]:
    """The places in `children` ((community id, members) each) in the order a context
    substitutes their reports: the sub-community with the most element tokens first."""
    return sorted(range(len(children)),
                  key=lambda i: (-elements.element_tokens(children[i][1]), children[i][0]))


def _substitutions(elements: GraphElements, members: np.ndarray, ranked: list[np.ndarray]):
    """For k = 1, 2, ...: k, the members left once the first k of `ranked` (sub-community
    members, in substitution order) are replaced by their reports (a function: most k never
    need the array), and those members' element tokens (`element_tokens` of them). Each
    element is given the step that removes it (an edge: the first of its ends'), and the
    tokens left after step k are the totals less the running sums: one pass over the
    members' elements, not one per k."""
    members = np.unique(np.asarray(members, dtype=np.int64))
    if not ranked:
        return
    never = len(ranked) + 1
    step = np.full(len(members), never, dtype=np.int64)
    for k, child in enumerate(ranked, 1):
        child = np.asarray(child, dtype=np.int64)
        at = np.minimum(np.searchsorted(members, child), max(0, len(members) - 1))
        mine = at[(members[at] == child) & (step[at] == never)] if len(members) else at[:0]
        step[mine] = k
    edges = elements.edges_within(members)
    edge_step = np.minimum(step[np.searchsorted(members, elements.edge_source[edges])],
                           step[np.searchsorted(members, elements.edge_target[edges])])
    claim_sums, claim_counts = elements.claim_totals()

    def left(values: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """values[i] summed over the elements still there after each step 0..len(ranked)."""
        gone = np.bincount(steps, weights=values, minlength=never + 1)[:never]
        return np.rint(values.sum() - np.cumsum(gone)).astype(np.int64)

    ones = np.ones(len(members))
    tokens = (left(elements.entity_tokens[members].astype(np.float64), step)
              + left(elements.edge_tokens[edges].astype(np.float64), edge_step)
              + left(claim_sums[members].astype(np.float64), step))
    counts = (left(ones, step), left(np.ones(len(edges)), edge_step),
              left(claim_counts[members].astype(np.float64), step))
    for k in range(1, len(ranked) + 1):
        yield k, (lambda k=k: members[step > k]), int(
            tokens[k] + sum(elements.ids_tokens(int(c[k])) for c in counts))


def sub_reports_needed(elements: GraphElements, members: np.ndarray,
                       children: list[tuple[int, np.ndarray]], budget: int,
                       report_tokens_bound: int) -> list[int]:
    """The sub-communities (ids) whose reports a community's context may take, known once
    the element summaries inside it are final: those a context substitutes if every report
    row took `report_tokens_bound` tokens (a report's longest), since shorter rows need no
    more of them. The community's report waits only for these (all of them when even that
    overflows; none when its elements fit)."""
    if all_elements_fit(elements, members, budget) or not children:
        return []
    order = substitution_order(elements, children)
    for k, _, left_tokens in _substitutions(elements, members,
                                            [children[i][1] for i in order]):
        if elements.header_tokens + k * report_tokens_bound + left_tokens <= budget:
            return [children[i][0] for i in order[:k]]
    return [child_id for child_id, _ in children]


def select_with_sub_reports(elements: GraphElements, members: np.ndarray,
                            children: list[tuple[int, np.ndarray, dict | None]],
                            budget: int) -> Selection | None:
    """Higher-level context. `children`: (community id, members, report) of each
    sub-community, a report None while it is not written; None when the context needs a
    report that is not (a row longer than `sub_reports_needed` assumed)."""
    if all_elements_fit(elements, members, budget) or not children:
        return select_elements(elements, members, budget)
    ranked = [children[i] for i in substitution_order(
        elements, [(child_id, child) for child_id, child, _ in children])]
    report_tokens: list[int] = []
    for k, remaining, left_tokens in _substitutions(elements, members,
                                                    [child for _, child, _ in ranked]):
        report = ranked[k - 1][2]
        if report is None:
            return None
        report_tokens.append(count_tokens(report_row(report, k), elements.encoding) + 1)
        if elements.header_tokens + sum(report_tokens) + left_tokens <= budget:
            selection = Selection(reports=[r for _, _, r in ranked[:k]],
                                  tokens=elements.header_tokens + sum(report_tokens))
            selection = select_elements(elements, remaining(), budget, selection)
            return _add_links_between(elements, members, [c[1] for c in children],
                                      selection, budget)
    # Even all reports overflow: keep the reports of the largest sub-communities that fit.
    selection = Selection(tokens=elements.header_tokens)
    for (_, _, report), tokens in zip(ranked, report_tokens):
        if selection.tokens + tokens > budget:
            break
        selection.reports.append(report)
        selection.tokens += tokens
    return selection


def _add_links_between(elements: GraphElements, members: np.ndarray,
                       children: list[np.ndarray], selection: Selection,
                       budget: int) -> Selection:
    """After the substitutions: the relationships between different sub-communities (a
    substituted one's report does not hold them), by combined degree, while they fit. The row
    names both ends, so it reads on its own when an end's entity row is not in the context."""
    child_of = np.full(len(elements.titles), -1)
    for index, child in enumerate(children):
        child_of[child] = index
    chosen = set(selection.edges)
    for edge in elements.edges_within(members):
        source, target = elements.edge_source[edge], elements.edge_target[edge]
        if int(edge) in chosen or child_of[source] == child_of[target]:
            continue
        cost = int(elements.edge_tokens[edge]) + elements.id_tokens(len(selection.edges) + 1)
        if selection.tokens + cost > budget:
            break
        selection.edges.append(int(edge))
        selection.tokens += cost
    return selection


def context_spec(elements: GraphElements, selection: Selection) -> dict:
    """The selected context with each element's description left out (`None`) and claims as
    their rows in the claims' block: the report worker fills them in (`fill_descriptions`, in
    the order of `spec_keys`, and `fill_claims`)."""
    return {
        "entities": [elements.entity_record(i) for i in selection.entities],
        "claims": [elements.claims_by_entity[n][i] for n, i in selection.claims],
        "relationships": [elements.edge_record(i) for i in selection.edges],
        "reports": [{k: r[k] for k in ("community", "title", "summary", "rank", "findings")}
                    for r in selection.reports],
    }


def spec_keys(selection: Selection, n_entities: int) -> list[int]:
    """The element keys whose descriptions a spec needs: its entities, then its edges."""
    return list(selection.entities) + [n_entities + e for e in selection.edges]


def fill_descriptions(spec: dict, descriptions: list[str]) -> dict:
    rows = spec["entities"] + spec["relationships"]
    if len(rows) != len(descriptions):
        raise ValueError(f"{len(rows)} context rows but {len(descriptions)} descriptions")
    for row, description in zip(rows, descriptions):
        row["description"] = description
    return spec


def fill_claims(spec: dict, claims: pa.Table | None) -> dict:
    """The spec's claim rows -> the claims' context fields, read from the claims' block."""
    if spec["claims"]:
        spec["claims"] = claims.take(spec["claims"]).to_pylist()
    return spec


def _numbered(rows: list[dict], fields: tuple[str, ...]) -> list[str]:
    return [row_text(dict(row, human_readable_id=place), fields)
            for place, row in enumerate(rows, 1)]


def render_context(context: dict) -> str:
    """The context text the report prompt gets (descriptions filled in); each table's rows
    numbered from 1 (`context_ids` maps the numbers back to the index's ids)."""
    parts = []
    if context["reports"]:
        parts.append("\n".join([REPORT_HEADER] + [
            report_row(r, place) for place, r in enumerate(context["reports"], 1)]))
    if context["entities"]:
        parts.append("\n".join([ENTITY_HEADER] + _numbered(context["entities"], ENTITY_FIELDS)))
    if context["claims"]:
        parts.append("\n".join([CLAIM_HEADER] + _numbered(context["claims"], CLAIM_FIELDS)))
    if context["relationships"]:
        parts.append("\n".join([RELATIONSHIP_HEADER]
                               + _numbered(context["relationships"], EDGE_FIELDS)))
    return "\n\n".join(parts)


def context_ids(context: dict) -> dict[str, list[int]]:
    """Dataset name -> the index id of each of its rows in the rendered context, in order
    (the row numbered k is at k - 1): entities' and relationships' and claims'
    human_readable_id, reports' community."""
    return {"entities": [e["human_readable_id"] for e in context["entities"]],
            "relationships": [r["human_readable_id"] for r in context["relationships"]],
            "claims": [c["human_readable_id"] for c in context["claims"]],
            "reports": [r["community"] for r in context["reports"]]}


def context_record(context: dict) -> dict:
    """The selected data, for extractive reports."""
    return {
        "entities": context["entities"], "claims": context["claims"],
        "relationships": context["relationships"],
        "reports": [{k: r[k] for k in ("community", "title", "summary", "rank")}
                    for r in context["reports"]],
    }
