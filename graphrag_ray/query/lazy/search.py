"""LazyGraphRAG (`--method lazy`): an index built with no LLM call (the offline concept graph,
its communities and text-unit embeddings), and an LLM spent only at query time, within a
budget of relevance tests (`query.lazy.relevance_budget`, or `budget=`):

1. the question is made to stand alone and split into sub-questions (one call);
2. text units rank by similarity to each sub-question, communities by their best units;
3. iterative deepening (`deepening.deepen`): the best units of the best communities are tested
   for relevance, several per call; irrelevant communities are pruned, relevant ones open
   their sub-communities, until the budget is spent or nothing is left to explore;
4. the same calls take from each relevant passage the claims that bear on the question;
5. the answer is written from those claims, grouped by community, citing text units
   (`answer.write_answer`: one call, or a map-reduce when they overflow one context).

Steps 1-4 may use a cheaper model (`query.lazy.relevance_llm`). Offline, sub-questions are
the question, relevance is word overlap, and the answer lists the claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from graphrag_ray import schema
from graphrag_ray.errors import GraphRagError, LLMError
from graphrag_ray.query.citations import documents_of
from graphrag_ray.query.context import answerable_units
from graphrag_ray.query.lazy.answer import Claim, write_answer
from graphrag_ray.query.lazy.steps import LLMSteps, OfflineSteps
from graphrag_ray.query.lazy.deepening import (
    OUTSIDE, CommunityTree, Probe, community_tree, deepen)
from graphrag_ray.query.lazy.relevance import (
    passage)
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult, Sources
from graphrag_ray.query.retrieval import rank_units
from graphrag_ray.storage.row_reader import RowReader



def lazy_search(index: OpenedIndex, question: str, *, budget: int | None = None,
                history: list[dict] | None = None,
                on_token: Callable[[str], None] | None = None) -> SearchResult:
    config = index.config
    cfg = config.query.lazy
    budget = cfg.relevance_budget if budget is None else budget
    if budget < 1:
        raise GraphRagError(f"the relevance budget must be at least 1, got {budget}")
    result = SearchResult(method="lazy", answer="")
    steps = (LLMSteps if config.lazy_uses_llm() else OfflineSteps)(index, result)
    units = searchable_units(index)
    numbers, texts = units.numbers, units.texts

    # 1. Sub-questions.
    subquestions = steps.subquestions(question, history)
    # 2. Similarity of every unit to each sub-question.
    similarities = _similarities(index, units.row_of, subquestions, budget)
    tree, titles = units.tree, units.titles

    # 3-4. Iterative deepening; each round's tests are batched into calls, fanned out.
    claims: dict[Probe, list[str]] = {}

    def test(probes: list[Probe]) -> list[bool]:
        found = steps.test(probes, subquestions, numbers, _shown(index, probes, subquestions,
                                                                  texts))
        claims.update(found)
        return [p in found for p in probes]

    searched = deepen(tree, similarities, budget, cfg.passages_per_call * cfg.concurrency,
                      cfg.units_per_community, test)
    calls, failed = result.details.get("relevance_calls", 0), \
        result.details.get("failed_relevance_calls", 0)
    if calls and failed == calls:  # no passage was judged: "found nothing" would be a lie
        result.failures.insert(0, f"every relevance test failed ({failed} calls)")
        return result
    # 5. The answer, from the claims grouped by the community each unit was found through.
    relevance = _community_relevance(searched)
    rows = []
    for probe in searched.relevant:
        for claim in claims.get(probe, [])[:cfg.max_claims_per_passage]:
            rows.append(Claim(claim, numbers[probe.unit], titles.get(probe.community, (
                "Passages outside the communities" if probe.community == OUTSIDE
                else f"Community {probe.community}")),
                (-relevance[probe.question, probe.community], probe.question,
                 probe.community, -float(similarities[probe.question][probe.unit]))))
    try:
        written = write_answer(rows, config, steps.writer(question, history, on_token),
                               on_token)
    except LLMError as exc:
        result.failures.append(str(exc))
        return result
    result.answer = written.answer
    result.usage.add(written.usage)
    result.failures += written.failures
    result.llm_calls += written.map_calls + written.answer_calls
    result.context_tokens += written.context_tokens
    cited_ids = [units.id_of_number[n] for n in written.cited]
    result.sources = Sources(text_units=cited_ids, documents=documents_of(index.table, cited_ids))
    result.details.update({
        "budget": budget, "subquestions": subquestions, "relevance_tests": len(searched.probes),
        "relevant_passages": len(searched.relevant), "rounds": searched.rounds,
        "communities_tested": searched.communities_tested,
        "communities_pruned": searched.communities_pruned,
        "communities_opened": searched.communities_opened,
        "deepest_level": searched.deepest_level, "claims": len(rows),
        "claims_in_context": len(written.context_rows), "map_calls": written.map_calls,
        "answer_calls": written.answer_calls, "llm": steps.uses_llm})
    return result


def candidates(budget: int) -> int:
    """Units ranked by similarity per sub-question: every unit of an index up to 10,000
    units, and 20 per relevance test the budget allows."""
    return max(10_000, 20 * budget)


def searchable_units(index: OpenedIndex) -> "SearchableUnits":
    """`SearchableUnits` of `index`, made on first use and kept."""
    return index.kept("lazy_units", lambda: SearchableUnits.of(index))


@dataclass
class SearchableUnits:
    """What every lazy question reads, built once per open index: the units that can be
    tested (their numbers, their row by id, their texts read from the index when tested),
    the community tree over them and the communities' titles. Built for each question, they
    were nearly all of its time."""
    numbers: list[int]
    texts: "StoredTexts"
    row_of: dict[str, int]
    tree: CommunityTree
    titles: dict[int, str]
    id_of_number: dict[int, str]

    @classmethod
    def of(cls, index: OpenedIndex) -> "SearchableUnits":
        units = answerable_units(index.table(
            schema.TEXT_UNITS, ["id", "human_readable_id", "extraction_status"]))
        ids = units.column("id").to_pylist()
        numbers = units.column("human_readable_id").to_pylist()
        return cls(numbers, StoredTexts(index.rows(schema.TEXT_UNITS),
                                        units.column("row").to_numpy()),
                   {unit: row for row, unit in enumerate(ids)},
                   community_tree(_communities(index), ids), _titles(index),
                   dict(zip(numbers, ids)))


class StoredTexts:
    """The units' texts, read from the index for the units a round tests (hundreds of a
    corpus's hundreds of thousands)."""

    def __init__(self, stored: RowReader, rows: np.ndarray):
        self.stored = stored
        self.rows = rows  # unit -> its row in the stored table

    def many(self, units: list[int]) -> list[str]:
        return self.stored.take(self.rows[units], ["text"]).column("text").to_pylist()


def _similarities(index: OpenedIndex, row_of: dict[str, int], queries: list[str],
                  budget: int) -> list[np.ndarray]:
    """Per query, each unit's score: the units that answer it (`retrieval.rank_units`:
    BM25, embeddings and the graph's walk, fused) first, in that order (scores above 1),
    then the others among its nearest by embedding by cosine similarity
    (`candidates(budget)`); the rest, and units without a vector, rank last (-2): a search
    tests at most `budget` units, and an approximate index is not read whole."""
    vectors = index.vectors(schema.TEXT_UNIT_EMBEDDINGS)
    found = []
    embedded = np.asarray(index.embed(queries), dtype=np.float32) if len(vectors) else \
        [None] * len(queries)
    for query, vector in zip(queries, embedded):
        scores = np.full(len(row_of), -2.0, dtype=np.float32)
        for unit, score in vectors.nearest(vector, candidates(budget)) \
                if vector is not None else ():
            if unit in row_of:
                scores[row_of[unit]] = score
        ranked = rank_units(index, query).units
        for place, (unit, _) in enumerate(ranked):
            if unit in row_of:
                scores[row_of[unit]] = 2.0 - place / len(ranked)
        found.append(scores)
    return found


def _communities(index: OpenedIndex):
    """The communities table 64 MB at a time, not kept: its text-unit lists are needed once,
    to build the tree, and held they are hundreds of megabytes for nothing; each piece looks its
    units up in one hash of all units, built per piece."""
    return index.rows(schema.COMMUNITIES).groups(
        ["community", "level", "parent", "children", "text_unit_ids"], min_bytes=64 * 2 ** 20)


def _titles(index: OpenedIndex) -> dict[int, str]:
    """Report titles where the index has reports, else the communities' own."""
    name = schema.COMMUNITY_REPORTS if index.has_table(schema.COMMUNITY_REPORTS) \
        else schema.COMMUNITIES
    table = index.table(name, ["community", "title"])
    return dict(zip(table.column("community").to_pylist(), table.column("title").to_pylist()))


def _shown(index: OpenedIndex, probes: list[Probe], subquestions: list[str],
           texts: StoredTexts) -> dict[Probe, str]:
    """What a relevance test shows of each probe's unit: the passage nearest its
    sub-question, within `passage_tokens`."""
    cfg = index.config.query.lazy
    units = list(dict.fromkeys(p.unit for p in probes))
    text_of = dict(zip(units, texts.many(units)))
    return {p: passage(text_of[p.unit], subquestions[p.question], cfg.passage_tokens,
                       index.config.tokenizer.encoding) for p in probes}


def _community_relevance(searched) -> dict[tuple[int, int], float]:
    """Per (sub-question, community): the share of its tested units found relevant."""
    tested: dict[tuple[int, int], list[bool]] = {}
    for probe, ok in zip(searched.probes, searched.verdicts):
        tested.setdefault((probe.question, probe.community), []).append(ok)
    return {key: sum(v) / len(v) for key, v in tested.items()}
