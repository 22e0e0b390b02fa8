"""The final answer call every method ends with, streamed piece by piece when asked."""

from __future__ import annotations

from typing import Callable

from graphrag_ray.llm.client import ChatClient


def answer_from_prompt(chat: ChatClient, prompt: str, max_tokens: int,
                       on_token: Callable[[str], None] | None = None) -> str:
    messages = [{"role": "user", "content": prompt}]
    if on_token is None:
        return chat.complete(messages, max_tokens=max_tokens).strip()
    pieces = []
    for piece in chat.stream(messages, max_tokens=max_tokens):
        pieces.append(piece)
        on_token(piece)
    return "".join(pieces).strip()
