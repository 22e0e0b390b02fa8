"""Community contexts -> reports {title, summary, rating, rating_explanation, findings}.

LLM reports are parsed and validated; a reply that stays malformed after `max_parse_retries`
re-requests, or a call that fails, yields an extractive report with the reason recorded in the
`generation` column, so every community still has a report and the failure is visible.
"""

from __future__ import annotations

import copy
import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.index.graph.description_blocks import read_descriptions
from graphrag_ray.index.reports.citations import cite_report, without_citations
from graphrag_ray.index.reports.context import (
    context_ids, context_record, fill_claims, fill_descriptions, render_context)
from graphrag_ray.llm.accounting import USAGE_SCHEMA_FIELDS, usage_row
from graphrag_ray.llm.client import LLMServices, MalformedReply, Usage, parse_json_object
from graphrag_ray.prompts_loader import prompt_version, render
from graphrag_ray.sentences import ends_with_abbreviation


def validate_report(data: dict) -> dict:
    """A report dict with the required keys and types, or ValueError naming what is wrong."""
    for key in ("title", "summary"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ValueError(f"report has no {key!r} string")
    try:
        rating = float(data.get("rating", 0))
    except (TypeError, ValueError):
        raise ValueError("report 'rating' is not a number") from None
    findings = data.get("findings", [])
    if not isinstance(findings, list):
        raise ValueError("report 'findings' is not a list")
    clean_findings = []
    for finding in findings:
        if isinstance(finding, dict) and finding.get("summary"):
            clean_findings.append({"summary": str(finding["summary"]),
                                   "explanation": str(finding.get("explanation", ""))})
        elif isinstance(finding, str) and finding.strip():
            clean_findings.append({"summary": finding.strip(), "explanation": ""})
    return {"title": data["title"].strip(), "summary": data["summary"].strip(),
            "rating": min(10.0, max(0.0, rating)),
            "rating_explanation": str(data.get("rating_explanation", "")),
            "findings": clean_findings}


_LOWER_JOINERS = {"OF", "THE", "AND", "DE", "DU", "DA", "VAN", "VON"}


def _title_case(name: str) -> str:
    """'BANK OF ENGLAND' -> 'Bank of England'; two-letter words stay (AI, UK)."""
    words = []
    for index, word in enumerate(name.split()):
        if index and word in _LOWER_JOINERS:
            words.append(word.lower())
        elif word.isupper() and len(word) > 2:
            words.append(word.capitalize())
        else:
            words.append(word)
    return " ".join(words)


_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？؟]")


def _first_sentence(text: str, limit: int = 300) -> str:
    """Up to the first full stop of any script (Latin, CJK, Arabic)."""
    text = " ".join(text.split())
    end = next((m for m in _SENTENCE_END.finditer(text, 0, limit)
                if not ends_with_abbreviation(text[:m.end()])), None)
    if end and 0 < end.start() < limit:
        return text[: end.end()]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def extractive_report(context: dict, max_findings: int) -> dict:
    """A report assembled from the context's own text: most connected entities, strongest
    relationships and sub-community reports. No LLM, no invented facts."""
    entities = sorted(context["entities"], key=lambda e: (-e["degree"], e["title"]))
    edges = context["relationships"]  # already in priority order
    reports = sorted(context["reports"], key=lambda r: (-r["rank"], r["community"]))
    names = [_title_case(e["title"]) for e in entities[:3]] or \
        [r["title"] for r in reports[:2]]
    title = (", ".join(names[:-1]) + " and " + names[-1]) if len(names) > 1 else \
        (names[0] if names else "Empty community")
    summary_parts = []
    if entities:
        summary_parts.append(f"This community centres on {title}.")
        summary_parts.extend(_first_sentence(e["description"]) for e in entities[:2]
                             if e["description"])
    if reports:
        summary_parts.append("It brings together: " + "; ".join(r["title"] for r in reports[:5]) + ".")
    # Two entities described by the sentence they share would say it twice.
    summary_parts = list(dict.fromkeys(summary_parts))
    findings = []
    for report in reports:
        findings.append({"summary": report["title"],
                         "explanation": f"{report['summary']} [Data: Reports ({report['community']})]"})
    for edge in edges:
        findings.append({
            "summary": f"{_title_case(edge['source'])} and {_title_case(edge['target'])}",
            "explanation": f"{edge['description']} [Data: Relationships ({edge['human_readable_id']})]"})
    for entity in entities:
        if entity["description"]:
            findings.append({"summary": _title_case(entity["title"]),
                             "explanation": f"{entity['description']} "
                                            f"[Data: Entities ({entity['human_readable_id']})]"})
    # A finding whose text another one already gave says nothing new.
    distinct: dict[str, dict] = {}
    for finding in findings:
        distinct.setdefault(without_citations(finding["explanation"]).strip(), finding)
    findings = list(distinct.values())
    connectivity = sum(e["degree"] for e in entities) + sum(r["rank"] for r in reports)
    rating = round(min(10.0, 2.0 * math.log10(1 + connectivity) + 1.0), 1)
    return {
        "title": title, "summary": " ".join(summary_parts) or title, "rating": rating,
        "rating_explanation": f"Rated by size and connectivity: {len(entities)} entities, "
                              f"{len(edges)} relationships, {len(reports)} sub-community reports.",
        "findings": findings[:max_findings],
    }


def full_content(report: dict) -> str:
    lines = [f"# {report['title']}", "", report["summary"], ""]
    for finding in report["findings"]:
        lines += [f"## {finding['summary']}", "", finding["explanation"], ""]
    return "\n".join(lines).strip()


REPORT_STRUCT = pa.struct([
    ("title", pa.string()), ("summary", pa.string()), ("rating", pa.float64()),
    ("rating_explanation", pa.string()),
    ("findings", pa.list_(pa.struct([("summary", pa.string()), ("explanation", pa.string())])))])
REPORT_RESULT_SCHEMA = pa.schema([("community", pa.int64()), ("report", REPORT_STRUCT),
                                  ("generation", pa.string()), *USAGE_SCHEMA_FIELDS])


# The generation of a community smaller than `reports.min_llm_entities`: its extractive
# report, by choice (not a fallback).
SMALL_COMMUNITY = "extractive (small community)"


@dataclass(frozen=True)
class ReportWork:
    """One community to report: its context as chosen by the schedule (`spec`, without the
    descriptions), where each description it names is (`blocks`, `rows`: positions among
    the call's blocks and rows in them), the claims' block (-1: none), its size, and how
    many reports above it wait on this one (its place in the budget's line)."""
    community: int
    spec: dict
    entities: int
    blocks: list[int]
    rows: list[int]
    claims_block: int = -1
    dependents: int = 0


def report_worker(config: GraphRagConfig) -> type["ReportWorker"]:
    """The worker class `reports.method` asks for."""
    return LLMReportWorker if config.uses_llm(config.reports.method) else ReportWorker


class ReportWorker:
    """Work items: {community, spec: its context without descriptions (`context_spec`),
    blocks and rows: where each description is, claims_block: the block holding the claims
    (-1: none needed)} -> rows of community, report, generation. The context is written here,
    where the descriptions are read, not in the driver. This one writes extractive reports;
    `LLMReportWorker` asks the LLM."""
    calls_llm = False
    rows_per_call = 32  # communities a work item holds

    def __init__(self, config: GraphRagConfig, prompts: dict[str, str],
                 services: LLMServices | None = None):
        self.config = config

    def __call__(self, work: list[ReportWork], blocks: list[pa.Table]) -> pa.Table:
        rows = []
        for item in work:
            # Filled in place: the submitter's spec stays as it was (in-process it is the same
            # object).
            context = fill_descriptions(copy.deepcopy(item.spec), read_descriptions(
                blocks, zip(item.blocks, item.rows)))
            fill_claims(context, blocks[item.claims_block] if item.claims_block >= 0 else None)
            rows.append((item.community, render_context(context), context_record(context),
                         context_ids(context), item.dependents, item.entities))
        return pa.Table.from_pylist(self._reports(rows), schema=REPORT_RESULT_SCHEMA)

    def _reports(self, rows: list[tuple]) -> list[dict]:
        return [self._extractive(row[0], row[2], "extractive") for row in rows]

    def _extractive(self, community: int, record: dict, generation: str,
                    usage: Usage | None = None) -> dict:
        report = extractive_report(record, self.config.reports.max_findings)
        return {"community": community, "report": report, "generation": generation,
                **usage_row(usage)}



class LLMReportWorker(ReportWorker):
    """Reports by the LLM, the calls of a work batch at once; a community smaller than
    `reports.min_llm_entities`, or whose call fails for good, gets an extractive one."""
    calls_llm = True
    rows_per_call = 1  # (each report its own item: the dependents' urgency goes with it)

    def __init__(self, config: GraphRagConfig, prompts: dict[str, str],
                 services: LLMServices | None = None):
        super().__init__(config, prompts, services)
        self.template = prompts["community_report"]
        self.tag = prompt_version(self.template)
        self.chat = (services or LLMServices()).chat(config.llm, stage="reports")

    def _reports(self, rows: list[tuple]) -> list[dict]:
        smallest = self.config.reports.min_llm_entities
        with ThreadPoolExecutor(self.config.llm.concurrent_requests) as pool:
            return list(pool.map(lambda r: self._llm(*r[:5]) if r[5] >= smallest
                                 else self._extractive(r[0], r[2], SMALL_COMMUNITY), rows))

    def _llm(self, community: int, context_text: str, record: dict,
             ids: dict[str, list[int]], dependents: int) -> dict:
        prompt = render(self.template, input_text=context_text,
                        max_findings=self.config.reports.max_findings)
        chat = self.chat.scoped()
        try:
            report = chat.complete_parsed(
                [{"role": "user", "content": prompt}],
                lambda reply: validate_report(parse_json_object(reply)),
                max_tokens=self.config.reports.max_output_tokens,
                cache_tag=f"{self.tag}:{{attempt}}", kind="community_report",
                urgency=dependents)
        except MalformedReply as exc:
            problem = f"malformed report JSON: {exc}"
        except LLMError as exc:
            problem = f"LLM call failed: {exc}"
        else:
            return {"community": community, "report": cite_report(report, ids),
                    "generation": "llm",
                    **usage_row(chat.usage)}
        return self._extractive(community, record, f"extractive fallback ({problem})"[:500],
                                chat.usage)
