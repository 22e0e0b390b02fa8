"""LLM extraction of one chunk: the multi-part prompt, then gleaning rounds in the same conversation.

Gleaning follows the paper: after each round, a forced yes/no "were entities missed?" check
(logit bias on the Y and N tokens where the model's tokenizer is known and the endpoint takes
it; otherwise a short reply, parsed); on yes, "MANY entities were
missed" and another round. It stops at `max_gleanings`, on a no, or when a round adds nothing.
With `extraction.glean_check: false` the check is skipped and every round is asked for.
The conversation only grows at its end, so a provider's prompt cache serves each round's
earlier turns.

Each call tells the rate budget how much output its chunk may still wait for (`urgency`,
`rate_limiter._rank`): a first call the most the conversation can take, a gleaning round
(and its check) the length of the reply before it, a forecast of its own: a chunk dense
with names answers long in every round. Where the window is full, the longest chains go
first and the calls pushed last are the short ones.
"""

from __future__ import annotations

from typing import Protocol

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.index.extract.tuples import (
    Delimiters, ParsedRecords, parse_claim_records, parse_graph_records)
from graphrag_ray.llm.request_shape import model_encoding
from graphrag_ray.prompts_loader import prompt_version, render
from graphrag_ray.tokens import count_tokens, yes_no_logit_bias


class Chat(Protocol):
    def complete(self, messages: list[dict], *, max_tokens: int,
                 logit_bias: dict[int, int] | None = None, cache_tag: str = "",
                 kind: str | None = None, about: dict | None = None,
                 urgency: int = 0) -> str: ...

    def takes_logit_bias(self) -> bool: ...

    def note_reply(self, usable: bool, sample: str, look_at: str) -> None: ...


def parse_yes_no(reply: str) -> bool:
    return reply.strip().strip("\"'.").upper().startswith("Y")


class GraphExtractor:
    """The rendered prompts of one job, and what it learned of the endpoint; `extract` takes
    the chat client to call through (each chunk's own, so its usage is counted per chunk)."""

    def __init__(self, config: GraphRagConfig, prompts: dict[str, str]):
        ex = config.extraction
        self.config = config
        self.delimiters = Delimiters(ex.tuple_delimiter, ex.record_delimiter, ex.completion_delimiter)
        shared = dict(tuple_delimiter=ex.tuple_delimiter, record_delimiter=ex.record_delimiter,
                      completion_delimiter=ex.completion_delimiter)
        self.extract_template = render(prompts["extract_graph"],
                                       entity_types=", ".join(ex.entity_types), **shared)
        self.check_prompt = render(prompts["glean_check"], **shared)
        self.continue_prompt = render(prompts["glean_continue"], **shared)
        self.claims_template = render(prompts["extract_claims"],
                                      claim_description=config.claims.description, **shared)
        # The Y and N token ids of the model's own tokenizer (forced by llm.logit_bias: the
        # configured tokenizer's); None where we do not know it.
        encoding = model_encoding(config.llm.model) or (
            config.tokenizer.encoding if config.llm.logit_bias else None)
        self.logit_bias = yes_no_logit_bias(encoding) if encoding else None
        self.graph_tag = prompt_version(self.extract_template + self.check_prompt
                                        + self.continue_prompt)
        folder = config.prompts.dir
        self.look_at = "the extract_graph prompt (" + (
            f"{folder}/extract_graph.txt, or the built-in one where that file is missing)"
            if folder else "the built-in one)")
        self.claims_tag = prompt_version(self.claims_template)

    def _about(self, prompt: str, text: str, entity_types: bool = True) -> dict:
        """What the request holds besides its prose (`llm.request_kinds`)."""
        d = self.delimiters
        about: dict = {"delimiters": [d.tuple, d.record, d.completion]}
        start = prompt.rfind(text)
        if start >= 0:  # a template without {input_text} holds no text to point at
            about["text"] = [start, start + len(text)]
        if entity_types:
            about["entity_types"] = self.config.extraction.entity_types
        return about

    def extract(self, text: str, chat: Chat) -> ParsedRecords:
        ex = self.config.extraction
        messages = [{"role": "user", "content": render(self.extract_template, input_text=text)}]
        about = self._about(messages[0]["content"], text)
        reply = chat.complete(messages, max_tokens=ex.max_output_tokens,
                              cache_tag=self.graph_tag, kind="extract_graph", about=about,
                              urgency=ex.max_output_tokens * (1 + ex.max_gleanings))
        records = parse_graph_records(reply, self.delimiters)
        # Records, or a reply that says there are none: usable. Text without either: not.
        chat.note_reply(bool(records.entities or records.relationships or not records.malformed),
                        reply, self.look_at)
        for _ in range(ex.max_gleanings):
            messages = messages + [{"role": "assistant", "content": reply}]
            forecast = max(1, count_tokens(reply, self.config.tokenizer.encoding))
            if ex.glean_check:
                messages = messages + [{"role": "user", "content": self.check_prompt}]
                answer = self._ask_yes_no(messages, chat, about, forecast)
                if not parse_yes_no(answer):
                    break
                messages = messages + [{"role": "assistant", "content": answer.strip()[:1] or "Y"}]
            messages = messages + [{"role": "user", "content": self.continue_prompt}]
            reply = chat.complete(messages, max_tokens=ex.max_output_tokens,
                                  cache_tag=self.graph_tag, kind="glean_continue", about=about,
                                  urgency=forecast)
            gleaned = parse_graph_records(reply, self.delimiters)
            if not gleaned.entities and not gleaned.relationships:
                records.malformed.extend(gleaned.malformed)
                break
            records.extend(gleaned)
        if self.config.claims.enabled:
            records.extend(self.extract_claims(text, records, chat))
        return records

    def _ask_yes_no(self, messages: list[dict], chat: Chat, about: dict, urgency: int) -> str:
        """One forced token where the endpoint takes logit_bias (the client learns when it
        does not, from the first rejection), else a short reply that is parsed."""
        if self.logit_bias is not None and chat.takes_logit_bias():
            return chat.complete(messages, max_tokens=1, logit_bias=self.logit_bias,
                                 cache_tag=self.graph_tag, kind="glean_check", about=about,
                                 urgency=urgency)
        return chat.complete(messages, max_tokens=5, cache_tag=self.graph_tag,
                             kind="glean_check", about=about, urgency=urgency)

    def extract_claims(self, text: str, graph: ParsedRecords, chat: Chat) -> ParsedRecords:
        names = sorted({e["title"] for e in graph.entities})
        entity_specs = ", ".join(names) if names else ", ".join(self.config.extraction.entity_types)
        prompt = render(self.claims_template, entity_specs=entity_specs, input_text=text)
        reply = chat.complete([{"role": "user", "content": prompt}],
                              max_tokens=self.config.claims.max_output_tokens,
                              cache_tag=self.claims_tag, kind="claims",
                              about=self._about(prompt, text, entity_types=False))
        return parse_claim_records(reply, self.delimiters)
