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
from graphrag_ray.llm.client import parse_json_object
from graphrag_ray.prompts_loader import render
from graphrag_ray.query.citations import documents_of
from graphrag_ray.query.context import answerable_units, conversation_text
from graphrag_ray.query.lazy.answer import Claim, write_answer
from graphrag_ray.query.lazy.deepening import (
    OUTSIDE, CommunityTree, Probe, community_tree, deepen)
from graphrag_ray.query.lazy.relevance import (
    RelevanceTask, lexical_claims, passage, run_relevance_task)
from graphrag_ray.query.local_search import query_text
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult, Sources
from graphrag_ray.query.retrieval import rank_units
from graphrag_ray.tokens import count_tokens
from graphrag_ray.storage.row_reader import RowReader

OFFLINE_NOTE = ("lazy search ran offline (no LLM endpoint or key configured): relevance was "
                "judged by shared words and the answer lists the passages' sentences")


def lazy_search(index: OpenedIndex, question: str, *, budget: int | None = None,
                history: list[dict] | None = None,
                on_token: Callable[[str], None] | None = None) -> SearchResult:
    config = index.config
    cfg = config.query.lazy
    budget = cfg.relevance_budget if budget is None else budget
    if budget < 1:
        raise GraphRagError(f"the relevance budget must be at least 1, got {budget}")
    use_llm = config.lazy_uses_llm()
    result = SearchResult(method="lazy", answer="")
    if not use_llm:
        result.notes.append(OFFLINE_NOTE)
    units = searchable_units(index)
    numbers, texts = units.numbers, units.texts

    # 1. Sub-questions.
    subquestions = _subquestions(index, question, history, use_llm, result)
    # 2. Similarity of every unit to each sub-question.
    similarities = _similarities(index, units.row_of, subquestions, budget)
    tree, titles = units.tree, units.titles

    # 3-4. Iterative deepening; each round's tests are batched into calls, fanned out.
    claims: dict[Probe, list[str]] = {}

    def test(probes: list[Probe]) -> list[bool]:
        found = _test(index, probes, subquestions, numbers, texts, use_llm, result)
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
        written = write_answer(question, rows, config, index.prompts, index.services,
                               index.fan_out, use_llm=use_llm, history=history,
                               on_token=on_token)
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
        "answer_calls": written.answer_calls, "llm": use_llm})
    return result


def _subquestions(index: OpenedIndex, question: str, history, use_llm: bool,
                  result: SearchResult) -> list[str]:
    """The question made to stand alone, split (one call); offline, the question with the
    user's previous turn (what retrieval matches in the other methods)."""
    if not use_llm:
        return [query_text(question, history)]
    config = index.config
    cfg = config.query.lazy
    chat = index.services.chat(config.relevance_llm())
    prompt = render(index.prompts["lazy_subquestions"], question=question,
                    conversation_history=conversation_text(history),
                    max_subquestions=cfg.max_subquestions)

    def parse(reply: str) -> list[str]:
        found = parse_json_object(reply).get("subquestions")
        if not isinstance(found, list):
            raise ValueError("reply has no 'subquestions' list")
        return [" ".join(str(q).split()) for q in found if str(q).strip()]

    try:
        found = chat.complete_parsed([{"role": "user", "content": prompt}], parse,
                                     max_tokens=cfg.relevance_max_output_tokens,
                                     kind="lazy_subquestions")
    except LLMError as exc:
        result.failures.append(f"sub-questions: {exc}; searched for the question itself")
        found = []
    result.usage.add(chat.usage)
    result.llm_calls += 1
    distinct = list(dict.fromkeys(q for q in found if q))[:cfg.max_subquestions]
    return distinct or [query_text(question, history)]


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
    the community tree over them and the communities' titles. On a 100M-token index,
    building these for each question took 10.9 s of its 10.9."""
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
    to build the tree (on a 100M-token index, 600 MB held for nothing); each piece looks its
    units up in one hash of all units, built per piece."""
    return index.rows(schema.COMMUNITIES).groups(
        ["community", "level", "parent", "children", "text_unit_ids"], min_bytes=64 * 2 ** 20)


def _titles(index: OpenedIndex) -> dict[int, str]:
    """Report titles where the index has reports, else the communities' own."""
    name = schema.COMMUNITY_REPORTS if index.has_table(schema.COMMUNITY_REPORTS) \
        else schema.COMMUNITIES
    table = index.table(name, ["community", "title"])
    return dict(zip(table.column("community").to_pylist(), table.column("title").to_pylist()))


def _test(index: OpenedIndex, probes: list[Probe], subquestions: list[str], numbers: list[int],
          texts: StoredTexts, use_llm: bool, result: SearchResult) -> dict[Probe, list[str]]:
    """One round's relevance tests: the relevant probes and their claims. With the LLM, each
    sub-question's probes go `passages_per_call` to a call, all calls at once."""
    config = index.config
    cfg = config.query.lazy
    encoding = config.tokenizer.encoding
    units = list(dict.fromkeys(p.unit for p in probes))
    text_of = dict(zip(units, texts.many(units)))
    shown = {p: passage(text_of[p.unit], subquestions[p.question], cfg.passage_tokens, encoding)
             for p in probes}
    if not use_llm:
        found = {p: lexical_claims(subquestions[p.question], shown[p], cfg.max_claims_per_passage)
                 for p in probes}
        return {p: c for p, c in found.items() if c is not None}
    batches: list[list[Probe]] = []
    for q in range(len(subquestions)):
        mine = [p for p in probes if p.question == q]
        batches += [mine[i:i + cfg.passages_per_call]
                    for i in range(0, len(mine), cfg.passages_per_call)]
    llm = config.relevance_llm()
    tasks = [RelevanceTask(subquestions[batch[0].question],
                           [(numbers[p.unit], shown[p]) for p in batch],
                           index.prompts["lazy_relevance"], config, llm, index.services)
             for batch in batches]
    found: dict[Probe, list[str]] = {}
    for batch, task, outcome in zip(batches, tasks, index.fan_out.map(
            run_relevance_task, tasks, cfg.concurrency)):
        result.usage.add(outcome.usage)
        result.llm_calls += 1
        result.details["relevance_calls"] = result.details.get("relevance_calls", 0) + 1
        result.context_tokens += sum(count_tokens(text, encoding) for _, text in task.rows)
        if outcome.failure:
            result.failures.append(outcome.failure)
            result.details["failed_relevance_calls"] = \
                result.details.get("failed_relevance_calls", 0) + 1
        for probe in batch:
            if numbers[probe.unit] in outcome.claims:
                found[probe] = outcome.claims[numbers[probe.unit]]
    return found


def _community_relevance(searched) -> dict[tuple[int, int], float]:
    """Per (sub-question, community): the share of its tested units found relevant."""
    tested: dict[tuple[int, int], list[bool]] = {}
    for probe, ok in zip(searched.probes, searched.verdicts):
        tested.setdefault((probe.question, probe.community), []).append(ok)
    return {key: sum(v) / len(v) for key, v in tested.items()}
