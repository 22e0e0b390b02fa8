"""The graph retrieval walks: entities and text units as nodes of one undirected weighted
graph, built once per open index from its tables.

- an entity and each unit it was extracted from (a mention);
- an entity and the units of the documents about it: a document whose title is the
  entity's name (a wiki's article, a product's page, a person's biography); what a passage
  that mentions a name leads to, the second passage of a question that goes through it;
- two related entities (a relationship), by its weight.

Names are read as content words (`terms.content_terms`), so "Rudy Giuliani", "RUDY
GIULIANI" and "Rudy Giuliani (politician)" (a title's last bracket disambiguates it) are
one name in any script. Everything is arrays (a CSR matrix, row numbers), none of it Python
objects per row: a 100M-token index has a million nodes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import sparse

from graphrag_ray.terms import content_terms

_BRACKET = re.compile(r"\s*\([^()]*\)\s*$")
MAX_NAME_WORDS = 8  # the longest name a question is searched for


def name_key(name: str) -> str:
    """A name as compared: its content words, without a last bracket ("X (band)")."""
    return " ".join(content_terms(_BRACKET.sub("", name or "")))


@dataclass
class RetrievalGraph:
    """`adjacency`: entities' rows first (0..entities-1), then units' (entities + row).
    `names`: name key -> entity rows named so; `titles`: name key -> unit rows of the
    documents titled so; `unit_entities`/`entity_units`: the mentions, both ways;
    `about`: entity row -> unit rows of the documents about it."""
    entities: int
    unit_ids: list[str]
    unit_row: dict[str, int]
    adjacency: sparse.csr_matrix
    names: dict[str, list[int]]
    titles: dict[str, list[int]]
    unit_entities: sparse.csr_matrix  # (units, entities), 1 where a unit mentions one
    entity_units: np.ndarray  # units per entity (its specificity)
    about: dict[int, list[int]]
    inverse_degree: np.ndarray  # 1 / each node's weighted degree (0: none)
    unit_titles: list[str]  # each unit's document title
    unit_stored_rows: np.ndarray  # each unit's row in the stored text units table
    entity_row: dict[str, int]  # entity id -> row

    def seeds_named(self, question: str) -> tuple[dict[int, float], set[int]]:
        """The entities and the titled documents' units a question names (the longest names
        first: a word already in a longer name starts no shorter one), each weighted by
        specificity: an entity in few units says more than one in every unit."""
        words = content_terms(question)
        entities: dict[int, float] = {}
        units: set[int] = set()
        taken = [False] * len(words)
        for size in range(min(MAX_NAME_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                if all(taken[start:start + size]):
                    continue
                key = " ".join(words[start:start + size])
                rows, titled = self.names.get(key, ()), self.titles.get(key, ())
                for row in rows:
                    entities[row] = 1.0 / np.log(2.0 + self.entity_units[row])
                units.update(titled)
                if rows or titled:
                    taken[start:start + size] = [True] * size
        return entities, units


def _mentions(entities: pa.Table, unit_row: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(entity row, unit row) of every mention, as arrays."""
    lists = entities.column("text_unit_ids").combine_chunks()
    flat = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists).to_numpy()
    ids = pa.array(list(unit_row), pa.string())
    rows = pc.index_in(flat, value_set=ids).fill_null(-1).to_numpy(zero_copy_only=False)
    keep = rows >= 0
    return parents[keep], rows[keep]


def _relationships(relationships: pa.Table, entity_titles: pa.Array
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source row, target row, weight) of every relationship between known entities."""
    ends = [pc.index_in(relationships.column(side).combine_chunks(), value_set=entity_titles)
            .fill_null(-1).to_numpy(zero_copy_only=False) for side in ("source", "target")]
    weights = relationships.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
    keep = (ends[0] >= 0) & (ends[1] >= 0)
    return ends[0][keep], ends[1][keep], weights[keep]


def build_graph(entities: pa.Table, relationships: pa.Table, units: pa.Table,
                documents: pa.Table, about_weight: float) -> RetrievalGraph:
    """`entities`: id, title, text_unit_ids; `relationships`: source, target, weight;
    `units`: id, document_ids, row (the units a question may be answered from, with their
    rows in the stored table); `documents`: id, title."""
    unit_ids = units.column("id").to_pylist()
    unit_row = {unit: row for row, unit in enumerate(unit_ids)}
    count, n_units = entities.num_rows, len(unit_ids)
    titles_of = dict(zip(documents.column("id").to_pylist(),
                         documents.column("title").to_pylist()))
    titles: dict[str, list[int]] = defaultdict(list)
    unit_titles = [titles_of.get(ids[0], "") if ids else ""
                   for ids in units.column("document_ids").to_pylist()]
    keys = {title: name_key(title) for title in set(unit_titles)}  # a document has many units
    for row, title in enumerate(unit_titles):
        if keys[title]:
            titles[keys[title]].append(row)
    names: dict[str, list[int]] = defaultdict(list)
    about: dict[int, list[int]] = {}
    for row, title in enumerate(entities.column("title").to_pylist()):
        key = name_key(title)
        if key:
            names[key].append(row)
            if key in titles:
                about[row] = titles[key]
    mention_e, mention_u = _mentions(entities, unit_row)
    source, target, weight = _relationships(relationships, entities.column("title")
                                            .combine_chunks())
    about_e = np.array([e for e, rows in about.items() for _ in rows], np.int64)
    about_u = np.array([u for rows in about.values() for u in rows], np.int64)
    rows = np.concatenate([mention_e, about_e, source])
    columns = np.concatenate([count + mention_u, count + about_u, target])
    values = np.concatenate([np.ones(len(mention_e)), np.full(len(about_e), about_weight),
                             np.maximum(weight, 0.0)])
    size = count + n_units
    half = sparse.coo_matrix((values, (rows, columns)), shape=(size, size))
    adjacency = (half + half.T).tocsr()
    mentions = sparse.csr_matrix((np.ones(len(mention_e)), (mention_u, mention_e)),
                                 shape=(n_units, count))
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    return RetrievalGraph(count, unit_ids, unit_row, adjacency, dict(names), dict(titles),
                          mentions, np.bincount(mention_e, minlength=count), about, inverse,
                          unit_titles, units.column("row").to_numpy(zero_copy_only=False),
                          {e: row for row, e in enumerate(entities.column("id").to_pylist())})


def personalized_pagerank(graph: RetrievalGraph, reset: np.ndarray, damping: float,
                          tolerance: float = 1e-4, smallest: float = 1e-6,
                          most_steps: int = 50) -> np.ndarray:
    """The stationary distribution of a walk over `graph` that follows an edge (by weight)
    with probability `damping` and jumps back to `reset` (normalized) otherwise; a node
    without edges sends its mass back to `reset`.

    Summed step by step, (1 - damping) * sum_k damping^k P^k reset, from the nodes the mass
    has reached: a step reads only the edges of nodes holding at least `smallest` of the
    mass still moving, so a question's walk costs the neighbourhood of its seeds, not the
    whole graph (a 100M-token index has millions of edges). Every node a step reaches keeps
    its score; only what is smaller than `smallest` stops moving on, and the walk stops when
    less than `tolerance` is still moving."""
    total = reset.sum()
    scores = np.zeros_like(reset, dtype=np.float64)
    if total <= 0:
        return scores
    start_rows = np.flatnonzero(reset)
    start = reset[start_rows] / total
    rows, moving = start_rows, start
    scores[rows] = (1.0 - damping) * moving
    for _ in range(most_steps):
        rows, moving = _step(graph, rows, moving, damping, start_rows, start)
        np.add.at(scores, rows, (1.0 - damping) * moving)
        keep = moving >= smallest
        rows, moving = rows[keep], moving[keep]
        if moving.sum() < tolerance:
            break
    return scores


def _step(graph: RetrievalGraph, rows: np.ndarray, moving: np.ndarray, damping: float,
          start_rows: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One step of the walk from `rows` holding `moving`: (rows reached, mass on each). A
    step that would read a good share of all edges reads them all in one sparse product,
    cheaper than gathering most of them."""
    adjacency, size = graph.adjacency, graph.adjacency.shape[0]
    inverse = graph.inverse_degree[rows]
    stranded = moving[inverse == 0].sum()
    indptr = adjacency.indptr
    if (indptr[rows + 1] - indptr[rows]).sum() * 4 > adjacency.nnz:
        sending = np.zeros(size)
        sending[rows] = damping * moving * inverse
        mass = adjacency @ sending
    else:
        edges = adjacency[rows]
        flow = edges.data * np.repeat(damping * moving * inverse, np.diff(edges.indptr))
        mass = np.bincount(edges.indices, weights=flow, minlength=size)
    if stranded > 0:
        mass[start_rows] += damping * stranded * start
    reached = np.flatnonzero(mass)
    return reached, mass[reached]
