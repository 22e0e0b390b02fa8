"""Local search: the entities a question is about (by embedding similarity, plus any entity
the question names), then one context within a token budget built from them: their
communities' reports, the entities, their relationships and claims, and the text units they
were extracted from; then one answer that cites those records.

Budget shares: `community_proportion` for reports, `text_unit_proportion` for source texts,
the rest for entities (at most half of it), then relationships, then claims. Every row is whole; rows that do not fit are
left out, so the context never exceeds `context_tokens`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable


from graphrag_ray.query.answer import Answering, Asked, answer_from_context
from graphrag_ray.query.citations import sources_of_records
from graphrag_ray.query.context import TableSection, cell, pack_table
from graphrag_ray.query.local_data import LocalData, words_of
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult
from graphrag_ray.query.retrieval import Ranking, rank_units
from graphrag_ray.sentences import split_sentences
from graphrag_ray.terms import content_terms, distinct_texts
from graphrag_ray.tokens import count_tokens, take_within_budget, truncate_to_tokens


@dataclass
class LocalContext:
    text: str
    tokens: int
    records: dict[str, list]
    entity_rows: list[dict]
    unit_texts: list[str]


def named_entities(query: str, data: LocalData) -> list[int]:
    """Entities the query names (by title or alias), longest names first."""
    named = sorted(data.named(words_of(query)), key=lambda m: (-len(m[0]), m[2]))
    return list(dict.fromkeys(row for _, row, _ in named))


def match_entities(query: str, ranking: Ranking, data: LocalData, top_k: int) -> list[int]:
    """Entities the query names (longest names first), then those the retrieval's walk
    reached most (`Ranking.entities`: what the question is about, found through the units
    that answer it)."""
    walked = [row for row, _ in ranking.entities]
    return list(dict.fromkeys(named_entities(query, data) + ranking.named + walked))[:top_k]


def build_local_context(query: str, ranking: Ranking, data: LocalData, *,
                        top_k_entities: int, top_k_relationships: int, budget: int,
                        text_unit_proportion: float, community_proportion: float,
                        encoding: str) -> LocalContext:
    matched = match_entities(query, ranking, data, top_k_entities)
    entities = data.entities.take(matched)
    titles = {e["title"] for e in entities}
    ids = [e["id"] for e in entities]
    report_budget = int(budget * community_proportion)
    unit_budget = int(budget * text_unit_proportion)
    local_budget = budget - report_budget - unit_budget

    # Reports: communities holding the most matched entities first, then by rating.
    hits = Counter(r for entity_id in ids for r in data.reports_of.get(entity_id, []))
    rank, level = data.reports.rows.numbers("rank"), data.reports.rows.numbers("level")
    ordered = sorted(hits, key=lambda r: (-hits[r], -rank[r], level[r]))
    reports = pack_table("Reports", "id|title|content", _report_rows(
        data, ordered, report_budget, encoding), report_budget, encoding)

    entity_section = pack_table(
        "Entities", "id|entity|type|description|number of relationships",
        [(e["id"], f"{e['human_readable_id']}|{cell(e['title'])}|{cell(e['type'])}|"
                   f"{cell(e['description'])}|{e['degree']}") for e in entities],
        local_budget // 2, encoding)  # so relationships and claims always get room
    # Relationships among matched entities first, then each one's strongest other links.
    inside, outside = [], []
    weight, degree = (data.relationships.numbers("weight"),
                      data.relationships.numbers("combined_degree"))
    sources, targets = (data.relationships.table.column("source"),
                        data.relationships.table.column("target"))
    for title in [e["title"] for e in entities]:
        edges = sorted(data.edges_of.get(title, []),
                       key=lambda i: (-weight[i], -degree[i], i))
        taken = 0
        for i in edges:
            if sources[i].as_py() in titles and targets[i].as_py() in titles:
                inside.append(i)
            elif taken < top_k_relationships:
                outside.append(i)
                taken += 1
    edge_rows = data.relationships.take(list(dict.fromkeys(inside + outside)))
    claim_rows = [data.claims[i] for title in titles for i in data.claims_of.get(title, [])]
    edge_budget = local_budget - entity_section.tokens
    relationship_section = pack_table(
        "Relationships", "id|source|target|description|weight",
        [(r["id"], f"{r['human_readable_id']}|{cell(r['source'])}|{cell(r['target'])}|"
                   f"{cell(r['description'])}|{r['weight']:g}") for r in edge_rows],
        edge_budget * 3 // 4 if claim_rows else edge_budget, encoding)
    claim_section = pack_table(
        "Claims", "id|subject|type|status|description",
        [(c["id"], f"{c['human_readable_id']}|{cell(c['subject_id'])}|{cell(c['type'])}|"
                   f"{cell(c['status'])}|{cell(c['description'])}") for c in claim_rows],
        local_budget - entity_section.tokens - relationship_section.tokens, encoding)

    # Source texts: those that answer the question, in the retrieval's order, then those of
    # the matched entities by how many of them they mention.
    mentions = Counter(u for e in entities for u in e["text_unit_ids"])
    ranked = [u for u, _ in ranking.units if u in data.units]
    unit_ids = list(dict.fromkeys(ranked + sorted(
        (u for u in mentions if u in data.units), key=lambda u: (-mentions[u], u))))
    unit_section, unit_texts = pack_units(unit_ids, data, unit_budget, encoding)

    sections = [reports, entity_section, relationship_section, claim_section, unit_section]
    return LocalContext(
        text="\n\n".join(s.text for s in sections if s.text),
        tokens=sum(s.tokens for s in sections),
        records={"reports": reports.keys, "entities": entity_section.keys,
                 "relationships": relationship_section.keys, "claims": claim_section.keys,
                 "text_units": unit_section.keys},
        entity_rows=[e for e in entities if e["id"] in set(entity_section.keys)],
        unit_texts=unit_texts)


def _report_rows(data: LocalData, ordered: list[int], budget: int, encoding: str
                 ) -> list[tuple[str, str]]:
    """The reports' rows in `ordered` order, each cut to half the budget, read a few at a
    time until they hold twice the budget (pack_table keeps what fits): a central entity is
    in hundreds of communities, and reading and cutting every report took most of a DRIFT
    question."""
    rows, seen_text, held, half = [], set(), 0, max(1, budget // 2)
    for start in range(0, len(ordered), REPORTS_READ_AT_ONCE):
        for report in data.reports.rows.take(ordered[start:start + REPORTS_READ_AT_ONCE]):
            if report["full_content"] in seen_text:
                continue  # a carried-down copy of a report already listed
            seen_text.add(report["full_content"])
            content = truncate_to_tokens(report["full_content"], half, encoding)
            held += min(half, len(content) // 3)
            rows.append((report["community"],
                         f"{report['community']}|{cell(report['title'])}|{cell(content)}"))
        if held >= 2 * budget:
            break
    return rows


REPORTS_READ_AT_ONCE = 8
UNITS_READ_AT_ONCE = 64
MOST_UNITS_TRIED = 1024
MOST_UNITS_MISSED = 8


def pack_units(unit_ids: list[str], data: LocalData, budget: int,
               encoding: str) -> tuple[TableSection, list[str]]:
    """The Sources table: units in the order given while they fit, the texts read from the
    index only for the units the budget could still hold by their token counts (`n_tokens`),
    at most `UNITS_READ_AT_ONCE` at a time, until it is full, `MOST_UNITS_TRIED` were
    tried (a central entity of a large index has thousands of units; the budget holds a
    dozen) or `MOST_UNITS_MISSED` were read and did not fit (the ranking goes on for a
    hundred units; filling the last few tokens is not worth reading them all). Returns the
    section and the texts of the units in it."""
    header = ["-----Sources-----", "id|text"]
    used = count_tokens("\n".join(header), encoding) + 1
    lines, keys, texts = [], [], []
    n_tokens = data.units.rows.numbers("n_tokens")
    candidates = iter(unit_ids[:MOST_UNITS_TRIED])
    missed = 0
    while used < budget and missed < MOST_UNITS_MISSED:
        window, room = [], budget - used
        for unit in candidates:
            tokens = int(n_tokens[data.units.row_of[unit]])
            if tokens > 2 * (budget - used):
                continue  # cannot fit in what is left, however its spaces are counted
            window.append(unit)
            room -= tokens
            if room <= 0 or len(window) == UNITS_READ_AT_ONCE:
                break
        if not window:
            break
        window = data.units.take(window)
        rows = [f"{u['human_readable_id']}|{cell(u['text'])}" for u in window]
        taken, used = take_within_budget(rows, budget, used, skip_misses=True,
                                         encoding=encoding)
        missed += len(rows) - len(taken)
        lines += [rows[i] for i in taken]
        keys += [window[i]["id"] for i in taken]
        texts += [window[i]["text"] for i in taken]
    if not keys:
        return TableSection("", [], 0), []
    return TableSection("\n".join(header + lines), keys, used), texts


EXTRACTIVE_SENTENCES = 6


def extractive_answer(question: str, entity_rows: list[dict], texts: list[str],
                      said: list[set[str]] | None = None) -> str:
    """Offline: the matched entities' descriptions and the source sentences sharing the most
    content words with the question, none repeating another (or anything in `said`: the
    terms of what an answer already holds, which this extends)."""
    said = [] if said is None else said
    wanted = set(content_terms(question))
    sentences = [s for text in texts for s in split_sentences(text)]
    scored = sorted(((len(wanted & set(content_terms(s))), -i, s)
                     for i, s in enumerate(dict.fromkeys(sentences))), reverse=True)
    points = distinct_texts([_entity_point(e) for e in entity_rows[:5]], said)
    best = distinct_texts([" ".join(s.split())[:400] for score, _, s in
                           scored[:3 * EXTRACTIVE_SENTENCES] if score > 0], said)
    best = best[:EXTRACTIVE_SENTENCES]
    if not points and not best:
        return "I could not find information in the index that answers this question."
    lines = [f"From the index, about: {question}", ""] + [f"- {p}" for p in points]
    if best:
        lines += ["", "Passages:"] + [f"> {s}" for s in best]
    return "\n".join(lines)


def _entity_point(entity: dict) -> str:
    """An entity and its description, each sentence once (a description joined from
    overlapping chunks can say one twice), shortened."""
    sentences = split_sentences(" ".join(entity["description"].split()))
    return f"**{entity['title']}**: " + " ".join(distinct_texts(sentences))[:300]


def query_text(question: str, history: list[dict] | None) -> str:
    """What retrieval matches: the question, with the user's previous turn for follow-ups."""
    previous = [t["content"] for t in history or [] if t.get("role") == "user"][-1:]
    return " ".join(previous + [question])


def local_search(index: OpenedIndex, question: str, *, history: list[dict] | None = None,
                 on_token: Callable[[str], None] | None = None) -> SearchResult:
    config, data = index.config, index.local_data()
    cfg = config.local_search
    query = query_text(question, history)
    context = build_local_context(
        query, rank_units(index, query), data, top_k_entities=cfg.top_k_entities,
        top_k_relationships=cfg.top_k_relationships, budget=cfg.context_tokens,
        text_unit_proportion=cfg.text_unit_proportion,
        community_proportion=cfg.community_proportion, encoding=config.tokenizer.encoding)
    result = SearchResult(method="local", answer="", context_tokens=context.tokens,
                          details={"matched_entities": [e["title"] for e in context.entity_rows],
                                   "context_records": {k: len(v) for k, v in
                                                       context.records.items()}})
    if not named_entities(query, data):
        nearest = ", ".join(e["title"] for e in context.entity_rows[:5]) or "none"
        result.notes.append("no entity in the index is named in the question; the context "
                            f"holds the entities its best passages lead to ({nearest})")
    answer_from_context(
        result, Asked(question, history, on_token), context.text,
        Answering(index, "local_answer", cfg), use_llm=config.uses_llm(cfg.method),
        extractive=lambda: "\n\n".join(
            [f"Note: {note}." for note in result.notes]
            + [extractive_answer(question, context.entity_rows, context.unit_texts)]))
    result.sources = sources_of_records(index.table, context.records)
    return result
