"""Element description lists -> one description each (LLM prompt, or extractive offline).

Only elements with more than one distinct description need work; the full list stays in the
`descriptions` column, so nothing a summary leaves out is lost.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import ahocorasick
import pyarrow as pa

from graphrag_ray.config import GraphRagConfig, SummarizeConfig
from graphrag_ray.errors import LLMError
from graphrag_ray.index.graph.description_blocks import read_descriptions
from graphrag_ray.index.context_rows import context_row_tokens
from graphrag_ray.llm.accounting import USAGE_SCHEMA_FIELDS, usage_row
from graphrag_ray.llm.client import LLMServices, MalformedReply, Usage
from graphrag_ray.prompts_loader import prompt_version, render
from graphrag_ray.tokens import count_tokens, truncate_to_tokens

_WORDS = re.compile(r"[a-z0-9]+")


def without_fragments(descriptions: list[str]) -> list[str]:
    """The descriptions but those another one holds whole (the first of equal ones kept):
    overlapping chunk windows cut a sentence at a window's edge, and the cut copy glued to
    the whole one read twice. An element's list can hold thousands of descriptions: every
    distinct one is found in the others in one pass (`_held_in_longer`), not pair by pair."""
    normal = [" ".join(d.split()).rstrip("…").strip() for d in descriptions]
    first: dict[str, int] = {}
    for i, text in enumerate(normal):
        if text:
            first.setdefault(text, i)
    held = _held_in_longer(list(first)) if len(first) > 1 else set()
    return [d for i, d in enumerate(descriptions)
            if normal[i] and first[normal[i]] == i and normal[i] not in held]


def _held_in_longer(texts: list[str]) -> set[str]:
    """The distinct `texts` that a longer one of them contains: an Aho-Corasick automaton of
    them all scans each once (pyahocorasick), time in proportion to their length and the
    occurrences found."""
    automaton = ahocorasick.Automaton()
    for number, text in enumerate(texts):
        automaton.add_word(text, number)
    automaton.make_automaton()
    held: set[int] = set()
    for number, text in enumerate(texts):
        held.update(found for _, found in automaton.iter(text) if found != number)
    return {texts[number] for number in held}


def extractive_summary(descriptions: list[str], max_tokens: int, encoding: str = "cl100k_base") -> str:
    """Keep the most central descriptions (sharing most words with the rest) within the budget,
    in their original order."""
    descriptions = without_fragments(descriptions)
    if len(descriptions) <= 1:
        return descriptions[0] if descriptions else ""
    word_sets = [set(_WORDS.findall(d.lower())) for d in descriptions]
    frequency = Counter(w for words in word_sets for w in words)
    centrality = [sum(frequency[w] for w in words) / (1 + len(words)) ** 0.5 for words in word_sets]
    order = sorted(range(len(descriptions)), key=lambda i: (-centrality[i], i))
    chosen, used = [], 0
    for index in order:
        tokens = count_tokens(descriptions[index], encoding)
        if used + tokens > max_tokens and chosen:
            continue
        chosen.append(index)
        used += tokens
    text = " ".join(descriptions[i] for i in sorted(chosen))
    return truncate_to_tokens(text, max_tokens, encoding)


def needs_llm_summary(descriptions: list[str], config: SummarizeConfig, encoding: str) -> bool:
    """Whether an element's distinct descriptions need the LLM to merge them: as many as
    `llm_min_descriptions`, or longer joined than a summary may be (`max_length`). Fewer and
    shorter ones read well joined: asking a model to merge two sentences of an entity costs
    a call and gains little."""
    return len(descriptions) >= config.llm_min_descriptions or \
        count_tokens(joined(descriptions), encoding) > config.max_length


def joined(descriptions: list[str]) -> str:
    """Descriptions as one text, in their order, each ending as a sentence."""
    return " ".join(d if d.endswith((".", "!", "?", "。")) else f"{d}."
                    for d in (d.strip() for d in without_fragments(descriptions)) if d)


# `joined`: the description is the list joined as it is (no LLM call was needed).
SUMMARY_SCHEMA = pa.schema([("key", pa.int64()), ("description", pa.string()),
                            ("row_tokens", pa.int64()), ("error", pa.string()),
                            ("joined", pa.bool_()), *USAGE_SCHEMA_FIELDS])
@dataclass(frozen=True)
class SummaryWork:
    """One element to summarize: its key (entity, or relationship after the entities), name,
    where its description list is (`block` among the call's blocks, `row`), and its context
    record (to count its row's tokens in a report's context once summarized)."""
    key: int
    name: str
    block: int
    row: int
    record: dict


def summarize_worker(config: GraphRagConfig) -> type["SummarizeWorker"]:
    """The worker class `summarize.method` asks for."""
    return LLMSummarizeWorker if config.uses_llm(config.summarize.method) else SummarizeWorker


class SummarizeWorker:
    """Work items: {key, name, block and row of its description list, record: its context
    row without the description} -> rows of key, description (the summary), the row's tokens
    with it, error (fallback used when set), usage. This one summarizes offline
    (extractive); `LLMSummarizeWorker` asks the LLM."""
    calls_llm = False
    rows_per_call = 256  # elements a work item holds (a call's description lists)

    def __init__(self, config: GraphRagConfig, prompts: dict[str, str],
                 services: LLMServices | None = None):
        self.config = config

    def __call__(self, work: list[SummaryWork], blocks: list[pa.Table]) -> pa.Table:
        lists = read_descriptions(blocks, ((item.block, item.row) for item in work),
                                  "descriptions")
        out = self._summaries([(item.key, item.name, descriptions)
                               for item, descriptions in zip(work, lists)])
        for row, item in zip(out, work):
            row["row_tokens"] = context_row_tokens(item.record, row["description"],
                                                   self.config.tokenizer.encoding)
        return pa.Table.from_pylist(out, schema=SUMMARY_SCHEMA)

    def _summaries(self, rows: list[tuple[int, str, list[str]]]) -> list[dict]:
        return [self._extractive(key, descriptions) for key, _, descriptions in rows]

    def _extractive(self, key: int, descriptions: list[str], error: str | None = None,
                    usage: Usage | None = None) -> dict:
        summary = extractive_summary(descriptions, self.config.summarize.max_length,
                                     self.config.tokenizer.encoding)
        return {"key": key, "description": summary, "error": error, **usage_row(usage)}


class LLMSummarizeWorker(SummarizeWorker):
    """Summaries by the LLM, the calls of a work batch at once; extractive where a call
    fails for good."""
    calls_llm = True
    rows_per_call = 4

    def __init__(self, config: GraphRagConfig, prompts: dict[str, str],
                 services: LLMServices | None = None):
        super().__init__(config, prompts, services)
        self.template = prompts["summarize_descriptions"]
        self.tag = prompt_version(self.template)
        self.chat = (services or LLMServices()).chat(config.llm, stage="summarize")

    def _summaries(self, rows: list[tuple[int, str, list[str]]]) -> list[dict]:
        with ThreadPoolExecutor(self.config.llm.concurrent_requests) as pool:
            return list(pool.map(lambda r: self._merged(*r), rows))

    def _merged(self, key: int, name: str, descriptions: list[str]) -> dict:
        """By the LLM when the list needs it (`needs_llm_summary`), else joined as it is."""
        if needs_llm_summary(descriptions, self.config.summarize,
                             self.config.tokenizer.encoding):
            return self._llm(key, name, descriptions)
        return {"key": key, "description": joined(descriptions), "error": None,
                "joined": True, **usage_row(None)}

    def _llm(self, key: int, name: str, descriptions: list[str]) -> dict:
        cfg = self.config.summarize
        listing = truncate_to_tokens("\n".join(f"- {d}" for d in descriptions),
                                     cfg.max_input_tokens, self.config.tokenizer.encoding)
        prompt = render(self.template, entity_name=name, description_list=listing,
                        max_length=cfg.max_length)
        chat = self.chat.scoped()
        try:
            # An empty reply is asked for again, like a malformed report, before falling back.
            text = chat.complete_parsed([{"role": "user", "content": prompt}], _non_empty,
                                        max_tokens=cfg.max_length * 2, cache_tag=self.tag,
                                        kind="summarize")
        except MalformedReply:
            return self._extractive(key, descriptions, "LLM returned empty summaries, "
                                    "extractive used", chat.usage)
        except LLMError as exc:
            return self._extractive(key, descriptions,
                                    f"LLM summary failed, extractive used: {exc}", chat.usage)
        return {"key": key, "description": text, "error": None, **usage_row(chat.usage)}


def _non_empty(reply: str) -> str:
    if not reply.strip():
        raise ValueError("empty summary")
    return reply.strip()
