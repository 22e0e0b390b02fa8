"""The text units that answer a question, best first: what every query method reads.

Three rankings of the units, fused by reciprocal rank (RRF):
- lexical: BM25 over the units' titles and texts (`storage/lexical_index.py`);
- dense: the units nearest the question by embedding, when the index's vectors come from a
  model (an endpoint, or the local model; hashed words are no meaning and are left out);
- graph: a personalized PageRank over entities and units (`graph.py`) that starts from the
  entities and titled documents the question names, the entities nearest it by embedding
  and the best lexical and dense matches (HippoRAG's idea): units linked to what the
  question is about rise, though they share none of its words.

Then a bridge (`RetrievalConfig.bridge`): a multi-hop question's next passage is often the
document about an entity that its first passage names ("the director of the film shot in
Leland": Leland's page names the film, the film's page its director). From the best unit,
the documents titled by the entities it mentions are ranked by the question's words that
the best unit does not hold, and fused in.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from graphrag_ray.config import RetrievalConfig
from graphrag_ray.query.retrieval.graph import RetrievalGraph, personalized_pagerank
from graphrag_ray.terms import content_terms


@dataclass
class Ranking:
    """`units`: unit ids and fused scores, best first; `entities`: entity rows by the walk's
    mass per unit of their degree, best first (what the question is about); `channels`: each ranking's unit ids (for
    evaluation and explanation)."""
    units: list[tuple[str, float]]
    entities: list[tuple[int, float]] = field(default_factory=list)
    channels: dict[str, list[str]] = field(default_factory=dict)
    named: list[int] = field(default_factory=list)  # entity rows the question names


def fuse(rankings: list[list[str]], weights: list[float], k: int) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: each ranking gives its r-th item weight / (k + r)."""
    scores: dict[str, float] = defaultdict(float)
    for ranking, weight in zip(rankings, weights):
        for place, item in enumerate(ranking):
            scores[item] += weight / (k + place)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _softmax_seeds(matches: list[tuple[str, float]], temperature: float, count: int
                   ) -> list[tuple[str, float]]:
    """The first `count` matches weighted exp((score - best) / temperature): the best is 1,
    a much weaker match next to nothing."""
    top = matches[:count]
    if not top:
        return []
    best = top[0][1]
    return [(unit, float(np.exp((score - best) / temperature))) for unit, score in top]


def walk(graph: RetrievalGraph, question: str, seeds: list[tuple[str, float]],
         config: RetrievalConfig, entity_seeds: list[tuple[int, float]] = ()
         ) -> tuple[np.ndarray, list[int]]:
    """The walk's mass on every node, seeded by the entities and titles the question names
    (each weighted by specificity), by `seeds` (unit, weight) and `entity_seeds` (entity
    row, weight); the named entities."""
    named, titled = graph.seeds_named(question)
    reset = np.zeros(graph.adjacency.shape[0])
    for row, weight in named.items():
        reset[row] += weight
    for row, weight in entity_seeds:
        reset[row] += 0.5 * weight
    for unit in titled:
        reset[graph.entities + unit] += 1.0
    for unit, weight in seeds:
        row = graph.unit_row.get(unit)
        if row is not None:
            reset[graph.entities + row] += 0.5 * weight
    return personalized_pagerank(graph, reset, config.damping), list(named)


def bridge(graph: RetrievalGraph, best: str, best_text: str, question: str,
           score_units) -> list[str]:
    """From the best unit, the documents about the entities it mentions (not the best unit
    itself), ranked by the question's words the best unit does not hold (`score_units(terms,
    unit ids) -> {unit id: score}`); none when the best unit holds them all."""
    row = graph.unit_row.get(best)
    if row is None:
        return []
    held = set(content_terms(best_text))
    rest = [term for term in content_terms(question) if term not in held]
    entities = graph.unit_entities[row].indices
    candidates = {graph.unit_ids[unit] for entity in entities
                  for unit in graph.about.get(int(entity), ()) if unit != row}
    if not rest or not candidates:
        return []
    scores = score_units(rest, sorted(candidates))
    return sorted(scores, key=lambda unit: (-scores[unit], unit))


def _best(mass: np.ndarray, count: int) -> np.ndarray:
    """The rows of the `count` largest positive masses, largest first (ties by row)."""
    rows = np.flatnonzero(mass)
    if len(rows) > count:
        rows = np.sort(rows[np.argpartition(-mass[rows], count - 1)[:count]])
    return rows[np.argsort(-mass[rows], kind="stable")]


def rank(question: str, config: RetrievalConfig, graph: RetrievalGraph | None,
         lexical: list[tuple[str, float]], dense: list[tuple[str, float]],
         unit_text, score_units, dense_entities: list[tuple[int, float]] = ()) -> Ranking:
    """The fused ranking from the channels' matches (`lexical`, `dense`: unit ids and scores,
    best first; either may be empty). `unit_text(unit id)`: a unit's title and text, for
    the bridge; `score_units`: the lexical scores of given units for given words."""
    channels = {"lexical": [u for u, _ in lexical], "dense": [u for u, _ in dense]}
    rankings, weights = [channels["lexical"], channels["dense"]], [1.0, 1.0]
    entities, named = [], []
    if graph is not None and graph.adjacency.shape[0]:
        seeds = _softmax_seeds(lexical, config.lexical_temperature, config.seed_units) + \
            _softmax_seeds(dense, config.dense_temperature, config.seed_units)
        entity_seeds = [(int(row), weight) for row, weight in _softmax_seeds(
            list(dense_entities), config.dense_temperature, config.seed_units)]
        mass, named = walk(graph, question, seeds, config, entity_seeds)
        on_units = mass[graph.entities:]
        channels["graph"] = [graph.unit_ids[i] for i in _best(on_units, config.candidates)]
        # Per unit of degree (a sweep's order): a hub holds mass because everything leads
        # to it, an entity near the seeds because the question does.
        on_entities = mass[:graph.entities] * graph.inverse_degree[:graph.entities]
        entities = [(int(e), float(on_entities[e]))
                    for e in _best(on_entities, config.candidates)]
        rankings.append(channels["graph"])
        weights.append(config.graph_weight)
    first = fuse(rankings, weights, config.rrf_k)
    units = first
    if config.bridge and graph is not None and first:
        channels["bridge"] = bridge(graph, first[0][0], unit_text(first[0][0]), question,
                                    score_units)
        if channels["bridge"]:
            units = fuse([[u for u, _ in first], channels["bridge"]], [1.0, 1.0], config.rrf_k)
    return Ranking(units[:config.candidates], entities, channels, named)
