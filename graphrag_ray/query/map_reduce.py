"""Map-reduce over texts, as the paper's global search does it: the texts (community reports,
or source chunks for the TS baseline) are shuffled (seeded) and packed into token-limited
contexts; a map call per context returns scored points; points scoring 0 are dropped, the
rest sorted by score and packed into the reduce context; one final answer.

Offline (`method: extractive`) the map step scores report findings by lexical overlap with the
question, and the reduce step lists the best points; no LLM is involved.
"""

from __future__ import annotations

import math
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.index.reports.citations import without_citations
from graphrag_ray.llm.client import LLMServices, Usage, parse_json_object
from graphrag_ray.prompts_loader import render
from graphrag_ray.query.answer import answer_from_prompt
from graphrag_ray.query.context import conversation_text
from graphrag_ray.query.question_focus import KIND_NAMES, question_focus
from graphrag_ray.distributed.fanout import FanOut
from graphrag_ray.terms import content_terms, says_the_same
from graphrag_ray.tokens import count_tokens, take_within_budget, truncate_to_tokens

NO_ANSWER = "I could not find information in the index that answers this question."
REPORT_CONTEXT_HEADER = "id|title|rank|content"
_REFERENCE = re.compile(r"(?:Reports?|Sources?)\s*\(([^)]*)\)", re.IGNORECASE)


@dataclass
class Point:
    description: str
    score: float
    report_ids: list[int]
    batch: int


@dataclass
class MapReduceOutcome:
    answer: str
    points: list[Point] = field(default_factory=list)  # the points the reduce step used
    map_calls: int = 0
    reduce_calls: int = 0
    map_context_tokens: int = 0
    reduce_context_tokens: int = 0
    usage: Usage = field(default_factory=Usage)
    failures: list[str] = field(default_factory=list)

    @property
    def cited_ids(self) -> list[int]:
        return sorted({i for p in self.points for i in p.report_ids})


@dataclass
class MapCache:
    """What map-reduce works out of a row whatever the question, kept per open index
    (`OpenedIndex.kept`): each report's rendered row and its tokens, each finding's content
    terms (a tuple: as sets they weighed as much as the reports). Worked out for every
    question, they were most of a global search's time."""
    rows: dict = field(default_factory=dict)  # (community, max tokens) -> (row, tokens)
    terms: dict = field(default_factory=dict)  # (community, finding) -> its content terms


def report_row(report: dict, max_tokens: int, encoding: str) -> str:
    """`community|title|rank|content` in at most `max_tokens` tokens: a report larger than
    that keeps as much of its content as fits after the prefix."""
    prefix = f"{report['community']}|{report['title']}|{report['rank']:g}|"
    content = report["full_content"].replace("\n", " ")
    room = max(0, max_tokens - count_tokens(prefix, encoding))
    while True:
        row = prefix + truncate_to_tokens(content, room, encoding)
        excess = count_tokens(row, encoding) - max_tokens
        if excess <= 0 or room == 0:
            return row
        room = max(0, room - excess)  # tokens merged across the joint


def pack_report_batches(reports: list[dict], max_tokens: int, seed: int,
                        encoding: str = "cl100k_base",
                        header_text: str = REPORT_CONTEXT_HEADER,
                        cache: MapCache | None = None) -> list[list[tuple[dict, str, int]]]:
    """Shuffle (seeded) and split into batches whose rendered rows stay within `max_tokens`.
    Each entry is (report, rendered row, tokens); an oversized report is truncated to fit alone.
    Rows are report-shaped dicts (community = the id cited, title, rank, full_content).
    `cache`: rows rendered for earlier questions."""
    shuffled = list(reports)
    random.Random(seed).shuffle(shuffled)
    header = count_tokens(header_text, encoding) + 1
    rendered = {} if cache is None else cache.rows
    batches, current, used = [], [], header
    for report in shuffled:
        key = (report["community"], max_tokens - header - 1)
        if key not in rendered:
            row = report_row(report, max_tokens - header - 1, encoding)
            rendered[key] = (row, count_tokens(row, encoding) + 1)
        row, tokens = rendered[key]
        if current and used + tokens > max_tokens:
            batches.append(current)
            current, used = [], header
        current.append((report, row, tokens))
        used += tokens
    if current:
        batches.append(current)
    return batches


def parse_report_ids(text: str) -> list[int]:
    ids = []
    for group in _REFERENCE.findall(text):
        ids.extend(int(n) for n in re.findall(r"\d+", group))
    return list(dict.fromkeys(ids))


def parse_map_points(reply: str, batch: int, batch_report_ids: list[int]) -> list[Point]:
    data = parse_json_object(reply)
    points = data.get("points")
    if not isinstance(points, list):
        raise ValueError("map reply has no 'points' list")
    result = []
    for item in points:
        if not isinstance(item, dict) or not str(item.get("description", "")).strip():
            continue
        try:
            score = float(item.get("score", 0))
        except (TypeError, ValueError):
            continue
        description = str(item["description"]).strip()
        cited = [i for i in parse_report_ids(description) if i in batch_report_ids]
        result.append(Point(description, max(0.0, min(100.0, score)), cited or batch_report_ids,
                            batch))
    return result


def parse_map_answer(reply: str, batch: int, batch_report_ids: list[int]) -> list[Point]:
    """The paper's map form: one answer for the batch with one 0-100 score, as one point
    (none when the answer is empty)."""
    data = parse_json_object(reply)
    if "answer" not in data:
        raise ValueError("map reply has no 'answer'")
    answer = str(data.get("answer") or "").strip()
    try:
        score = float(data.get("score", 0))
    except (TypeError, ValueError):
        raise ValueError("map reply's 'score' is not a number") from None
    if not answer:
        return []
    cited = [i for i in parse_report_ids(answer) if i in batch_report_ids]
    return [Point(answer, max(0.0, min(100.0, score)), cited or batch_report_ids, batch)]


def rank_points(points: list[Point]) -> list[Point]:
    """Drop zero scores, highest score first (stable by batch for equal scores)."""
    return sorted((p for p in points if p.score > 0), key=lambda p: (-p.score, p.batch))


def pack_reduce_context(points: list[Point], max_tokens: int,
                        encoding: str = "cl100k_base") -> tuple[str, list[Point], int]:
    sections = [f"----Analyst {number}----\nImportance Score: {point.score:g}\n"
                f"{point.description}" for number, point in enumerate(points, start=1)]
    taken, used = take_within_budget(sections, max_tokens, encoding=encoding)
    return "\n\n".join(sections[i] for i in taken), [points[i] for i in taken], used


# A finding sharing less than this share of the best finding's overlap with the question
# (one common word of a question that names three) is not a point: it would fill the answer
# with findings that share "tech" with "diversity and inclusion in tech".
RELEVANCE_FLOOR = 0.3


def findings_of(batches: list[list[tuple[dict, str, int]]], cache: MapCache | None = None
                ) -> list[tuple[int, dict, int, str, tuple[str, ...]]]:
    """Every finding of the batches' reports (a report without findings: its title and
    summary) as (batch, report, place, text, its content terms), the terms kept in `cache`."""
    known = {} if cache is None else cache.terms
    findings = []
    for number, batch in enumerate(batches):
        for report, _, _ in batch:
            for position, finding in enumerate(report["findings"] or [{
                    "summary": report["title"], "explanation": report["summary"]}]):
                text = f"{finding['summary']}: {finding['explanation']}"
                key = (report["community"], position)
                if key not in known:
                    known[key] = tuple(sys.intern(t) for t in dict.fromkeys(content_terms(text)))
                findings.append((number, report, position, text, known[key]))
    return findings


def extractive_map(question: str, batches: list[list[tuple[dict, str, int]]],
                   label: str = "Reports",
                   kinds_of: Callable[[str], list[str]] | None = None,
                   cache: MapCache | None = None) -> tuple[list[Point], str]:
    """Score each report finding against the question's focus (`question_focus`): the
    idf-weighted share of the question's terms it contains (0-100) and, when the question asks
    for a kind of entity and `kinds_of` (a finding's text -> the kinds it cites) is given,
    the share of what it cites that is of that kind: a finding about the wrong kind keeps half
    its score; with no term found anywhere, the findings about the kind, most prominent
    first (the report's rating, the finding's place in it). When nothing matches (no term
    found, no finding of the kind) or the question names nothing to match (a thematic
    question), each report's summary becomes one point scored by the report's importance, so
    the answer surveys the communities. Returns the points and the answer's header, which
    says which of these it is."""
    focus = question_focus(question)
    findings = [(number, report, position, text, focus.terms.intersection(terms))
                for number, report, position, text, terms in findings_of(batches, cache)]
    about = [0.0] * len(findings)
    if kinds_of and focus.kinds:
        for k, (*_, text, _) in enumerate(findings):
            cited = kinds_of(text)
            about[k] = sum(kind in focus.kinds for kind in cited) / len(cited) if cited else 0.0
    wanted = any(about)
    document_frequency = Counter(t for *_, terms in findings for t in terms)
    source = _SOURCE_NAMES.get(label, label)
    if not document_frequency and not wanted:
        survey = [Point(f"{report['title']}: {report['summary']} "
                        f"[Data: {label} ({report['community']})]",
                        max(1.0, 10.0 * float(report["rank"])), [report["community"]], number)
                  for number, batch in enumerate(batches) for report, _, _ in batch]
        asked = sorted(focus.terms) + [KIND_NAMES[kind] for kind in sorted(focus.kinds)]
        if not asked:
            return survey, f"The highest-rated of {source}, for: {question}"
        return survey, (f"Nothing in {source} matches the question's words "
                        f"({', '.join(asked)}); the highest-rated of them instead, for: "
                        f"{question}")
    n = max(1, len(findings))
    idf = {t: math.log(1 + n / document_frequency[t]) for t in document_frequency}
    best = sum(idf.values())
    lexical = [100.0 * sum(idf.get(t, 0.0) for t in terms) / best if best
               else 100.0 for *_, terms in findings]
    floor = RELEVANCE_FLOOR * max(lexical, default=0.0)
    points = []
    for (number, report, position, text, _), score, share in zip(findings, lexical, about):
        if score < floor:
            continue
        if wanted:
            if best:
                score *= 0.5 + 0.5 * share
            else:
                score *= share * min(1.0, float(report["rank"]) / 10) / (1 + position / 4)
        if score > 0:
            description = without_citations(text)
            points.append(Point(f"{description} [Data: {label} ({report['community']})]",
                                round(score, 1), [report["community"]], number))
    return points, _matched_header(question, label)


EXTRACTIVE_ANSWER_POINTS = 10
EXTRACTIVE_POINT_CHARS = 400


def _shorten(description: str) -> str:
    reference = re.search(r"\s*\[Data:[^\]]*\]$", description)
    body = description[: reference.start()] if reference else description
    if len(body) > EXTRACTIVE_POINT_CHARS:
        body = body[: EXTRACTIVE_POINT_CHARS - 1].rstrip() + "…"
    return body + (reference.group() if reference else "")


_SENTENCE = re.compile(r"(?<=[.!?:。！？：])\s*")  # a point opens with "Title:"
_SOURCE_NAMES = {"Reports": "the community reports", "Sources": "the source text"}


def _matched_header(question: str, label: str) -> str:
    return f"Points from {_SOURCE_NAMES.get(label, label)} most relevant to: {question}"


def distinct_points(points: list[Point], limit: int) -> list[Point]:
    """The first `limit` points (in rank order) none of which repeats an earlier one, as the
    answer shows them (shortened): one that says mostly the same words, or shows a sentence of
    eight or more words another one showed (two findings quoting the same passage read as one
    point said twice, however they go on)."""
    kept: list[Point] = []
    seen: list[set[str]] = []
    said: set[tuple[str, ...]] = set()
    for point in points:
        shown = without_citations(_shorten(point.description))
        terms = set(content_terms(shown))
        sentences = {tuple(words) for words in map(content_terms, _SENTENCE.split(shown))
                     if len(words) >= 8}
        if says_the_same(terms, seen) or sentences & said:
            continue
        seen.append(terms)
        said |= sentences
        kept.append(point)
        if len(kept) == limit:
            break
    return kept


def extractive_reduce(question: str, points: list[Point], label: str = "Reports",
                      header: str | None = None) -> str:
    """The best points, shortened, without repeats, as a readable list under a header naming
    what they come from (`extractive_map`'s; all of them stay in result.points)."""
    if not points:
        return NO_ANSWER
    lines = [header or _matched_header(question, label), ""]
    lines += [f"- {_shorten(p.description)}"
              for p in distinct_points(points, EXTRACTIVE_ANSWER_POINTS)]
    return "\n".join(lines)


@dataclass
class MapTask:
    """One map call, self-contained so it can run in another process (a Ray actor)."""
    number: int
    question: str
    context: str
    ids: list[int]
    template: str
    config: GraphRagConfig
    services: LLMServices
    single: bool = False  # the paper's form: one answer and one score (`parse_map_answer`)


@dataclass
class MapOutcome:
    points: list[Point]
    usage: Usage
    failure: str = ""


def run_map_task(task: MapTask) -> MapOutcome:
    prompt = render(task.template, question=task.question, context_data=task.context)
    chat = task.services.chat(task.config.llm)
    try:
        points = chat.complete_parsed(
            [{"role": "user", "content": prompt}],
            lambda reply: (parse_map_answer if task.single else parse_map_points)(
                reply, task.number, task.ids),
            max_tokens=task.config.global_search.map_max_output_tokens,
            kind="global_map_single" if task.single else "global_map")
    except LLMError as exc:
        return MapOutcome([], chat.usage, f"map batch {task.number}: {exc}")
    return MapOutcome(points, chat.usage)


def map_reduce(question: str, rows: list[dict], config: GraphRagConfig, prompts: dict[str, str],
               *, map_prompt: str, header: str, services: LLMServices, fan_out: FanOut,
               history: list[dict] | None = None,
               on_token: Callable[[str], None] | None = None,
               kinds_of: Callable[[str], list[str]] | None = None,
               cache: MapCache | None = None) -> MapReduceOutcome:
    """Map calls fan out (Ray actors or asyncio); the reduce answer streams to `on_token`.
    With the LLM or extractive, chosen once: both steps follow `global_search.method`.
    `kinds_of`: what kinds of entity a finding cites, for the extractive map; `cache`: what
    earlier questions worked out of the same rows."""
    cfg = config.global_search
    encoding = config.tokenizer.encoding
    batches = pack_report_batches(rows, cfg.map_context_tokens, cfg.shuffle_seed, encoding,
                                  header, cache)
    outcome = MapReduceOutcome(answer=NO_ANSWER)
    outcome.map_context_tokens = sum(t for batch in batches for _, _, t in batch)
    steps = _LLMSteps(config, prompts, services) if config.uses_llm(cfg.method) \
        else _ExtractiveSteps("Sources" if map_prompt == "text_map" else "Reports", kinds_of,
                              cache)
    single = cfg.map_answer == "single"
    template = prompts.get(f"{map_prompt}_single" if single else map_prompt, "")
    points = steps.map(question, batches, header, template, single, fan_out, outcome)
    ranked = rank_points(points)
    context, used, tokens = pack_reduce_context(ranked, cfg.reduce_context_tokens, encoding)
    outcome.points = used
    outcome.reduce_context_tokens = tokens
    if not used:
        if on_token:
            on_token(outcome.answer)
        return outcome
    outcome.answer = steps.reduce(question, context, used, history, on_token, outcome)
    return outcome


class _LLMSteps:
    def __init__(self, config: GraphRagConfig, prompts: dict[str, str], services: LLMServices):
        self.config, self.prompts, self.services = config, prompts, services

    def map(self, question: str, batches, header: str, template: str, single: bool,
            fan_out: FanOut, outcome: MapReduceOutcome) -> list[Point]:
        tasks = [MapTask(number, question, "\n".join([header] + [row for _, row, _ in batch]),
                         [report["community"] for report, _, _ in batch], template,
                         self.config, self.services, single)
                 for number, batch in enumerate(batches)]
        points = []
        for result in fan_out.map(run_map_task, tasks, self.config.global_search.concurrency):
            points.extend(result.points)
            outcome.usage.add(result.usage)
            outcome.map_calls += 1
            if result.failure:
                outcome.failures.append(result.failure)
        if outcome.failures and len(outcome.failures) == len(batches):
            raise LLMError(f"every map call failed; first: {outcome.failures[0]}")
        return points

    def reduce(self, question: str, context: str, used: list[Point], history, on_token,
               outcome: MapReduceOutcome) -> str:
        cfg = self.config.global_search
        chat = self.services.chat(self.config.llm)
        prompt = render(self.prompts["global_reduce"], question=question, report_data=context,
                        response_type=cfg.response_type,
                        conversation_history=conversation_text(history))
        answer = answer_from_prompt(chat, prompt, cfg.reduce_max_output_tokens, on_token,
                                    kind="global_reduce")
        outcome.reduce_calls = 1
        outcome.usage.add(chat.usage)
        return answer


class _ExtractiveSteps:
    def __init__(self, label: str, kinds_of: Callable[[str], list[str]] | None = None,
                 cache: MapCache | None = None):
        self.label, self.kinds_of, self.cache = label, kinds_of, cache
        self.header: str | None = None  # the map's, for the reduce

    def map(self, question: str, batches, header: str, template: str, single: bool,
            fan_out: FanOut, outcome: MapReduceOutcome) -> list[Point]:
        points, self.header = extractive_map(question, batches, self.label, self.kinds_of,
                                             self.cache)
        return points

    def reduce(self, question: str, context: str, used: list[Point], history, on_token,
               outcome: MapReduceOutcome) -> str:
        answer = extractive_reduce(question, used, self.label, self.header)
        if on_token:
            on_token(answer)
        return answer
