"""OpenAI chat completions over the query methods: what a chat client sends becomes a
method, a question, its history and options; what the method returns becomes a completion
(or a stream of chunks) that any OpenAI client reads unchanged.

The model names the method (`graphrag-global`, `graphrag-local`, ... one per registered
method); the last user message is the question, the turns before it the history; a
method's own options (`level`, `dynamic`, `budget`) and `response_type` ride in the body
beside the standard fields (the `openai` client's `extra_body`). The answer's sources,
context tokens and the version it came from travel in a `graphrag` field beside the choices,
which OpenAI clients keep and ignore.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from graphrag_ray.errors import GraphRagError
from graphrag_ray.query.methods import QUERY_METHODS
from graphrag_ray.query.results import SearchResult

MODEL_PREFIX = "graphrag-"
# Options passed to the method beside its own (QueryMethod.options) and `history`.
COMMON_OPTIONS = ("response_type",)


class RequestError(GraphRagError):
    """A request the service refuses: an HTTP status, an OpenAI error type, a message."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.kind, self.param, self.code = status, kind, param, code


def model_names() -> list[str]:
    return [MODEL_PREFIX + name for name in QUERY_METHODS]


def models_listing(created: int) -> dict:
    return {"object": "list", "data": [
        {"id": name, "object": "model", "created": created, "owned_by": "graphrag-ray",
         "description": QUERY_METHODS[name.removeprefix(MODEL_PREFIX)].help}
        for name in model_names()]}


def method_of(model) -> str:
    """`graphrag-global` (or plain `global`) -> `global`."""
    if not isinstance(model, str) or not model:
        raise RequestError(400, "`model` is required: one of " + ", ".join(model_names()),
                           param="model")
    method = model.removeprefix(MODEL_PREFIX)
    if method not in QUERY_METHODS:
        raise RequestError(404, f"the model {model!r} does not exist; the models are the "
                           "query methods: " + ", ".join(model_names()),
                           param="model", code="model_not_found")
    return method


def _text(content) -> str:
    """A message's content: a string, or OpenAI's list of parts (text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content
                       if isinstance(part, dict) and part.get("type") == "text")
    if content is None:
        return ""
    raise RequestError(400, "a message's content must be a string or a list of parts",
                       param="messages")


@dataclass
class QueryRequest:
    method: str
    question: str
    history: list[dict] = field(default_factory=list)
    options: dict = field(default_factory=dict)
    stream: bool = False
    include_usage: bool = False


def method_options(method: str, body: dict) -> dict:
    """The options in `body` that `method` takes; one it does not take is refused (a
    silently ignored `level` would answer another question than the one asked)."""
    known = QUERY_METHODS[method]
    options = {}
    for option in {o.name for m in QUERY_METHODS.values() for o in m.options} | set(COMMON_OPTIONS):
        if body.get(option) is None:
            continue
        if option not in COMMON_OPTIONS and not known.takes(option):
            takers = [m.name for m in QUERY_METHODS.values() if m.takes(option)]
            raise RequestError(400, f"`{option}` applies to {' or '.join(takers)} only",
                               param=option)
        value = body[option]
        declared = next((o for o in known.options if o.name == option), None)
        kind = declared.kind if declared else str
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise RequestError(400, f"`{option}` must be an integer", param=option)
        if kind is bool and not isinstance(value, bool):
            raise RequestError(400, f"`{option}` must be true or false", param=option)
        if kind is str and not isinstance(value, str):
            raise RequestError(400, f"`{option}` must be a string", param=option)
        options[option] = value
    return options


def parse_chat(body: dict) -> QueryRequest:
    if not isinstance(body, dict):
        raise RequestError(400, "the body must be a JSON object")
    method = method_of(body.get("model"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "`messages` must be a non-empty list", param="messages")
    turns = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in (
                "system", "developer", "user", "assistant", "tool"):
            raise RequestError(400, "each message needs a role (system, user, assistant)",
                               param="messages")
        turns.append({"role": message["role"], "content": _text(message.get("content"))})
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=None)
    if last_user is None or not turns[last_user]["content"].strip():
        raise RequestError(400, "the messages hold no question: the last user message is "
                           "the question", param="messages")
    # The conversation before the question, as the methods' history takes it; system
    # prompts are the service's (a method's prompt is its own), tool turns have no place.
    history = [t for t in turns[:last_user] if t["role"] in ("user", "assistant")]
    stream_options = body.get("stream_options") or {}
    return QueryRequest(method, turns[last_user]["content"], history,
                        method_options(method, body), stream=bool(body.get("stream")),
                        include_usage=bool(isinstance(stream_options, dict)
                                           and stream_options.get("include_usage")))


def parse_query(body: dict) -> QueryRequest:
    """`POST /v1/query`: {"question", "method", "history"?, options...}."""
    if not isinstance(body, dict):
        raise RequestError(400, "the body must be a JSON object")
    question = body.get("question")
    if not isinstance(question, str) or not question.strip():
        raise RequestError(400, "`question` must be a non-empty string", param="question")
    method = method_of(body.get("method", "global"))
    history = body.get("history") or []
    if not isinstance(history, list) or not all(
            isinstance(t, dict) and isinstance(t.get("content"), str) for t in history):
        raise RequestError(400, '`history` must be a list of {"role", "content"} turns',
                           param="history")
    return QueryRequest(method, question, history, method_options(method, body))


def usage_of(result: SearchResult) -> dict:
    """OpenAI's usage: the LLM tokens the answer cost (every call the method made)."""
    prompt, completion = result.usage.prompt_tokens, result.usage.completion_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": result.usage.cached_tokens}}


def completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def fingerprint(version: str | None) -> str:
    return f"graphrag-ray:{version}"


def extras(result: SearchResult, version: str | None) -> dict:
    return {"version": version, "method": result.method, "sources": result.sources.as_dict(),
            "context_tokens": result.context_tokens, "llm_calls": result.llm_calls,
            "notes": result.notes, "failures": result.failures}


def completion(request: QueryRequest, result: SearchResult, version: str | None,
               ident: str, created: int | None = None) -> dict:
    return {"id": ident, "object": "chat.completion", "created": created or int(time.time()),
            "model": MODEL_PREFIX + request.method,
            "system_fingerprint": fingerprint(version),
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": result.answer}}],
            "usage": usage_of(result), "graphrag": extras(result, version)}


def chunk(request: QueryRequest, ident: str, created: int, version: str | None, *,
          delta: dict | None = None, finish: str | None = None, usage: dict | None = None,
          graphrag: dict | None = None) -> dict:
    """One `chat.completion.chunk`: a delta, the closing one (`finish`), or OpenAI's
    usage-only chunk (no choices) that `stream_options.include_usage` asks for."""
    body = {"id": ident, "object": "chat.completion.chunk", "created": created,
            "model": MODEL_PREFIX + request.method, "system_fingerprint": fingerprint(version),
            "choices": [] if usage is not None else [
                {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    if graphrag is not None:
        body["graphrag"] = graphrag
    return body


def error_body(message: str, kind: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def question_too_long(question: str, limit: int) -> str | None:
    """What is wrong with a question longer than `query.max_question_chars`, or None."""
    if len(question) <= limit:
        return None
    return (f"the question has {len(question):,} characters; the limit is {limit:,} "
            "(query.max_question_chars)")


def no_answer(result: SearchResult) -> str | None:
    """Why a search came back without an answer (its LLM failures), or None."""
    if result.answer.strip():
        return None
    reason = "; ".join(f[:300] for f in result.failures[:3])
    return f"the {result.method} search got no usable reply from the LLM" + (
        f": {reason}" if reason else "")
