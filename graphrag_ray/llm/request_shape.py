"""Which optional parameters a chat endpoint accepts, so every request is one it will take.

OpenAI's reasoning models (the o-series, the gpt-5 family) take `max_completion_tokens`
instead of `max_tokens`, only the default temperature, and no `logit_bias`; Azure deployments
of them carry any name; local servers differ again. The shape starts from the model's family
(or what the config forces) and learns from a rejection: a 400 that names one of these
parameters, or any 400 to a request that carried `logit_bias` (servers word that one every
way), changes the shape and the request is sent again. What one worker learns goes to the
job's rate budget, which hands it out with every later lease (`Lease.shape`): every worker
of the job sends the new shape from its next call on, and the manifest records it.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, replace
from typing import Callable, TypeVar

from graphrag_ray.config import LLMConfig

log = logging.getLogger(__name__)
T = TypeVar("T")

# Model names of OpenAI's reasoning families, as OpenAI and Azure name them.
_REASONING_MODEL = re.compile(r"^(?:.*/)?(?:o\d(?:-|$)|o\d-mini|gpt-5)", re.IGNORECASE)


# OpenAI chat models whose tokenizer is cl100k_base, and those on o200k_base.
_CL100K_MODEL = re.compile(r"^(?:.*/)?gpt-(?:3\.5|4(?:-|$))", re.IGNORECASE)
_O200K_MODEL = re.compile(r"^(?:.*/)?(?:gpt-4o|gpt-4\.\d|chatgpt-4o)", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    return bool(_REASONING_MODEL.match(model.strip()))


def model_encoding(model: str) -> str | None:
    """The tiktoken encoding of an OpenAI chat model, when we know it and can load it
    offline; None for any other model (a local server's, an Azure deployment's own name)."""
    from graphrag_ray.tokens import encoding_available

    name = model.strip()
    if _CL100K_MODEL.match(name):
        return "cl100k_base"
    if _O200K_MODEL.match(name) and encoding_available("o200k_base"):
        return "o200k_base"
    return None


def wire_logit_bias(logit_bias: dict[int, int]) -> dict[str, int]:
    """Token ids as JSON object keys, as every OpenAI-compatible server takes them."""
    return {str(token): bias for token, bias in logit_bias.items()}


@dataclass(frozen=True)
class RequestShape:
    limit_parameter: str  # "max_tokens" or "max_completion_tokens"
    temperature: bool  # send the configured temperature
    logit_bias: bool  # the endpoint takes logit_bias
    # Tokens added to every output limit: a reasoning model spends its limit on hidden
    # reasoning first, and a reply cut to the visible length would come back empty.
    reasoning_allowance: int
    # The allowance once the endpoint turns out to serve a reasoning model (it asks for
    # max_completion_tokens) under a name that did not say so.
    allowance_if_reasoning: int = 0
    # How many rejections taught this shape: of two, the one that learnt more is newer.
    generation: int = 0

    def wire_parameters(self, config: LLMConfig, max_tokens: int,
                        logit_bias: dict[int, int] | None) -> dict:
        """The request's optional parameters as this endpoint takes them."""
        params: dict = {self.limit_parameter: max_tokens + self.reasoning_allowance}
        if self.temperature:
            params["temperature"] = config.temperature
        if logit_bias and self.logit_bias:
            params["logit_bias"] = wire_logit_bias(logit_bias)
        if config.reasoning_effort:
            params["reasoning_effort"] = config.reasoning_effort
        return params

    def after_rejection(self, message: str, param: str | None, sent: dict) -> "RequestShape | None":
        """The shape to try after a 400 saying `message` about `param` to a request with
        parameters `sent`; None when no parameter of ours is to blame."""
        named = f"{param or ''} {message}".lower()
        learnt = self.generation + 1
        if "max_tokens" in sent and ("max_tokens" in (param or "")
                                     or "max_completion_tokens" in named):
            return replace(self, limit_parameter="max_completion_tokens", generation=learnt,
                           reasoning_allowance=max(self.reasoning_allowance,
                                                   self.allowance_if_reasoning))
        if "max_completion_tokens" in sent and "max_completion_tokens" in named:
            return replace(self, limit_parameter="max_tokens", generation=learnt)
        if "temperature" in sent and "temperature" in named:
            return replace(self, temperature=False, generation=learnt)
        if "logit_bias" in sent:
            return replace(self, logit_bias=False, generation=learnt)
        return None


def initial_shape(config: LLMConfig) -> RequestShape:
    """What the config forces, else what the model's family takes."""
    reasoning = is_reasoning_model(config.model)
    limit = config.max_tokens_parameter
    if limit == "auto":
        limit = "max_completion_tokens" if reasoning else "max_tokens"
    temperature = config.send_temperature
    if temperature is None:
        temperature = not reasoning
    logit_bias = config.logit_bias
    if logit_bias is None:  # only where its token ids mean what we think
        logit_bias = not reasoning and model_encoding(config.model) is not None
    forced = config.reasoning_allowance_tokens
    if_reasoning = _DEFAULT_REASONING_ALLOWANCE if forced is None else forced
    allowance = if_reasoning if reasoning else (forced or 0)
    return RequestShape(limit, temperature, logit_bias, allowance, if_reasoning)


_DEFAULT_REASONING_ALLOWANCE = 4096

# What this process has learned per endpoint and model, module-level on purpose: every client
# of the same endpoint in the process (a worker's threads, the stages' clients) must use one
# shape, and what one learns reaches other processes through the rate budget's leases.
_shapes: dict[tuple, RequestShape] = {}
# Parameters a request has been answered with, per endpoint and model (`send_shaped`).
_confirmed: dict[tuple, set[str]] = {}
# (endpoint and model, parameters not yet confirmed) -> set once the first request sending
# them has its answer.
_first_answers: dict[tuple, threading.Event] = {}
FIRST_ANSWER_WAIT_S = 1.0
_shapes_lock = threading.Lock()


def _key(config: LLMConfig) -> tuple:
    return (config.api_base, config.model, config.max_tokens_parameter, config.send_temperature,
            config.logit_bias, config.reasoning_allowance_tokens)


def _ours(config: LLMConfig) -> RequestShape:
    """This process's shape, made on first use only (the caller holds `_shapes_lock`): every
    request asks for it, and the initial shape looks at the tokenizers."""
    shape = _shapes.get(_key(config))
    if shape is None:
        shape = _shapes[_key(config)] = initial_shape(config)
    return shape


def shape_for(config: LLMConfig) -> RequestShape:
    """This process's shape for the endpoint and model."""
    with _shapes_lock:
        return _ours(config)


def learn(config: LLMConfig, new: RequestShape, message: str) -> None:
    """Remember `new` for this process, unless a newer shape is known already."""
    with _shapes_lock:
        ours = _ours(config)
        if new.generation > ours.generation:
            log.warning("%s (model %s) rejected a request parameter (%s): sending %s from now "
                        "on", config.api_base, config.model, message[:200], describe(new))
            _shapes[_key(config)] = new


def adopt(config: LLMConfig, shape: RequestShape) -> RequestShape:
    """The newer of this process's shape and `shape` (what another worker of the job learnt;
    it came with a lease), kept for this process."""
    with _shapes_lock:
        ours = _ours(config)
        if shape.generation > ours.generation:
            _shapes[_key(config)] = ours = shape
        return ours


def send_shaped(config: LLMConfig, prepare: Callable[[], tuple[dict, Callable[[], T]]],
                learn_from: Callable[[Exception], object] | None = None) -> T:
    """`prepare()` gives a request's optional parameters and the function sending it. The
    first request to send parameters no answer has confirmed yet leads: the others that
    would send them wait for its answer, up to `FIRST_ANSWER_WAIT_S`, then are prepared
    again (it may have taught a new shape, whose first request leads in turn). A pool's
    threads starting at once then do not all collect the same rejections, and an accepted
    shape costs them at most that wait (a rejection comes back at once; a long answer is
    not waited for). Parameters answered are confirmed. `learn_from(exc)`: what a failed
    request teaches, learnt before the waiting requests are prepared again (learnt after,
    one of them could lead with the rejected shape once more)."""
    key = _key(config)
    while True:
        sent, send = prepare()
        with _shapes_lock:
            new = frozenset(set(sent) - _confirmed.setdefault(key, set()))
            first = _first_answers.get((key, new)) if new else None
            leading = bool(new) and first is None
            if leading:
                first = _first_answers[(key, new)] = threading.Event()
        if not new or leading:
            break
        if not first.wait(FIRST_ANSWER_WAIT_S):
            break  # a long answer: not waited for
    try:
        result = send()
        with _shapes_lock:
            _confirmed[key] |= set(sent)
    except Exception as exc:
        if leading and learn_from is not None:
            learn_from(exc)
        raise
    finally:
        if leading:
            with _shapes_lock:
                del _first_answers[(key, new)]  # answered or failed: the next one leads
            first.set()
    return result


def describe(shape: RequestShape) -> str:
    parts = [shape.limit_parameter,
             "temperature" if shape.temperature else "no temperature",
             "logit_bias" if shape.logit_bias else "no logit_bias"]
    if shape.reasoning_allowance:
        parts.append(f"+{shape.reasoning_allowance} reasoning tokens")
    return ", ".join(parts)
