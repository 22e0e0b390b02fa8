"""Global search, as the paper describes: community reports of one level, shuffled (seeded) and
packed into token-limited contexts; a map call per context returns scored points; points scoring
0 are dropped, the rest sorted by score and packed into the reduce context; one final answer.

Offline (`method: extractive`) the map step scores report findings by lexical overlap with the
question, and the reduce step lists the best points; no LLM is involved.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.llm.client import ChatClient, LLMServices, Usage, parse_json_object
from graphrag_ray.prompts_loader import render
from graphrag_ray.tokens import count_tokens, truncate_to_tokens

NO_ANSWER = "I could not find information in the index that answers this question."
REPORT_CONTEXT_HEADER = "id|title|rank|content"
_REPORT_REFERENCE = re.compile(r"Reports?\s*\(([^)]*)\)", re.IGNORECASE)
_TERMS = re.compile(r"[a-z0-9]+")
_QUESTION_STOPWORDS = set("""
a an and are as at be by can do does for from how in is it its of on or that the their them
these they this to was were what when where which who whom why will with would about across
main most major key some any all there between into than more over such your you i we our
""".split())


@dataclass
class Point:
    description: str
    score: float
    report_ids: list[int]
    batch: int


@dataclass
class GlobalSearchResult:
    answer: str
    level: int
    points: list[Point] = field(default_factory=list)
    report_ids: list[int] = field(default_factory=list)
    map_calls: int = 0
    reduce_calls: int = 0
    context_tokens: int = 0
    usage: Usage = field(default_factory=Usage)
    failures: list[str] = field(default_factory=list)


def report_row(report: dict, max_tokens: int, encoding: str) -> str:
    content = truncate_to_tokens(report["full_content"].replace("\n", " "), max_tokens, encoding)
    return f"{report['community']}|{report['title']}|{report['rank']:g}|{content}"


def pack_report_batches(reports: list[dict], max_tokens: int, seed: int,
                        encoding: str = "cl100k_base") -> list[list[tuple[dict, str, int]]]:
    """Shuffle (seeded) and split into batches whose rendered rows stay within `max_tokens`.
    Each entry is (report, rendered row, tokens); an oversized report is truncated to fit alone."""
    shuffled = list(reports)
    random.Random(seed).shuffle(shuffled)
    header = count_tokens(REPORT_CONTEXT_HEADER, encoding) + 1
    batches, current, used = [], [], header
    for report in shuffled:
        row = report_row(report, max_tokens - header - 1, encoding)
        tokens = count_tokens(row, encoding) + 1
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
    for group in _REPORT_REFERENCE.findall(text):
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


def rank_points(points: list[Point]) -> list[Point]:
    """Drop zero scores, highest score first (stable by batch for equal scores)."""
    return sorted((p for p in points if p.score > 0), key=lambda p: (-p.score, p.batch))


def pack_reduce_context(points: list[Point], max_tokens: int,
                        encoding: str = "cl100k_base") -> tuple[str, list[Point], int]:
    sections, used_points, used = [], [], 0
    for number, point in enumerate(points, start=1):
        section = f"----Analyst {number}----\nImportance Score: {point.score:g}\n{point.description}"
        tokens = count_tokens(section, encoding) + 1
        if used + tokens > max_tokens:
            break
        sections.append(section)
        used_points.append(point)
        used += tokens
    return "\n\n".join(sections), used_points, used


def _terms(text: str) -> list[str]:
    return [t for t in _TERMS.findall(text.lower()) if t not in _QUESTION_STOPWORDS and len(t) > 1]


def extractive_map(question: str, batches: list[list[tuple[dict, str, int]]]) -> list[Point]:
    """Score each report finding by idf-weighted overlap with the question (0-100). When no
    question term occurs anywhere (a thematic question), each report's summary becomes one point
    scored by the report's importance, so the answer surveys the communities."""
    findings = []
    for number, batch in enumerate(batches):
        for report, _, _ in batch:
            for finding in report["findings"] or [{"summary": report["title"],
                                                   "explanation": report["summary"]}]:
                text = f"{finding['summary']}: {finding['explanation']}"
                findings.append((number, report, text, set(_terms(text))))
    question_terms = set(_terms(question))
    document_frequency = Counter(t for *_, terms in findings for t in terms & question_terms)
    if not document_frequency:
        return [Point(f"{report['title']}: {report['summary']} "
                      f"[Data: Reports ({report['community']})]",
                      max(1.0, 10.0 * float(report["rank"])), [report["community"]], number)
                for number, batch in enumerate(batches) for report, _, _ in batch]
    n = max(1, len(findings))
    idf = {t: math.log(1 + n / document_frequency[t]) for t in document_frequency}
    best = sum(idf.values())
    points = []
    for number, report, text, terms in findings:
        score = 100.0 * sum(idf.get(t, 0.0) for t in terms & question_terms) / best
        if score > 0:
            description = re.sub(r"\s*\[Data:[^\]]*\]", "", text)
            points.append(Point(f"{description} [Data: Reports ({report['community']})]",
                                round(score, 1), [report["community"]], number))
    return points


EXTRACTIVE_ANSWER_POINTS = 10
EXTRACTIVE_POINT_CHARS = 400


def _shorten(description: str) -> str:
    reference = re.search(r"\s*\[Data:[^\]]*\]$", description)
    body = description[: reference.start()] if reference else description
    if len(body) > EXTRACTIVE_POINT_CHARS:
        body = body[: EXTRACTIVE_POINT_CHARS - 1].rstrip() + "…"
    return body + (reference.group() if reference else "")


def extractive_reduce(question: str, points: list[Point]) -> str:
    """The best points, shortened, as a readable list (all of them stay in result.points)."""
    if not points:
        return NO_ANSWER
    lines = [f"Points from the community reports most relevant to: {question}", ""]
    lines += [f"- {_shorten(p.description)}" for p in points[:EXTRACTIVE_ANSWER_POINTS]]
    return "\n".join(lines)


def global_search(question: str, reports: pa.Table, config: GraphRagConfig, prompts: dict[str, str],
                  level: int, services: LLMServices | None = None) -> GlobalSearchResult:
    cfg = config.global_search
    encoding = config.chunks.encoding_model
    rows = reports.select(["community", "title", "summary", "rank", "full_content",
                           "findings"]).to_pylist()
    batches = pack_report_batches(rows, cfg.map_context_tokens, cfg.shuffle_seed, encoding)
    result = GlobalSearchResult(answer=NO_ANSWER, level=level)
    result.context_tokens = sum(t for batch in batches for _, _, t in batch)
    use_llm = config.uses_llm(cfg.method)
    chat = (services or LLMServices()).chat(config.llm) if use_llm else None
    if use_llm:
        points = _llm_map(question, batches, config, prompts, result, chat)
    else:
        points = extractive_map(question, batches)
    ranked = rank_points(points)
    context, used, tokens = pack_reduce_context(ranked, cfg.reduce_context_tokens, encoding)
    result.points = used
    result.report_ids = sorted({i for p in used for i in p.report_ids})
    result.context_tokens += tokens
    if not used:
        return result
    if use_llm:
        reduce_chat = chat.scoped()
        prompt = render(prompts["global_reduce"], question=question, report_data=context,
                        response_type=cfg.response_type)
        result.answer = reduce_chat.complete([{"role": "user", "content": prompt}],
                                             max_tokens=cfg.reduce_max_output_tokens).strip()
        result.reduce_calls = 1
        result.usage.add(reduce_chat.usage)
    else:
        result.answer = extractive_reduce(question, used)
    return result


def _llm_map(question: str, batches: list[list[tuple[dict, str, int]]], config: GraphRagConfig,
             prompts: dict[str, str], result: GlobalSearchResult, chat: ChatClient) -> list[Point]:
    def run(numbered: tuple[int, list[tuple[dict, str, int]]]) -> tuple[list[Point], Usage, str]:
        number, batch = numbered
        context = "\n".join([REPORT_CONTEXT_HEADER] + [row for _, row, _ in batch])
        prompt = render(prompts["global_map"], question=question, context_data=context)
        ids = [report["community"] for report, _, _ in batch]
        map_chat = chat.scoped()
        problem = ""
        for _ in range(config.llm.max_parse_retries + 1):
            try:
                reply = map_chat.complete([{"role": "user", "content": prompt}],
                                          max_tokens=config.global_search.map_max_output_tokens)
                return parse_map_points(reply, number, ids), map_chat.usage, ""
            except LLMError as exc:
                return [], map_chat.usage, f"map batch {number}: {exc}"
            except ValueError as exc:
                problem = f"map batch {number}: malformed reply ({exc})"
        return [], map_chat.usage, problem

    points: list[Point] = []
    with ThreadPoolExecutor(config.global_search.concurrency) as pool:
        for batch_points, usage, failure in pool.map(run, enumerate(batches)):
            points.extend(batch_points)
            result.usage.add(usage)
            result.map_calls += 1
            if failure:
                result.failures.append(failure)
    if result.failures and len(result.failures) == len(batches):
        raise LLMError(f"every map call failed; first: {result.failures[0]}")
    return points
