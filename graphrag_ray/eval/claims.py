"""Claim-based metrics (the paper's second evaluation): the LLM lists the factual claims of
each answer; comprehensiveness is the number of distinct claims, diversity the number of
clusters of claim embeddings at several cosine-distance thresholds (average-linkage
agglomerative clustering, from scipy)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from graphrag_ray.errors import LLMError
from graphrag_ray.eval.records import RecordFile
from graphrag_ray.llm.client import ChatClient, parse_json_object
from graphrag_ray.prompts_loader import render


def distinct_claims(claims: list[str]) -> list[str]:
    """Claims that differ in more than case, spacing and punctuation."""
    seen, kept = set(), []
    for claim in claims:
        key = " ".join(re.findall(r"\w+", claim.lower()))
        if key and key not in seen:
            seen.add(key)
            kept.append(claim.strip())
    return kept


def cluster_counts(vectors: np.ndarray, thresholds: list[float]) -> dict[str, int]:
    """Clusters of unit vectors at each cosine-distance threshold."""
    if len(vectors) < 2:
        return {f"{t:g}": len(vectors) for t in thresholds}
    from scipy.cluster.hierarchy import fcluster, linkage

    tree = linkage(vectors, method="average", metric="cosine")
    return {f"{t:g}": int(fcluster(tree, t=t, criterion="distance").max()) for t in thresholds}


def extract_claims(chat: ChatClient, template: str, question: str, answer: str,
                   max_tokens: int, attempts: int) -> list[str]:
    prompt = render(template, question=question, answer=answer)

    def parse(reply: str) -> list[str]:
        claims = parse_json_object(reply)["claims"]
        if not isinstance(claims, list):
            raise ValueError("'claims' is not a list")
        return [str(c) for c in claims if str(c).strip()]

    return chat.complete_parsed([{"role": "user", "content": prompt}], parse,
                                max_tokens=max_tokens, cache_tag="attempt-{attempt}",
                                retries=attempts - 1, kind="eval_claims")


def measure_claims(answers: list[dict], chat: ChatClient, template: str,
                   embed: Callable[[list[str]], np.ndarray], thresholds: list[float],
                   records: RecordFile, concurrency: int, max_tokens: int, attempts: int,
                   progress: Callable[[str], None]) -> int:
    done = records.done_keys()
    todo = [a for a in answers if (a["question_id"], a["condition"]) not in done]
    progress(f"{len(todo)} answers to measure ({len(done)} already done)")

    def measure(answer: dict) -> None:
        try:
            claims = distinct_claims(extract_claims(chat.scoped(), template, answer["question"],
                                                    answer["answer"], max_tokens, attempts))
            error = None
        except LLMError as exc:
            claims, error = [], str(exc)
        vectors = embed(claims) if claims else np.zeros((0, 1), dtype=np.float32)
        records.append({"question_id": answer["question_id"], "condition": answer["condition"],
                        "claims": claims, "comprehensiveness": len(claims),
                        "diversity": cluster_counts(vectors, thresholds), "error": error})

    with ThreadPoolExecutor(concurrency) as pool:
        for number, _ in enumerate(pool.map(measure, todo), start=1):
            if number % 20 == 0 or number == len(todo):
                progress(f"measured {number}/{len(todo)}")
    return len(todo)
