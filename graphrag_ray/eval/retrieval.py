"""`graphrag-ray eval retrieval`: does a method find the passages that answer? The field's
table for multi-hop QA (HotpotQA, 2WikiMultiHopQA, MuSiQue): recall@2/5/10 of each
question's supporting passages among the documents a method's cited text units belong to,
in the order it cites them, and whether an answer string is in its first five; beside two
baselines computed in the same run over the same documents: BM25 (k1 1.2, b 0.75, words
lower-cased, each document's title and text: the field's usual baseline) and dense retrieval
(the local sentence model over the same texts, when installed). With an LLM configured, the
answers' exact match and token F1 too.

Each passage of the benchmark is a document of the index (a JSONL corpus of id, title,
text, indexed with `input.id_column=id`): a supporting passage is matched to its document by
that id, else by its title and text, else by its title.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from typing import Callable

import numpy as np

from graphrag_ray import schema
from graphrag_ray.eval.benchmarks import Gold, Question, exact_match, normalized_answer, token_f1

KS = (2, 5, 10)


def _key(title: str, text: str | None) -> tuple[str, str]:
    return (" ".join((title or "").split()), " ".join((text or "").split()))


class Passages:
    """The index's documents as the benchmark's passages: gold passages to document rows,
    cited units to document rows."""

    def __init__(self, documents: list[dict], units: list[dict]):
        self.titles = [d["title"] for d in documents]
        self.texts = [d["text"] for d in documents]
        self.by_id, self.by_key, self.by_title = {}, {}, {}
        for row, document in enumerate(documents):
            metadata = document.get("metadata")
            source_id = json.loads(metadata).get("id") if metadata else None
            if source_id is not None:
                self.by_id[str(source_id)] = row
            self.by_key.setdefault(_key(document["title"], document["text"]), row)
            self.by_title.setdefault(" ".join((document["title"] or "").split()), row)
        row_of = {d["id"]: row for row, d in enumerate(documents)}
        self.unit_document = {u["id"]: row_of.get((u["document_ids"] or [None])[0])
                              for u in units}

    def gold_rows(self, gold: list[Gold]) -> set[int]:
        rows = set()
        for passage in gold:
            row = self.by_id.get(passage.id) if passage.id else None
            if row is None and passage.text is not None:
                row = self.by_key.get(_key(passage.title, passage.text))
            if row is None:
                row = self.by_title.get(" ".join(passage.title.split()))
            if row is not None:
                rows.add(row)
        return rows

    def of_units(self, units: list[str]) -> list[int]:
        """The documents of `units`, in the order first cited."""
        rows = (self.unit_document.get(u) for u in units)
        return list(dict.fromkeys(r for r in rows if r is not None))


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bm25_baseline(texts: list[str], k1: float = 1.2, b: float = 0.75):
    """A function question -> document rows by BM25, best first (the field's baseline)."""
    counts = [Counter(_words(t)) for t in texts]
    lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
    mean = lengths.mean() if len(lengths) else 1.0
    postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for row, c in enumerate(counts):
        for word, tf in c.items():
            postings[word].append((row, tf))

    def search(question: str) -> list[int]:
        scores = np.zeros(len(texts))
        for word in set(_words(question)):
            rows = postings.get(word)
            if not rows:
                continue
            idf = np.log(1 + (len(texts) - len(rows) + 0.5) / (len(rows) + 0.5))
            where = np.array([r for r, _ in rows])
            tf = np.array([t for _, t in rows], dtype=np.float64)
            scores[where] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[where] / mean))
        top = np.flatnonzero(scores)
        return top[np.argsort(-scores[top], kind="stable")][:50].tolist()
    return search


def dense_baseline(texts: list[str]):
    """Question -> document rows by the local model's cosine, or None (not installed)."""
    from graphrag_ray.llm.sentence_model import ModelMissing, sentence_model

    try:
        model = sentence_model()
    except ModelMissing:
        return None
    vectors = model.embed(texts)

    def search(question: str) -> list[int]:
        scores = vectors @ model.embed([question])[0]
        return np.argsort(-scores, kind="stable")[:50].tolist()
    return search


def _scores(ranked: list[int], gold: set[int], answers: list[str], texts: list[str]) -> dict:
    found = {f"recall@{k}": len(set(ranked[:k]) & gold) / len(gold) for k in KS}
    wanted = [normalized_answer(a) for a in answers if normalized_answer(a)]
    top = " ".join(normalized_answer(texts[r]) for r in ranked[:5])
    found["answer_in_top5"] = float(any(f" {a} " in f" {top} " for a in wanted))
    return found


def evaluate(index, questions: list[Question], methods: list[str], *,
             baselines: tuple[str, ...] | list[str] = ("bm25", "dense"), answers: bool = False,
             progress: Callable[[str], None] = lambda _: None) -> dict:
    """Per method (and baseline): the mean of each measure over the questions whose gold
    passages are in the index, and the p50 time a question; the per-question rows."""
    documents = index.table(schema.DOCUMENTS, ["id", "title", "text", "metadata"]).to_pylist()
    units = index.table(schema.TEXT_UNITS, ["id", "document_ids"]).to_pylist()
    passages = Passages(documents, units)
    texts = [f"{t}\n{x}" for t, x in zip(passages.titles, passages.texts)]
    searchers: dict[str, Callable[[str], list[int]]] = {}
    if "bm25" in baselines:
        searchers["bm25 (baseline)"] = bm25_baseline(texts)
    dense = dense_baseline(texts) if "dense" in baselines else None
    if dense is not None:
        searchers["dense (baseline)"] = dense
    rows, skipped = [], 0
    for number, question in enumerate(questions, start=1):
        gold = passages.gold_rows(question.supporting)
        if not gold:
            skipped += 1
            continue
        for name, search in searchers.items():
            rows.append({"question": question.id, "method": name,
                         **_scores(search(question.question), gold, question.answers, texts)})
        for method in methods:
            started = time.perf_counter()
            result = index.search(method, question.question)
            seconds = time.perf_counter() - started
            row = {"question": question.id, "method": method, "seconds": seconds,
                   **_scores(passages.of_units(result.sources.text_units), gold,
                             question.answers, texts)}
            if answers:
                row["exact_match"] = exact_match(result.answer, question.answers)
                row["f1"] = token_f1(result.answer, question.answers)
            rows.append(row)
        if number % 10 == 0:
            progress(f"{number}/{len(questions)} questions")
    return {"questions": len(questions) - skipped, "skipped": skipped,
            "methods": _summary(rows), "rows": rows}


def _summary(rows: list[dict]) -> dict[str, dict]:
    by_method: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_method[row["method"]].append(row)
    summary = {}
    for method, mine in by_method.items():
        keys = [k for k in mine[0] if k not in ("question", "method", "seconds")]
        summary[method] = {k: round(float(np.mean([r[k] for r in mine])), 3) for k in keys}
        if "seconds" in mine[0]:
            summary[method]["p50_ms"] = round(1000 * float(np.median(
                [r["seconds"] for r in mine])), 1)
    return summary


def format_table(result: dict) -> str:
    columns = [f"recall@{k}" for k in KS] + ["answer_in_top5", "exact_match", "f1", "p50_ms"]
    present = [c for c in columns if any(c in s for s in result["methods"].values())]
    lines = [f"{result['questions']} questions" + (
        f" ({result['skipped']} without their passages in the index, left out)"
        if result["skipped"] else ""),
        "method".ljust(20) + "".join(c.rjust(16) for c in present)]
    for method, figures in result["methods"].items():
        lines.append(method.ljust(20) + "".join(
            (f"{figures[c]:.3f}" if c != "p50_ms" else f"{figures[c]:.1f}").rjust(16)
            if c in figures else "-".rjust(16) for c in present))
    return "\n".join(lines)
