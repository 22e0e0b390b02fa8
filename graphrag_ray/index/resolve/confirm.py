"""Uncertain pairs (between `resolution.review_threshold` and `threshold`) put to the LLM,
`pairs_per_call` in one request, under the build's rate budget and response cache, in Ray
tasks that read the descriptions from the merge's blocks. A pair the LLM does not answer, or
whose call fails, stays unmerged: confirming is a chance to merge, never a reason to."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import map_items
from graphrag_ray.errors import LLMError
from graphrag_ray.index.context import BuildContext
from graphrag_ray.llm.client import LLMServices, MalformedReply, Usage
from graphrag_ray.prompts_loader import prompt_version, render
from graphrag_ray.tokens import truncate_to_tokens

PROMPT = "resolve_entities"
# Words of description per name in the prompt: enough to tell two people apart.
DESCRIPTION_TOKENS = 120
# Calls one task makes (in threads): tasks hold no CPU, so many run while the budget allows.
CALLS_PER_TASK = 16
_VERDICT = re.compile(r"^\W*(?:pair\s*)?(\d+)\s*[:.)\-]\s*\**\s*(yes|no)\b", re.I | re.M)


def parse_verdicts(reply: str, n_pairs: int) -> dict[int, bool]:
    """Pair number (1-based) -> yes. A reply with no verdict at all is malformed (asked again)."""
    verdicts = {int(number): answer.lower() == "yes"
                for number, answer in _VERDICT.findall(reply) if 1 <= int(number) <= n_pairs}
    if not verdicts:
        raise ValueError("no pair verdicts in the reply")
    return verdicts


def pairs_prompt(template: str, pairs: list[dict], encoding: str) -> str:
    lines = []
    for number, pair in enumerate(pairs, 1):
        lines.append(f"Pair {number}:")
        for side in ("a", "b"):
            text = truncate_to_tokens(" ".join(pair[f"{side}_descriptions"]), DESCRIPTION_TOKENS,
                                      encoding)
            lines.append(f"  - {pair[f'{side}_title']} ({pair[f'{side}_type'] or 'UNKNOWN'}): "
                         f"{text}")
    return render(template, pairs="\n".join(lines))


def _confirm_task(item: tuple[list[list[dict]], GraphRagConfig, str, LLMServices],
                  *blocks: pa.Table) -> tuple[list[tuple[int, int]], dict, int]:
    """Each call's pairs (rows a, b and the blocks' addresses of their description lists) ->
    the pairs confirmed, the usage, and the calls that failed."""
    calls, config, template, services = item
    chat = services.chat(config.llm, stage="resolve")
    encoding = config.tokenizer.encoding
    tag = prompt_version(template)
    usage, failed = Usage(), 0

    def ask(pairs: list[dict]) -> list[tuple[int, int]]:
        nonlocal failed
        for pair in pairs:
            for side in ("a", "b"):
                shard, row = pair[f"{side}_address"]
                pair[f"{side}_descriptions"] = blocks[shard].column("descriptions")[row].as_py()
        prompt = pairs_prompt(template, pairs, encoding)
        scoped = chat.scoped()
        try:
            verdicts = scoped.complete_parsed(
                [{"role": "user", "content": prompt}], lambda r: parse_verdicts(r, len(pairs)),
                max_tokens=8 * len(pairs) + 16, cache_tag=tag, kind="resolve_pairs")
        except (LLMError, MalformedReply):
            failed += 1
            verdicts = {}
        finally:
            usage.add(scoped.usage)
        return [(p["a"], p["b"]) for number, p in enumerate(pairs, 1) if verdicts.get(number)]

    with ThreadPoolExecutor(max(1, min(len(calls), config.llm.concurrent_requests))) as pool:
        confirmed = [pair for found in pool.map(ask, calls) for pair in found]
    return confirmed, usage.as_dict(), failed


def confirm_pairs(ctx: BuildContext, entities: pa.Table, uncertain: pa.Table, handles: list
                  ) -> tuple[set[tuple[int, int]], dict]:
    """The uncertain pairs the LLM says are one entity, and what asking cost."""
    config = ctx.config
    titles = entities.column("title").to_pylist()
    types = entities.column("type").to_pylist()
    shards = entities.column("description_shard").to_pylist()
    rows = entities.column("description_row").to_pylist()
    pairs = [{"a": a, "b": b, "a_title": titles[a], "b_title": titles[b], "a_type": types[a],
              "b_type": types[b], "a_address": (shards[a], rows[a]),
              "b_address": (shards[b], rows[b])}
             for a, b in zip(uncertain.column("a").to_pylist(), uncertain.column("b").to_pylist())]
    size = config.resolution.pairs_per_call
    calls = [pairs[i:i + size] for i in range(0, len(pairs), size)]
    results = map_items(
        _confirm_task, [(calls[i:i + CALLS_PER_TASK], config, ctx.prompts[PROMPT], ctx.services)
                        for i in range(0, len(calls), CALLS_PER_TASK)],
        config.runtime, num_cpus=0, shared=handles)
    usage, failed, confirmed = Usage(), 0, set()
    for found, task_usage, task_failed in results:
        confirmed.update(found)
        usage.add(task_usage)
        failed += task_failed
    return confirmed, {**usage.as_dict(), "calls_failed": failed, "requests": len(calls)}
