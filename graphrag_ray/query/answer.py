"""The final answer call every method ends with, streamed piece by piece when asked."""

from __future__ import annotations

from typing import Callable

from graphrag_ray.llm.client import ChatClient, LLMServices
from graphrag_ray.prompts_loader import render
from graphrag_ray.query.context import conversation_text
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


def answer_from_context(result: SearchResult, question: str, context: str, *, use_llm: bool,
                        template: str, services: LLMServices, llm_config, response_type: str,
                        max_tokens: int, history: list[dict] | None,
                        on_token: Callable[[str], None] | None,
                        extractive: Callable[[], str], kind: str = "context_answer") -> None:
    """Sets `result.answer` (and its LLM usage): the template filled with the question, the
    context and the conversation, or offline the `extractive` answer, sent whole."""
    if use_llm:
        chat = services.chat(llm_config)
        prompt = render(template, question=question, context_data=context,
                        response_type=response_type,
                        conversation_history=conversation_text(history))
        result.answer = answer_from_prompt(chat, prompt, max_tokens, on_token, kind=kind)
        result.usage.add(chat.usage)
        result.llm_calls += 1
        return
    result.answer = extractive()
    if on_token:
        on_token(result.answer)
