"""A model's reply as our parsers should see it: without the reasoning some models write
before answering (`<think>...</think>` from DeepSeek-R1, Qwen3 and others served by vLLM,
Ollama or llama.cpp) and without a code fence wrapped around the whole answer.

A reasoning block that never closes (the reply was cut at its length limit while the model
was still thinking) leaves no answer: the empty reply is then handled like any unreadable one.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

_REASONING_TAGS = ("think", "thinking", "reasoning")
_OPENING = re.compile(r"^\s*<(%s)>" % "|".join(_REASONING_TAGS), re.IGNORECASE)
_FENCED = re.compile(r"^\s*```[\w-]*[ \t]*\n(.*?)\n?```\s*$", re.DOTALL)


def visible_reply(text: str) -> str:
    """`text` without leading reasoning blocks and without a fence around all of it."""
    answer, _ = _past_reasoning(text, final=True)
    fenced = _FENCED.match(answer)
    return fenced.group(1) if fenced else answer


def visible_stream(pieces: Iterable[str]) -> Iterator[str]:
    """The pieces of a streamed reply, without leading reasoning blocks: pieces are held
    while the reply's start may still open one, and while one is open."""
    held = ""
    answering = False
    for piece in pieces:
        if answering:
            yield piece
            continue
        held += piece
        answer, answering = _past_reasoning(held, final=False)
        if answering and answer:
            yield answer
    if not answering:
        answer, _ = _past_reasoning(held, final=True)
        if answer:
            yield answer


def _past_reasoning(text: str, final: bool) -> tuple[str, bool]:
    """(what follows the leading reasoning blocks, whether the answer has begun). Not
    `final`: the text may still grow, so a start that could become a block is waited on."""
    removed = False
    rest = text
    while True:
        stripped = rest.lstrip()
        opening = _OPENING.match(stripped)
        if opening:
            closing = re.search(r"</%s>" % opening.group(1), stripped[opening.end():],
                                re.IGNORECASE)
            if closing is None:  # still thinking, or cut off while thinking: no answer yet
                return "", final
            rest = stripped[opening.end() + closing.end():]
            removed = True
            continue
        if not final and (not stripped or (stripped.startswith("<") and ">" not in stripped
                                           and len(stripped) < 12)):
            return "", False
        return (stripped if removed else rest), True
