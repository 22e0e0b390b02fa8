"""An OpenAI-compatible test server: deterministic answers that follow each prompt's format.

It recognises the task from the prompt text (graph extraction, gleaning check and continuation,
claims, description summaries, community reports, global map and reduce, local/basic answers,
DRIFT steps, report ratings, LazyGraphRAG's sub-questions, relevance tests and answers) and
answers in the requested format, using the prompt's own text, so the pipeline builds a real graph from it. It also serves /embeddings (hashed vectors, so
similar texts are near) and streams answers as server-sent events when asked to.

Switches simulate providers: latency, HTTP 429 with Retry-After, 5xx, hung requests (timeouts),
malformed output, an API key that must match, and endpoints that reject `logit_bias`. Faults are
decided by a seeded hash of (request, attempt number), so a retried request can succeed and every
run is the same.

    python -m graphrag_testkit.llm_server --port 8765 --latency-ms 200 --rate-429 0.1
    # in tests:  with run_test_server(rate_5xx=0.2) as server: server.url, server.stats()
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import select
import socket
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator
from urllib.parse import urlsplit

from graphrag_ray.llm.request_kinds import KINDS, REQUEST_ABOUT_HEADER, REQUEST_KIND_HEADER
from graphrag_testkit.batch_api import BatchAPI

_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2}\b")
_STOP = {"The", "A", "An", "And", "But", "He", "She", "It", "They", "We", "I", "You", "In", "On",
         "At", "Of", "To", "As", "If", "So", "Then", "There", "This", "That", "What", "When",
         "Where", "Why", "How", "Who", "His", "Her", "Their", "Our", "My", "Yes", "No", "Oh",
         "Well", "Now", "Not", "For", "With", "From", "By", "All", "One", "Some", "Text",
         "Output", "Step", "Entity", "Worked"}


@dataclass
class Switches:
    latency_ms: float = 0.0  # of a successful answer, plus the per-output-token part
    latency_per_output_token_ms: float = 0.0
    latency_kinds: str = ""  # comma-separated request kinds the latency is for ("": all)
    rate_429: float = 0.0
    retry_after_s: float = 0.05
    rate_5xx: float = 0.0
    rate_timeout: float = 0.0
    timeout_sleep_s: float = 3.0
    rate_malformed: float = 0.0
    # The first `fail_first` attempts of every distinct request get `fail_status` (429 carries
    # Retry-After): exact, seed-free faults for retry tests.
    fail_first: int = 0
    fail_status: int = 429
    # Provider limits, enforced over a sliding window: beyond them 429 + Retry-After.
    # Tokens are the usage the response reports (prompt + completion), counted at admission.
    rpm_limit: float = 0.0
    tpm_limit: float = 0.0
    limit_window_s: float = 60.0
    # What a chat request counts against the token limit at admission: "usage", the prompt
    # and the completion it gets; "max_tokens", the prompt and the completion limit it asks
    # for (as OpenAI documents its estimate), so a client counting replies undercounts.
    limit_counts: str = "usage"
    # Report the prompt tokens a provider's prompt cache would serve: the longest earlier
    # conversation this one extends, from 1,024 tokens up, in steps of 128 (OpenAI's rule).
    prompt_cache: bool = True
    glean_yes_rounds: int = 1
    reject_logit_bias: bool = False  # a 400 that does not say which parameter it means
    # Endpoint quirks, comma-separated (see `PERSONALITIES`).
    personality: str = ""
    context_window: int = 0  # > 0: prompts longer than this (in tokens) get HTTP 400
    models: str = ""  # comma-separated: chat calls naming another model get HTTP 404
    api_key: str | None = None
    seed: int = 0
    # A LazyGraphRAG relevance test finds a passage relevant when it holds more than this
    # share of the question's content words (`terms.content_terms`).
    relevant_share: float = 0.5
    # The Batch API (`batch_api.py`): seconds from a batch's creation to its completion, the
    # share of lines answered with an error, the share left unanswered as the batch expires,
    # how many of the first batches fail validation, the enqueued-token limit per model.
    batch_api: bool = True  # False: 404 on the Batch API's routes, as local model servers
    batch_delay_s: float = 0.5
    batch_failed_lines: float = 0.0
    batch_expired_lines: float = 0.0
    batch_fail_validation: int = 0
    batch_queue_tokens: int = 0
    # Keep every chat request's kind, model and messages (`chat_requests()`), for tests that
    # check what was asked; off by default, as a big build would hold every prompt.
    keep_requests: bool = False


# What each personality plays:
PERSONALITIES = {
    # OpenAI's reasoning models (o-series, gpt-5): their 400s for max_tokens, a temperature
    # other than 1 and logit_bias, worded as OpenAI words them; hidden reasoning tokens in the
    # usage, and an empty reply when the limit leaves no room after them.
    "reasoning": "o-series parameter rules and reasoning tokens",
    "think": "a <think>...</think> block before every answer (DeepSeek-R1, Qwen3 on vLLM)",
    "fenced": "every answer inside a markdown code fence",
    "no_usage": "no usage in replies, streamed or not (some local servers)",
    "error_200": "the first attempt of every request: HTTP 200 with an error body, no choices",
    "ack": "every chat answer is \"OK.\" (a model that acknowledges instead of answering)",
}
REASONING_TOKENS = 64
_OPTIONAL_PARAMETERS = ("max_tokens", "max_completion_tokens", "temperature", "logit_bias",
                        "reasoning_effort")


@dataclass
class Stats:
    requests: int = 0
    by_kind: Counter = field(default_factory=Counter)
    by_status: Counter = field(default_factory=Counter)
    # request hash -> answers delivered to a client that was still there to read them
    successful: Counter = field(default_factory=Counter)
    log: list = field(default_factory=list)  # (time, kind, status, request hash)
    # model -> calls answered and the usage they reported, as a provider bills them
    usage: dict = field(default_factory=dict)
    billed: list = field(default_factory=list)  # (time, model, tokens) per admitted call
    # (HTTP status, optional parameters sent) per chat request, in arrival order
    chat_parameters: list = field(default_factory=list)
    # model -> tokens counted against its limit at admission (`limit_counts`)
    counted: Counter = field(default_factory=Counter)
    in_flight: Counter = field(default_factory=Counter)  # by kind: answers being written
    peak_in_flight: Counter = field(default_factory=Counter)  # by kind, and "all"
    # Chat requests whose kind was told by the prose (no or an unknown REQUEST_KIND_HEADER)
    undeclared: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {"requests": self.requests, "by_kind": dict(self.by_kind),
                "by_status": {str(k): v for k, v in self.by_status.items()},
                "successful_requests": sum(self.successful.values()),
                "repeated_successes": sum(v - 1 for v in self.successful.values() if v > 1),
                "usage_by_model": {model: dict(counts) for model, counts in self.usage.items()},
                "counted_tokens_by_model": dict(self.counted),
                "peak_in_flight": self.peak_in_flight["all"],
                "undeclared_kinds": dict(self.undeclared),
                "chat_parameters": list(self.chat_parameters),
                "peak_in_flight_by_kind": {k: v for k, v in self.peak_in_flight.items()
                                           if k != "all"}}


def _fraction(*parts: object) -> float:
    digest = hashlib.sha256("\x00".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def request_kind(declared: str | None, messages: list[dict]) -> tuple[str, bool]:
    """The kind a request says it is (REQUEST_KIND_HEADER) when it is one this server
    answers, else the kind its prose looks like (`classify`), and whether it was declared."""
    if declared in KINDS:
        return declared, True
    return classify(messages), False


def classify(messages: list[dict]) -> str:
    """A request's kind from the wording of our default prompts: the fallback for requests
    that do not declare it (another client, an older one)."""
    last = messages[-1]["content"] if messages else ""
    first = messages[0]["content"] if messages else ""
    # Evaluation prompts first: the answers they quote may hold any other prompt's markers.
    if first.startswith("You judge two answers"):
        return "eval_judge"
    if first.startswith("List the factual claims"):
        return "eval_claims"
    if '{"users"' in first:
        return "eval_personas"
    if '{"questions"' in first:
        return "eval_questions"
    if '{"subquestions"' in first:
        return "lazy_subquestions"
    if '{"relevant"' in first:
        return "lazy_relevance"
    if "---Notes---" in first:
        return "lazy_answer"
    if "single letter" in last and ("Y " in last or "Y if" in last):
        return "glean_check"
    if "MANY entities were missed" in last:
        return "glean_continue"
    if '("claim"' in first:
        return "claims"
    if '("entity"' in first:
        return "extract_graph"
    if "Description List:" in first:
        return "summarize"
    if '"<pair number>: yes"' in first:
        return "resolve_pairs"
    if '"findings"' in first:
        return "community_report"
    if '"points"' in first:
        return "global_map"
    if '{"answer"' in first and '"score"' in first and "one batch" in first:
        return "global_map_single"
    if "---Analyst Reports---" in first:
        return "global_reduce"
    if '"follow_up_queries"' in first:
        return "drift_step"
    if "---Intermediate answers---" in first:
        return "drift_reduce"
    if "---Data tables---" in first or "---Source texts---" in first:
        return "context_answer"
    if '"rating"' in first and "Rate how relevant" in first:
        return "rate_report"
    if "hypothetical answer" in first.lower():
        return "hypothetical_answer"
    if "Answer with this JSON object only:" in last:
        return "json_only"
    if last.rstrip().endswith("Answer Y or N."):
        return "yes_no"
    return "other"


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w+", text) if len(w) > 3}


def _table_rows(text: str) -> tuple[str, list[list[str]]]:
    """The last `id|...` table in a prompt section: its header and its rows' fields."""
    lines = text.split("\n")
    header_at = max((i for i, line in enumerate(lines) if line.startswith("id|")), default=-1)
    rows = [line.split("|") for line in lines[header_at + 1:]
            if "|" in line and line.split("|")[0].isdigit()]
    return (lines[header_at] if header_at >= 0 else ""), rows


def _section(text: str, start: str, end: str | None = None) -> str:
    pos = text.rfind(start)
    if pos < 0:
        return ""
    body = text[pos + len(start):]
    if end and end in body:
        body = body[: body.rfind(end)]
    return body.strip()


def _delimiters(prompt: str) -> tuple[str, str, str]:
    tuple_match = re.search(r'\("entity"(.+?)NAME\1TYPE', prompt)
    record_match = re.search(r"separated by (\S+?),? in English|separated by (\S+?)[.;]", prompt)
    completion_match = re.search(r"Write (\S+) when you are done", prompt)
    record = (record_match.group(1) or record_match.group(2)) if record_match else "##"
    return (tuple_match.group(1) if tuple_match else "<|>", record,
            completion_match.group(1) if completion_match else "<|COMPLETE|>")


def _names(text: str) -> list[str]:
    names = []
    for match in _NAME.finditer(text):
        words = [w for w in match.group().split() if w not in _STOP]
        if words:
            names.append(" ".join(words).upper())
    if not names and _HAN.search(text):  # Chinese: the offline extractor's segmenter names
        from graphrag_ray.index.extract.uncased_scripts import UncasedChunk

        chunk = UncasedChunk(text)
        names = [name for sentence in _sentences(text) for name, kind in
                 chunk.entities(sentence) if kind != "OTHER"]
    return list(dict.fromkeys(names))


_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|(?<=[。！？])", text) if s.strip()]


# The server's own words in the languages a request may declare (`language`), so a test sees
# that replies follow it; another language gets the English words behind its name.
_PHRASES = {
    "English": {"community": "A community of {n} entities and {m} sub-communities around "
                             "{key}.", "answer_to": "Answer to: {q}",
                "points": "Summary of the analysts' points:", "about": "documents about {x}",
                "types": ["person", "organization", "place", "event", "product"]},
    "French": {"community": "Une communauté de {n} entités et {m} sous-communautés autour de "
                            "{key}.", "answer_to": "Réponse à : {q}",
               "points": "Synthèse des points des analystes :", "about": "documents sur {x}",
               "types": ["personne", "organisation", "lieu", "événement", "produit"]},
    "Chinese": {"community": "一个由{n}个实体和{m}个子社区组成的社区，围绕{key}。",
                "answer_to": "回答：{q}", "points": "分析要点汇总：", "about": "关于{x}的文档",
                "types": ["人物", "组织", "地点", "事件", "产品"]},
}


def _say(about: dict, phrase: str, **fields: object):
    """The server's `phrase` in the declared language (English without one)."""
    language = str(about.get("language") or "English")
    words = _PHRASES.get(language.capitalize())
    if words is None:
        english = _PHRASES["English"][phrase]
        return english if isinstance(english, list) else \
            f"[{language}] " + english.format(**fields)
    return words[phrase] if isinstance(words[phrase], list) else words[phrase].format(**fields)


def _graph_records(text: str, names: list[str], delimiters: tuple[str, str, str],
                   entity_types: list[str]) -> str:
    t, r, c = delimiters
    records = []
    wanted = set(names)
    for name in names:
        sentence = next((s for s in _sentences(text) if name in s.upper()), text[:200])
        kind = entity_types[int(_fraction(name) * len(entity_types))] if entity_types else "THING"
        records.append(f'("entity"{t}{name}{t}{kind.upper()}{t}{" ".join(sentence.split())[:300]})')
    for sentence in _sentences(text):
        present = [n for n in _names(sentence) if n in wanted]
        for a, b in zip(present, present[1:]):
            if a != b:
                strength = 1 + int(_fraction(a, b) * 10)
                records.append(f'("relationship"{t}{a}{t}{b}{t}'
                               f'{" ".join(sentence.split())[:300]}{t}{strength})')
    return f"\n{r}\n".join(records) + f"\n{c}"


# Question words that say nothing of what is asked about.
_ASKING = {"what", "which", "does", "about", "have", "that", "this", "with", "from", "they",
           "their", "there", "when", "where", "whom", "whose", "were", "been", "into", "according"}


def _asked(question: str) -> set[str]:
    return _words(question) - _ASKING


def _subquestions(question: str, limit: int) -> list[str]:
    """The question split at 'and' between two parts that each ask something (two words or
    more), else the question: a rule a test can predict."""
    parts = [p.strip(" ,?") for p in re.split(r",\s*and\s+|\s+and\s+", question.strip())]
    if len(parts) > 1 and all(len(_asked(p)) >= 2 for p in parts):
        return [f"{p}?" for p in parts][:limit]
    return [question.strip()]


def _declared(header: str | None) -> dict:
    """What a request says it holds (REQUEST_ABOUT_HEADER); {} when it says nothing usable."""
    try:
        about = json.loads(header) if header else {}
    except ValueError:
        return {}
    return about if isinstance(about, dict) else {}


def _declared_text(first: str, about: dict) -> str | None:
    span = about.get("text")
    if isinstance(span, list) and len(span) == 2 and 0 <= span[0] <= span[1] <= len(first):
        return first[span[0]:span[1]].strip()
    return None


def _gleaned(messages: list[dict]) -> int:
    """Gleaning rounds already answered in a chunk's conversation: the records replies
    after the first (a check's answer is one letter), whatever the prompts say."""
    replies = [m for m in messages if m["role"] == "assistant" and len(m["content"].strip()) > 1]
    return max(0, len(replies) - 1)


def _answer(kind: str, messages: list[dict], switches: Switches,
            about: dict | None = None) -> str:
    """`about`: what the request declared it holds (delimiters, entity types, where its
    input text is); what it does not declare is read from our prompts' wording."""
    first = messages[0]["content"]
    about = about or {}
    declared_delimiters = about.get("delimiters")
    delimiters = tuple(declared_delimiters) if isinstance(declared_delimiters, list) and \
        len(declared_delimiters) == 3 else _delimiters(first)
    if kind == "glean_check":
        return "Y" if _gleaned(messages) < switches.glean_yes_rounds else "N"
    if kind in ("extract_graph", "glean_continue"):
        text = _declared_text(first, about)
        if text is None:
            text = _section(first, "Text:\n", "\nOutput:")
        entity_types = about.get("entity_types")
        if not isinstance(entity_types, list):
            types_line = _section(first, "Entity types: ", "\nText:").split("\n")[0]
            entity_types = [x.strip() for x in types_line.split(",") if x.strip()]
        names = _names(text)
        half = (len(names) + 1) // 2
        # The first pass "misses" the second half of the names; gleaning finds them.
        chosen = names[:half] if kind == "extract_graph" else names[half:]
        if kind == "glean_continue" and _gleaned(messages) > 0:
            chosen = []  # the first gleaning found the rest
        return _graph_records(text, chosen, delimiters, entity_types)
    if kind == "claims":
        t, r, c = delimiters
        text = _declared_text(first, about)
        if text is None:
            text = _section(first, "Text:\n", "\nOutput:")
        names = _names(text)[:2]
        claims = [f'("claim"{t}{n}{t}NONE{t}MENTION{t}TRUE{t}NONE{t}NONE{t}'
                  f'{n} is mentioned in the text.{t}{text[:80]})' for n in names]
        return f"\n{r}\n".join(claims) + f"\n{c}"
    if kind == "resolve_pairs":
        # Same thing when one name's words are all in the other's (a stand-in judgement).
        verdicts = []
        for number, block in re.findall(r"Pair (\d+):\n((?:  - .*\n?){2})", first):
            a, b = (set(re.findall(r"\w+", line.split(" (")[0][4:]))
                    for line in block.strip("\n").split("\n"))
            verdicts.append(f"{number}: {'yes' if a <= b or b <= a else 'no'}")
        return "\n".join(verdicts)
    if kind == "summarize":
        name = _section(first, "Element: ", "\nDescription List:").split("\n")[0]
        items = [line[2:] for line in _section(first, "Description List:\n", "\n\nMerged").split("\n")
                 if line.startswith("- ")]
        return f"{name}: " + " ".join(dict.fromkeys(s.split(". ")[0].rstrip(".") + "." for s in items))
    if kind == "community_report":
        data = _section(first, "Data:\n", "\n\nJSON report:")
        rows = [row.split("|") for row in data.split("\n")
                if row.count("|") >= 4 and row.split("|")[0].isdigit()]
        names = [row[1] for row in rows]
        titles = [row.split("|")[1] for row in _section(data, "-----Sub-community reports-----",
                                                        "-----").split("\n")[1:] if "|" in row]
        key = names[:3] or titles[:2] or ["unnamed"]
        entity_rows = [row.split("|") for part in data.split("\n\n")
                       if part.startswith("-----Entities-----")
                       for row in part.split("\n")[2:]]
        findings = [{"summary": f"{n} is central", "explanation": f"{n} appears in this community "
                     f"[Data: Entities ({number})]"} for number, n, *_ in entity_rows[:5]]
        return json.dumps({"title": " and ".join(key).title(),
                           "summary": _say(about, "community", n=len(names), m=len(titles),
                                           key=", ".join(key)),
                           "rating": min(10, 1 + len(names) / 2),
                           "rating_explanation": "Rated by the number of entities.",
                           "findings": findings})
    if kind == "global_map_single":
        points = json.loads(_answer("global_map", messages, switches))["points"]
        relevant = [p for p in points if p["score"] > 0]
        return json.dumps({"answer": " ".join(p["description"] for p in relevant),
                           "score": max((p["score"] for p in relevant), default=0)})
    if kind == "global_map":
        question = set(w.lower() for w in re.findall(r"\w+", _section(first, "Question: ",
                                                                      "\n\n")))
        header, rows = _table_rows(_section(first, "Question: ", "\n\nJSON:"))
        source = "Sources" if "text" in header.split("|") else "Reports"
        points = []
        for parts in rows:
            if len(parts) < 3:
                continue
            overlap = len(question & set(w.lower() for w in re.findall(r"\w+", parts[-1])))
            points.append({"description": f"{parts[1]} is relevant "
                                          f"[Data: {source} ({parts[0]})]",
                           "score": min(100, overlap * 10)})
        return json.dumps({"points": points})
    if kind == "context_answer":
        question = _section(first, "Question: ", "\n\nAnswer:")
        context = _section(first, "---Data tables---", "\n\nQuestion:") or \
            _section(first, "---Source texts---", "\n\nQuestion:")
        cited = [line.split("|")[:2] for line in context.split("\n")
                 if "|" in line and line.split("|")[0].isdigit()][:5]
        lines = [_say(about, "answer_to", q=question)] + [
            f"- {name[:60]} [Data: Sources ({number})]" for number, name in cited]
        history = first.split("---Conversation so far---")[-1].split("\n\n---")[0].strip()
        if history and history != "(none)":
            lines.append(f"(following up on: {history.splitlines()[-1][:80]})")
        return "\n".join(lines)
    if kind == "drift_step":
        query = _section(first, "Current query: ", "\n\nData:")
        data = _section(first, "Data:\n", "\n\nJSON:")
        asked = _words(query)
        names = [n for n in _names(data) if not _words(n) <= asked][:2]
        return json.dumps({"answer": f"About {query}: the data mentions {', '.join(names) or 'nothing new'}.",
                           "score": min(100, 10 * len(_words(data) & asked)),
                           "follow_up_queries": [f"What is the role of {n.title()}?" for n in names]})
    if kind == "drift_reduce":
        question = _section(first, "Question: ", "\n\nAnswer:")
        answers = _section(first, "---Intermediate answers---", "\n\nQuestion:")
        lines = [f"- {line}" for line in answers.split("\n") if line.strip()][:8]
        return _say(about, "answer_to", q=question) + "\n" + "\n".join(lines)
    if kind == "rate_report":
        question = _words(_section(first, "Question: ", "\n\nCommunity report:"))
        report = _words(_section(first, "Community report:\n", "\n\nJSON:"))
        rating = min(5, len(question & report))
        return json.dumps({"rating": rating, "reason": f"{rating} question words appear."})
    if kind == "eval_personas":
        users, tasks = map(int, re.search(r"exactly (\d+) users and (\d+) tasks", first).groups())
        domain = _section(first, "Dataset: ").split("\n")[0][:40]
        return json.dumps({"users": [
            {"user": f"Analyst {u + 1} studying {domain}",
             "tasks": [f"Task {t + 1} of analyst {u + 1}: compare themes in {domain}"
                       for t in range(tasks)]} for u in range(users)]})
    if kind == "eval_questions":
        n = int(re.search(r"exactly (\d+) different questions", first).group(1))
        task = _section(first, "Task: ").split("\n")[0]
        return json.dumps({"questions": [f"Across the dataset, what does {task.lower()} reveal "
                                         f"about theme {i + 1}?" for i in range(n)]})
    if kind == "eval_judge":
        metric = _section(first, "Criterion, ").split(":")[0]
        one = len(_section(first, "---Answer 1---\n", "\n\n---Answer 2---").split())
        two = len(_section(first, "---Answer 2---\n", "\n\nDecide").split())
        if abs(one - two) <= 0.1 * max(one, two, 1):
            winner = 0
        else:  # longer is more comprehensive, diverse, empowering; shorter is more direct
            winner = 1 if (one > two) != (metric == "directness") else 2
        return json.dumps({"reason": f"{one} words against {two}.", "winner": winner})
    if kind == "eval_claims":
        answer = _section(first, "Answer:\n", "\n\nReturn one JSON")
        answer = re.sub(r"\[Data:[^\]]*\]", "", answer)
        claims = [s.strip(" -*#") for s in re.split(r"(?<=[.!?])\s+|\n", answer)
                  if len(s.strip(" -*#").split()) >= 3]
        return json.dumps({"claims": claims[:20]})
    if kind == "lazy_subquestions":
        return json.dumps({"subquestions": _subquestions(
            _section(first, "Question: ", "\n\nJSON:"),
            int(re.search(r"at most (\d+)", first).group(1)))})
    if kind == "lazy_relevance":
        from graphrag_ray.terms import content_terms

        question = set(content_terms(_section(first, "Question: ", "\n\nPassages:")))
        limit = int(re.search(r"at most (\d+) per passage", first).group(1))
        _, rows = _table_rows(_section(first, "Passages:\n", "\n\nJSON:"))
        relevant = []
        for number, *rest in rows:
            text = "|".join(rest)
            shared = len(question & set(content_terms(text)))
            if question and shared > switches.relevant_share * len(question):
                claims = [s for s in _sentences(text)
                          if question & set(content_terms(s))][:limit]
                relevant.append({"id": int(number), "claims": claims})
        return json.dumps({"relevant": relevant})
    if kind == "lazy_answer":
        question = _section(first, "Question: ", "\n\nAnswer:")
        notes = _section(first, "---Notes---", "\n\nQuestion:")
        _, rows = _table_rows(notes)
        lines = [f"- {parts[-1][:200]} [Data: Sources ({parts[0]})]" for parts in rows[:8]] or \
            [f"- {p}" for p in re.findall(r"Importance Score: [\d.]+\n(.+)", notes)[:8]]
        return _say(about, "answer_to", q=question) + "\n" + "\n".join(lines)
    if kind == "json_only":
        return messages[-1]["content"].split("only:", 1)[1].strip()
    if kind == "yes_no":
        return "Y"
    if kind == "hypothetical_answer":
        question = _section(first, "Question: ", "\n\nHypothetical answer:")
        return f"A report answering {question} would describe {question.rstrip('?')}."
    if kind == "global_reduce":
        points = re.findall(r"Importance Score: [\d.]+\n(.+)", first)
        return _say(about, "points") + "\n" + "\n".join(f"- {p}" for p in points[:10])
    if kind == "tune_domain":
        passages = first.rsplit("Passages:", 1)[-1]
        return _say(about, "about", x=", ".join(_names(passages)[:3]).title() or "things")
    if kind == "tune_persona":
        domain = re.search(r"documents: (.*?)\.\s", first)
        return (f"You are an analyst of {domain.group(1) if domain else 'these documents'}, "
                "who knows its people, organizations and places.")
    if kind == "tune_entity_types":
        return json.dumps(_say(about, "types"), ensure_ascii=False)
    return "OK"


def prompt_tokens_of(messages: list[dict]) -> int:
    """A prompt's tokens as this server bills and limits them: 4 characters a token."""
    return sum(len(m.get("content") or "") for m in messages) // 4


def _content(kind: str, messages: list[dict], body: dict, switches: Switches, quirks: set,
             malformed: bool = False, about: dict | None = None) -> tuple[str, int]:
    """The reply's text, cut to the request's token limit and dressed in the endpoint's
    quirks, and its completion tokens."""
    content = _malformed(kind) if malformed else _answer(kind, messages, switches, about)
    if "ack" in quirks:
        content = "OK."
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or 4096
    reasoning = REASONING_TOKENS if "reasoning" in quirks else 0
    words = content.split()
    if len(words) > max_tokens - reasoning:
        content = " ".join(words[:max(0, max_tokens - reasoning)])
    if "fenced" in quirks:
        content = f"```\n{content}\n```"
    if "think" in quirks:
        content = (f"<think>\nThe user wants {kind}. Let me work through the text.\n"
                   f"</think>\n\n{content}")
    return content, max(1, len(content) // 4) + reasoning


def _completion(request_hash: str, model: str, content: str, prompt_tokens: int,
                completion_tokens: int, cached_tokens: int, quirks: set) -> dict:
    reply = {
        "id": f"chatcmpl-{request_hash[:12]}", "object": "chat.completion",
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": cached_tokens}},
    }
    if "no_usage" in quirks:
        reply["usage"] = None
    return reply


def _malformed(kind: str) -> str:
    if kind in ("community_report", "global_map", "lazy_relevance", "lazy_subquestions"):
        return "Sorry, here is the report: {title: broken"
    if kind in ("extract_graph", "glean_continue", "claims"):
        return '("entity"<|>ONLY A NAME)##("garbage"<|>of no known kind)##<|COMPLETE|>'
    return ""


def _reasoning_rejection(body: dict) -> dict | None:
    """The error an OpenAI reasoning model gives a request it does not take, or None."""
    if "max_tokens" in body:
        return {"message": "Unsupported parameter: 'max_tokens' is not supported with this "
                "model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error",
                "param": "max_tokens", "code": "unsupported_parameter"}
    if body.get("temperature") not in (None, 1, 1.0):
        return {"message": f"Unsupported value: 'temperature' does not support "
                f"{body['temperature']} with this model. Only the default (1) value is "
                "supported.", "type": "invalid_request_error", "param": "temperature",
                "code": "unsupported_value"}
    if body.get("logit_bias"):
        return {"message": "Unsupported parameter: 'logit_bias' is not supported with this "
                "model.", "type": "invalid_request_error", "param": "logit_bias",
                "code": "unsupported_parameter"}
    return None


class _Handler(BaseHTTPRequestHandler):
    server: "TestLLMServer"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(self, status: int, body: dict, headers: dict | None = None) -> bool:
        """False when the client was gone before the reply was written."""
        payload = json.dumps(body).encode("utf-8")
        if self._peer_closed():
            return False
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        try:
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True

    def _send_stream(self, body: dict, content: str) -> bool:
        """The reply as server-sent events, a few words per event, usage in the last one."""
        if self._peer_closed():
            return False
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        words = re.findall(r"\S+\s*|\s+", content)
        pieces = ["".join(words[i:i + 3]) for i in range(0, len(words), 3)] or [""]
        frame = {k: body[k] for k in ("id", "created", "model")}
        events = [{**frame, "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {"content": piece}, "finish_reason": None}]} for piece in pieces]
        if body.get("usage") is not None:
            events.append({**frame, "object": "chat.completion.chunk", "choices": [],
                           "usage": body["usage"]})
        try:
            for event in events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode("utf-8"))
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return False
        self.close_connection = True
        return True

    def _peer_closed(self) -> bool:
        """True when the client has closed its end (e.g. its process was killed)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _route(self) -> str:
        """The path without its query; Azure's deployment paths
        (/openai/deployments/NAME/chat/completions?api-version=...) end like OpenAI's."""
        return urlsplit(self.path).path.rstrip("/")

    def _azure_deployment(self) -> str | None:
        parts = self._route().split("/")
        if "deployments" in parts and parts.index("deployments") + 1 < len(parts):
            return parts[parts.index("deployments") + 1]
        return None

    def _authorised(self) -> bool:
        key = self.server.switches.api_key
        # OpenAI's Bearer token, or Azure's api-key header.
        given = {self.headers.get("Authorization", "").removeprefix("Bearer "),
                 self.headers.get("api-key")}
        if key and key not in given:
            self._send(401, {"error": {"message": "Incorrect API key provided",
                                       "type": "invalid_request_error", "code": "invalid_api_key"}})
            return False
        return True

    def _batch_get(self) -> bool:
        """Batch API reads: a batch, the batches, a file's content."""
        route, api = self._route(), self.server.batches
        parts = route.split("/")
        if "files" in parts and route.endswith("/content"):
            data = api.content(parts[-2])
            if data is None:
                self._send(404, {"error": {"message": f"No such file: {parts[-2]}"}})
                return True
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return True
        if route.endswith("/batches"):
            query = dict(pair.split("=", 1) for pair in urlsplit(self.path).query.split("&")
                         if "=" in pair)
            self._send(200, api.listing(int(query.get("limit", 20)), query.get("after")))
            return True
        if len(parts) > 1 and parts[-2] == "batches":
            self._send(*api.retrieve(parts[-1]))
            return True
        return False

    def _batch_post(self, raw: bytes) -> bool:
        """Batch API writes: an upload, a batch, a cancellation."""
        route, api = self._route(), self.server.batches
        if route.endswith("/files"):
            self._send(*api.upload(self.headers.get("Content-Type", ""), raw))
            return True
        if route.endswith("/batches"):
            body = json.loads(raw or b"{}")
            if route.startswith("/openai/"):
                # Azure OpenAI: an api-version on every call, and its own endpoint name.
                if "api-version=" not in urlsplit(self.path).query:
                    self._send(404, {"error": {"code": "404", "message": "Resource not found"}})
                    return True
                if body.get("endpoint") != "/chat/completions":
                    self._send(400, {"error": {"code": "invalid_request", "message":
                                               f"endpoint {body.get('endpoint')!r} is not "
                                               "supported; use /chat/completions"}})
                    return True
            self._send(*api.create(body))
            return True
        if route.endswith("/cancel") and "/batches/" in route:
            self._send(*api.cancel(route.split("/")[-2]))
            return True
        return False

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if ("/batches" in self._route() or "/files/" in self._route()) and \
                self.server.switches.batch_api and self._authorised():
            if self._batch_get():
                return
        if self._route().endswith("/stats"):
            self._send(200, self.server.stats())
        elif self._route().endswith("/log"):
            with self.server._lock:
                billed = list(self.server._stats.billed)
            self._send(200, {"log": self.server.request_log(), "billed": billed})
        elif self._route().endswith("/models"):
            if self._authorised():
                self._send(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        if ("/batches" in self._route() or self._route().endswith("/files")):
            if not self.server.switches.batch_api:
                self._send(404, {"error": {"message": f"no route {self.path}"}})
            elif self._authorised() and not self._batch_post(raw):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        body = json.loads(raw or b"{}")
        if self._route().endswith("/reset"):
            self.server.reset()
            self._send(200, {"ok": True})
            return
        deployment = self._azure_deployment()
        if deployment is not None:
            # Azure OpenAI: the deployment names the model; no api-version, no resource.
            if "api-version=" not in urlsplit(self.path).query:
                self._send(404, {"error": {"code": "404", "message": "Resource not found"}})
                return
            body["model"] = deployment
        if self._route().endswith("/embeddings") and self._authorised():
            self.server.handle_embeddings(self, body)
            return
        if not self._route().endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        if not self._authorised():
            return
        self.server.handle_chat(self, body)


class TestLLMServer(ThreadingHTTPServer):
    daemon_threads = True
    # Connections waiting to be accepted: the default 5 made clients that open hundreds at
    # once (a big rate-limit tier) wait for TCP's connect retry, a second or more.
    request_queue_size = 1024

    def __init__(self, host: str = "127.0.0.1", port: int = 0, switches: Switches | None = None):
        super().__init__((host, port), _Handler)
        self.switches = switches or Switches()
        self._lock = threading.Lock()
        self._stats = Stats()
        self._attempts: Counter = Counter()
        # model -> (time, tokens) admitted inside the limit window: limits are per model.
        self._admitted: dict[str, list[tuple[float, int]]] = {}
        self._prefixes: set[str] = set()  # conversations seen, for the prompt cache
        self._kept: list[dict] = []
        self.batches = BatchAPI(self.switches, self.batch_answer, _fraction, request_tokens)
        self._gate = threading.Event()  # cleared: answers wait (a crash test's quiet moment)
        self._gate.set()

    @property
    def url(self) -> str:
        return f"http://{self.server_address[0]}:{self.server_address[1]}/v1"

    def stats(self) -> dict:
        with self._lock:
            stats = self._stats.as_dict()
        stats["batch"] = self.batches.summary()
        return stats

    def request_log(self) -> list:
        with self._lock:
            return list(self._stats.log)

    def chat_requests(self) -> list[dict]:
        """Every chat request so far ({"kind", "model", "messages"}), with `keep_requests`."""
        with self._lock:
            return list(self._kept)

    def hold_answers(self) -> None:
        """Answers wait until `release_answers`: no reply is in transit while this holds."""
        self._gate.clear()

    def release_answers(self) -> None:
        self._gate.set()

    def reset(self) -> None:
        with self._lock:
            self._stats = Stats()
            self._attempts = Counter()
            self._admitted = {}
            self._prefixes = set()

    def _admit(self, model: str, tokens: int) -> float | None:
        """None when the request fits its model's rate limits (and is counted), else seconds
        to wait. Each model has its own limits, as at OpenAI or Azure."""
        s = self.switches
        if not (s.rpm_limit or s.tpm_limit):
            return None
        with self._lock:
            now = time.monotonic()
            window = s.limit_window_s
            admitted = [(t, n) for t, n in self._admitted.get(model, []) if t > now - window]
            self._admitted[model] = admitted
            scale = window / 60.0
            waits = []
            if s.rpm_limit and len(admitted) + 1 > s.rpm_limit * scale:
                waits.append(admitted[0][0] + window - now)
            used = sum(n for _, n in admitted)
            if s.tpm_limit and used + tokens > s.tpm_limit * scale and admitted:
                freed, wait = 0, 0.0
                for t, n in admitted:
                    freed += n
                    wait = t + window - now
                    if used - freed + tokens <= s.tpm_limit * scale:
                        break
                waits.append(wait)
            if waits:
                return max(0.001, max(waits))
            admitted.append((now, tokens))
            self._stats.counted[model] += tokens
            return None

    def _bill(self, model: str, prompt_tokens: int, completion_tokens: int,
              cached_tokens: int = 0) -> None:
        with self._lock:
            self._stats.billed.append((time.time(), model, prompt_tokens + completion_tokens))
            counts = self._stats.usage.setdefault(model, Counter())
            counts.update(calls=1, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens, cached_tokens=cached_tokens)

    def _cached_prompt_tokens(self, messages: list[dict]) -> int:
        """Tokens of the longest earlier conversation (a prefix of whole messages) that this
        one repeats, counted as a provider's prompt cache would serve them; then remembers
        this conversation's prefixes."""
        if not self.switches.prompt_cache:
            return 0
        keys = [hashlib.sha256(json.dumps(messages[:k], sort_keys=True).encode()).hexdigest()
                for k in range(1, len(messages) + 1)]
        with self._lock:
            seen = [k for k, key in enumerate(keys, 1) if key in self._prefixes]
            self._prefixes.update(keys)
        if not seen:
            return 0
        tokens = prompt_tokens_of(messages[:max(seen)])
        return tokens // 128 * 128 if tokens >= 1024 else 0

    def _record(self, kind: str, status: int, request_hash: str,
                sent: tuple[str, ...] | None = None) -> None:
        with self._lock:
            self._stats.by_status[status] += 1
            self._stats.log.append((time.time(), kind, status, request_hash))
            if sent is not None:
                self._stats.chat_parameters.append((status, sent))

    def _delivered(self, request_hash: str) -> None:
        with self._lock:
            self._stats.successful[request_hash] += 1

    def handle_chat(self, handler: _Handler, body: dict) -> None:
        s = self.switches
        messages = body.get("messages") or []
        kind, declared = request_kind(handler.headers.get(REQUEST_KIND_HEADER), messages)
        request_hash = hashlib.sha256(json.dumps(
            {k: body.get(k) for k in ("model", "messages", "max_tokens", "temperature",
                                      "logit_bias")}, sort_keys=True).encode()).hexdigest()
        with self._lock:
            self._stats.requests += 1
            self._stats.by_kind[kind] += 1
            if not declared:
                self._stats.undeclared[kind] += 1
            if s.keep_requests:
                self._kept.append({"kind": kind, "model": body.get("model"),
                                   "messages": messages})
            attempt = self._attempts[request_hash]
            self._attempts[request_hash] += 1
        prompt_tokens = prompt_tokens_of(messages)
        sent = tuple(k for k in _OPTIONAL_PARAMETERS if body.get(k) is not None)
        quirks = set(filter(None, s.personality.split(",")))
        rejection = _reasoning_rejection(body) if "reasoning" in quirks else None
        if rejection is not None:
            self._record(kind, 400, request_hash, sent)
            handler._send(400, {"error": rejection})
            return
        if s.models and body.get("model") not in s.models.split(","):
            self._record(kind, 404, request_hash, sent)
            handler._send(404, {"error": {
                "message": f"The model `{body.get('model')}` does not exist",
                "type": "invalid_request_error", "code": "model_not_found"}})
            return
        if s.context_window and prompt_tokens > s.context_window:
            self._record(kind, 400, request_hash, sent)
            handler._send(400, {"error": {
                "message": f"This model's maximum context length is {s.context_window} tokens.",
                "type": "invalid_request_error", "code": "context_length_exceeded"}})
            return
        if s.reject_logit_bias and body.get("logit_bias"):
            self._record(kind, 400, request_hash, sent)
            handler._send(400, {"error": {"message": "Invalid request: sampling options not "
                                          "supported", "type": "BadRequestError"}})
            return
        if "error_200" in quirks and attempt == 0:
            self._record(kind, 200, request_hash, sent)
            handler._send(200, {"error": {"message": "The server is overloaded", "code": 503}})
            return
        if attempt < s.fail_first:
            self._record(kind, s.fail_status, request_hash, sent)
            headers = {"Retry-After": f"{s.retry_after_s:g}"} if s.fail_status == 429 else {}
            handler._send(s.fail_status, {"error": {"message": f"injected failure {s.fail_status}"}},
                          headers)
            return
        roll = _fraction(s.seed, request_hash, attempt)
        if roll < s.rate_429:
            self._record(kind, 429, request_hash, sent)
            handler._send(429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
                          {"Retry-After": f"{s.retry_after_s:g}"})
            return
        roll -= s.rate_429
        if roll < s.rate_5xx:
            self._record(kind, 503, request_hash, sent)
            handler._send(503, {"error": {"message": "The server is overloaded"}})
            return
        roll -= s.rate_5xx
        if roll < s.rate_timeout:
            self._record(kind, 0, request_hash, sent)
            time.sleep(s.timeout_sleep_s)
            return  # The client has given up; answering now would be ignored.
        roll -= s.rate_timeout
        content, completion_tokens = _content(
            kind, messages, body, s, quirks, malformed=roll < s.rate_malformed,
            about=_declared(handler.headers.get(REQUEST_ABOUT_HEADER)) if declared else None)
        model = body.get("model", "test-model")
        counted = completion_tokens
        if s.limit_counts == "max_tokens":
            counted = int(body.get("max_completion_tokens") or body.get("max_tokens") or 4096)
        wait = self._admit(model, prompt_tokens + counted)
        if wait is not None:
            self._record(kind, 429, request_hash, sent)
            handler._send(429, {"error": {"message": "Rate limit reached", "type": "requests",
                                          "code": "rate_limit_exceeded"}},
                          {"Retry-After": f"{wait:.3f}", "retry-after-ms": f"{wait * 1000:.0f}"})
            return
        self._record(kind, 200, request_hash, sent)  # logged at admission, as a provider counts it
        cached_tokens = self._cached_prompt_tokens(messages)
        self._bill(model, prompt_tokens, completion_tokens, cached_tokens)
        with self._lock:
            counts, peaks = self._stats.in_flight, self._stats.peak_in_flight
            counts.update((kind, "all"))
            for key in (kind, "all"):
                peaks[key] = max(peaks[key], counts[key])
        try:
            if not s.latency_kinds or kind in s.latency_kinds.split(","):
                time.sleep((s.latency_ms + completion_tokens * s.latency_per_output_token_ms)
                           / 1000)
            self._gate.wait()
        finally:
            with self._lock:
                self._stats.in_flight.subtract((kind, "all"))
        reply = _completion(request_hash, model, content, prompt_tokens, completion_tokens,
                            cached_tokens, quirks)
        if body.get("stream"):
            delivered = handler._send_stream(reply, content)
        else:
            delivered = handler._send(200, reply, self._limit_headers())
        if delivered:
            self._delivered(request_hash)


    def batch_answer(self, endpoint: str, body: dict) -> dict:
        """A Batch API line's answer: what the chat or embeddings endpoint would answer,
        billed to the batch pool (no latency, faults or rate limits of the online one)."""
        if endpoint.endswith("/embeddings"):
            tokens = embedding_tokens(body.get("input"))
            model = body.get("model", "test-embedding")
            with self._lock:
                self._stats.by_kind["batch:embeddings"] += 1
            self._bill(f"batch:{model}", tokens, 0)
            return _embeddings_reply(body, tokens)
        return self.batch_completion(body)

    def batch_completion(self, body: dict) -> dict:
        messages = body.get("messages") or []
        kind = classify(messages)
        quirks = set(filter(None, self.switches.personality.split(",")))
        with self._lock:
            self._stats.by_kind[f"batch:{kind}"] += 1
            if self.switches.keep_requests:
                self._kept.append({"kind": kind, "model": body.get("model"),
                                   "messages": messages, "batch": True})
        content, completion_tokens = _content(kind, messages, body, self.switches, quirks)
        prompt_tokens = prompt_tokens_of(messages)
        model = body.get("model", "test-model")
        self._bill(f"batch:{model}", prompt_tokens, completion_tokens)
        request_hash = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return _completion(request_hash, model, content, prompt_tokens, completion_tokens, 0,
                           quirks)

    def _limit_headers(self) -> dict:
        """The limits, stated as OpenAI states them on every reply."""
        s = self.switches
        headers = {}
        if s.rpm_limit:
            headers["x-ratelimit-limit-requests"] = f"{s.rpm_limit:g}"
        if s.tpm_limit:
            headers["x-ratelimit-limit-tokens"] = f"{s.tpm_limit:g}"
        return headers

    def handle_embeddings(self, handler: _Handler, body: dict) -> None:
        """Vectors from the offline hashing method (`_embeddings_reply`), after the faults
        and limits the switches ask for."""
        inputs = body.get("input")
        request_hash = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self._lock:
            self._stats.requests += 1
            self._stats.by_kind["embeddings"] += 1
            attempt = self._attempts[request_hash]
            self._attempts[request_hash] += 1
        if attempt < self.switches.fail_first:
            self._record("embeddings", self.switches.fail_status, request_hash)
            handler._send(self.switches.fail_status, {"error": {"message": "injected failure"}},
                          {"Retry-After": f"{self.switches.retry_after_s:g}"})
            return
        tokens = embedding_tokens(inputs)
        model = body.get("model", "test-embedding")
        wait = self._admit(model, tokens)
        if wait is not None:
            self._record("embeddings", 429, request_hash)
            handler._send(429, {"error": {"message": "Rate limit reached"}},
                          {"Retry-After": f"{wait:.3f}"})
            return
        self._record("embeddings", 200, request_hash)
        self._bill(model, tokens, 0)
        time.sleep(self.switches.latency_ms / 1000)
        if handler._send(200, _embeddings_reply(body, tokens)):
            self._delivered(request_hash)


def request_tokens(body: dict) -> int:
    """A chat or embeddings request's prompt tokens, as the server counts them."""
    if "input" in body:
        return embedding_tokens(body["input"])
    return prompt_tokens_of(body.get("messages") or [])


def embedding_tokens(inputs) -> int:
    """An embeddings request's tokens, as the server counts them (a character in four)."""
    inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
    return sum(len(str(text)) for text in inputs) // 4


def _embeddings_reply(body: dict, tokens: int) -> dict:
    """Vectors from the offline hashing method, so similar texts get similar vectors."""
    from graphrag_ray.llm.embeddings import hashing_embed

    inputs = body.get("input")
    inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
    vectors = hashing_embed([str(text) for text in inputs], int(body.get("dimensions") or 256))
    return {"object": "list", "model": body.get("model", "test-embedding"),
            "data": [{"object": "embedding", "index": i, "embedding": vector.tolist()}
                     for i, vector in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


@contextmanager
def run_test_server(port: int = 0, **switches) -> Iterator[TestLLMServer]:
    server = TestLLMServer(port=port, switches=Switches(**switches))
    # A short poll: `shutdown` waits for the loop's next look (0.5 s by default, paid by
    # every test that starts a server).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


# What each switch does, for `--help` (every field of `Switches` has a line).
SWITCH_HELP = {
    "latency_ms": "delay of every successful answer, ms",
    "latency_per_output_token_ms": "further delay per output token, ms",
    "latency_kinds": "comma-separated request kinds the latency is for (default: all)",
    "rate_429": "share of requests answered 429 with Retry-After (0-1)",
    "retry_after_s": "the Retry-After those 429s carry, s",
    "rate_5xx": "share of requests answered 500 (0-1)",
    "relevant_share": "a passage holding more than this share of a question's content words "
                      "is relevant (LazyGraphRAG relevance tests)",
    "batch_api": "serve the Batch API (off: its routes answer 404, as local servers do)",
    "batch_delay_s": "Batch API: seconds from a batch's creation to its completion",
    "batch_failed_lines": "Batch API: share of lines answered with an error (0-1)",
    "batch_expired_lines": "Batch API: share of lines left unanswered as the batch expires",
    "batch_fail_validation": "Batch API: the first N batches fail validation",
    "batch_queue_tokens": "Batch API: enqueued-token limit per model (0: none)",
    "keep_requests": "keep every chat request's kind, model and messages (for tests)",
    "rate_timeout": "share of requests that hang for --timeout-sleep-s (0-1)",
    "timeout_sleep_s": "how long a hanging request hangs, s",
    "rate_malformed": "share of answers that are malformed for their kind (0-1)",
    "fail_first": "the first N attempts of every distinct request get --fail-status",
    "fail_status": "the status of those first attempts (429 carries Retry-After)",
    "rpm_limit": "requests per minute enforced over a sliding window (0: none)",
    "tpm_limit": "tokens per minute enforced likewise, prompt + completion (0: none)",
    "limit_window_s": "the window those limits are counted over, s",
    "limit_counts": "what a chat request counts against the token limit: usage (prompt + "
                    "completion) or max_tokens (prompt + the completion limit asked for)",
    "prompt_cache": "report cached prompt tokens as OpenAI's prompt cache would",
    "glean_yes_rounds": "gleaning checks of a chunk answered Y before the first N",
    "reject_logit_bias": "answer 400 (without naming the parameter) to requests with logit_bias",
    "personality": "endpoint quirks, comma-separated: " + ", ".join(PERSONALITIES),
    "context_window": "prompts longer than this many tokens get 400 (0: no limit)",
    "models": "comma-separated model names; chat calls naming another get 404",
    "api_key": "the API key requests must carry (default: any)",
    "seed": "seed of the random faults",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="personalities:\n" + "\n".join(f"  {name:<10} {what}"
                                               for name, what in PERSONALITIES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="port (0: any free one)")
    for name, default in Switches().__dict__.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(default, bool):
            if default:
                parser.add_argument("--no-" + name.replace("_", "-"), dest=name,
                                    action="store_false", help="do not " + SWITCH_HELP[name])
            else:
                parser.add_argument(flag, action="store_true", help=SWITCH_HELP[name])
        else:
            parser.add_argument(flag, type=type(default) if default is not None else str,
                                default=default,
                                help=f"{SWITCH_HELP[name]} (default: {default})")
    args = vars(parser.parse_args(argv))
    host, port = args.pop("host"), args.pop("port")
    server = TestLLMServer(host, port, Switches(**args))
    print(f"test LLM server on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
