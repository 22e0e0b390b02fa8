"""The final answer call every method ends with, streamed piece by piece when asked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from graphrag_ray.llm.client import ChatClient
from graphrag_ray.prompts_loader import render
from graphrag_ray.query.context import conversation_text
from graphrag_ray.query.opened_index import OpenedIndex
from graphrag_ray.query.results import SearchResult


def answer_from_prompt(chat: ChatClient, prompt: str, max_tokens: int,
                       on_token: Callable[[str], None] | None = None, *, kind: str) -> str:
    """`kind`: the request's (`llm.request_kinds`)."""
    messages = [{"role": "user", "content": prompt}]
    if on_token is None:
        return chat.complete(messages, max_tokens=max_tokens, kind=kind).strip()
    pieces = []
    for piece in chat.stream(messages, max_tokens=max_tokens, kind=kind):
        pieces.append(piece)
        on_token(piece)
    return "".join(pieces).strip()


@dataclass
class Asked:
    """The user's turn: the question, the conversation before it, and where the answer's
    pieces go as they are written (None: returned whole)."""
    question: str
    history: list[dict] | None = None
    on_token: Callable[[str], None] | None = None


@dataclass
class Answering:
    """How a method writes its final answer: its prompt (a name in `index.prompts`), its
    config section (`response_type`, `max_output_tokens`) and the request's kind."""
    index: OpenedIndex
    prompt: str
    section: object
    kind: str = "context_answer"


def answer_from_context(result: SearchResult, asked: Asked, context: str, how: Answering, *,
                        use_llm: bool, extractive: Callable[[], str]) -> None:
    """Sets `result.answer` (and its LLM usage): the method's prompt filled with the
    question, the context and the conversation, or offline the `extractive` answer, sent
    whole."""
    if use_llm:
        index = how.index
        chat = index.services.chat(index.config.llm)
        prompt = render(index.prompts[how.prompt], question=asked.question,
                        context_data=context, response_type=how.section.response_type,
                        conversation_history=conversation_text(asked.history))
        result.answer = answer_from_prompt(chat, prompt, how.section.max_output_tokens,
                                           asked.on_token, kind=how.kind)
        result.usage.add(chat.usage)
        result.llm_calls += 1
        return
    result.answer = extractive()
    if asked.on_token:
        asked.on_token(result.answer)
