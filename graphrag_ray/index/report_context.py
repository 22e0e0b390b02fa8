"""The context a community report is written from, built exactly as the paper prescribes.

Leaf communities: edges in decreasing combined degree; for each, its source, its target, their
claims, then the edge itself, until the token budget is used. Entities without edges follow,
most connected first.

Higher communities: if all their element summaries fit, as for leaves. Otherwise sub-communities
are ranked by the tokens of their element summaries, descending, and their elements are replaced
by their (shorter) reports one at a time until the context fits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from graphrag_ray.tokens import count_tokens

ENTITY_HEADER = "-----Entities-----\nid|entity|type|description|degree"
CLAIM_HEADER = "-----Claims-----\nid|entity|type|status|description"
RELATIONSHIP_HEADER = "-----Relationships-----\nid|source|target|description|combined_degree"
REPORT_HEADER = "-----Sub-community reports-----\nid|title|content"


def _cell(value: object) -> str:
    return str(value).replace("|", "/").replace("\n", " ")


def _entity_row(entity: dict) -> str:
    return "|".join(_cell(entity[k]) for k in ("human_readable_id", "title", "type",
                                               "description", "degree"))


def _edge_row(edge: dict) -> str:
    return "|".join(_cell(edge[k]) for k in ("human_readable_id", "source", "target",
                                             "description", "combined_degree"))


@dataclass
class GraphElements:
    """Rendered rows and token counts of every element, computed once for all communities."""
    entities: list[dict]
    relationships: list[dict]
    edge_source: np.ndarray
    edge_target: np.ndarray
    claims_by_entity: dict[int, list[dict]]
    encoding: str = "cl100k_base"
    entity_rows: list[str] = field(init=False)
    entity_tokens: np.ndarray = field(init=False)
    edge_rows: list[str] = field(init=False)
    edge_tokens: np.ndarray = field(init=False)
    claim_rows: dict[int, list[tuple[str, int]]] = field(init=False)
    header_tokens: int = field(init=False)

    def __post_init__(self) -> None:
        self.entity_rows = [_entity_row(e) for e in self.entities]
        self.edge_rows = [_edge_row(r) for r in self.relationships]
        self.entity_tokens = np.array([count_tokens(r, self.encoding) + 1 for r in self.entity_rows],
                                      dtype=np.int64)
        self.edge_tokens = np.array([count_tokens(r, self.encoding) + 1 for r in self.edge_rows],
                                    dtype=np.int64)
        self.claim_rows = {
            node: [(row, count_tokens(row, self.encoding) + 1) for row in (
                "|".join(_cell(c[k]) for k in ("human_readable_id", "subject_id", "type", "status",
                                               "description")) for c in claims)]
            for node, claims in self.claims_by_entity.items()}
        self.header_tokens = sum(count_tokens(h, self.encoding) + 2 for h in (
            ENTITY_HEADER, CLAIM_HEADER, RELATIONSHIP_HEADER, REPORT_HEADER))

    def set_entity_description(self, node: int, description: str) -> None:
        """A summary arrived: the entity's row and token count follow it."""
        self.entities[node]["description"] = description
        self.entity_rows[node] = _entity_row(self.entities[node])
        self.entity_tokens[node] = count_tokens(self.entity_rows[node], self.encoding) + 1

    def set_edge_description(self, edge: int, description: str) -> None:
        self.relationships[edge]["description"] = description
        self.edge_rows[edge] = _edge_row(self.relationships[edge])
        self.edge_tokens[edge] = count_tokens(self.edge_rows[edge], self.encoding) + 1

    def edges_within(self, members: np.ndarray) -> np.ndarray:
        """Edges with both ends in `members`, by combined degree descending (ties: edge order)."""
        # A boolean mask over nodes: O(nodes + edges) per community, no sort (np.isin sorts).
        member = np.zeros(len(self.entities), dtype=bool)
        member[members] = True
        edges = np.flatnonzero(member[self.edge_source] & member[self.edge_target])
        degree = np.array([self.relationships[i]["combined_degree"] for i in edges], dtype=np.int64)
        return edges[np.lexsort((edges, -degree))] if len(edges) else edges

    def element_tokens(self, members: np.ndarray) -> int:
        claims = sum(t for m in members for _, t in self.claim_rows.get(int(m), []))
        return int(self.entity_tokens[members].sum() + self.edge_tokens[self.edges_within(members)].sum()
                   + claims)


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
        cost = int(elements.entity_tokens[node])
        if selection.tokens + cost > budget:
            return False
        selection.entities.append(node)
        selection.tokens += cost
        added.add(node)
        for index, (_, tokens) in enumerate(elements.claim_rows.get(node, [])):
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
        cost = int(elements.edge_tokens[edge])
        if selection.tokens + cost > budget:
            return selection
        selection.edges.append(int(edge))
        selection.tokens += cost
    degrees = [elements.entities[int(m)]["degree"] for m in members]
    for node in [int(members[i]) for i in np.lexsort((members, -np.array(degrees)))]:
        if not try_add_entity(node):
            return selection
    return selection


def report_row(report: dict) -> str:
    findings = "; ".join(f.get("summary", "") for f in report.get("findings", []))
    return "|".join(_cell(v) for v in (report["community"], report["title"],
                                        f"{report['summary']} Findings: {findings}"))


def select_with_sub_reports(elements: GraphElements, members: np.ndarray,
                            children: list[tuple[np.ndarray, dict]], budget: int) -> Selection:
    """Higher-level context. `children`: (members, report) of each sub-community."""
    if elements.header_tokens + elements.element_tokens(members) <= budget or not children:
        return select_elements(elements, members, budget)
    ranked = sorted(children, key=lambda c: (-elements.element_tokens(c[0]), c[1]["community"]))
    report_tokens = [count_tokens(report_row(r), elements.encoding) + 1 for _, r in ranked]
    for k in range(1, len(ranked) + 1):
        replaced = np.concatenate([c[0] for c in ranked[:k]])
        remaining = np.setdiff1d(members, replaced)
        total = (elements.header_tokens + sum(report_tokens[:k])
                 + elements.element_tokens(remaining))
        if total <= budget:
            selection = Selection(reports=[r for _, r in ranked[:k]],
                                  tokens=elements.header_tokens + sum(report_tokens[:k]))
            return select_elements(elements, remaining, budget, selection)
    # Even all reports overflow: keep the reports of the largest sub-communities that fit.
    selection = Selection(tokens=elements.header_tokens)
    for (_, report), tokens in zip(ranked, report_tokens):
        if selection.tokens + tokens > budget:
            break
        selection.reports.append(report)
        selection.tokens += tokens
    return selection


def render_context(elements: GraphElements, selection: Selection) -> str:
    parts = []
    if selection.reports:
        parts.append("\n".join([REPORT_HEADER] + [report_row(r) for r in selection.reports]))
    if selection.entities:
        parts.append("\n".join([ENTITY_HEADER] + [elements.entity_rows[i] for i in selection.entities]))
    if selection.claims:
        parts.append("\n".join([CLAIM_HEADER] + [elements.claim_rows[n][i][0]
                                                 for n, i in selection.claims]))
    if selection.edges:
        parts.append("\n".join([RELATIONSHIP_HEADER] + [elements.edge_rows[i]
                                                        for i in selection.edges]))
    return "\n\n".join(parts)


def context_record(elements: GraphElements, selection: Selection) -> str:
    """The selected data as JSON, for extractive reports and for citations."""
    return json.dumps({
        "entities": [elements.entities[i] for i in selection.entities],
        "claims": [elements.claims_by_entity[n][i] for n, i in selection.claims],
        "relationships": [elements.relationships[i] for i in selection.edges],
        "reports": [{k: r[k] for k in ("community", "title", "summary", "rank")}
                    for r in selection.reports],
    }, default=str)
