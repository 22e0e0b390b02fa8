"""The manifest of an index version, typed: what a build wrote down about it, read by every
module that asks (the CLI's summary, `stats`, `GraphIndex`, the dry run's calibration, an
update's comparison).

Versioned: `manifest_version` says which shape a file has. A reader accepts every version up
to its own (fields a manifest lacks take their defaults: a manifest from before a field
existed reads as "not measured") and keeps sections it does not know, so a tool reading an
index is not broken by a section a later stage adds; a manifest of a later major version is
refused with a message, not misread. `format_version` is the tables' format, checked alike.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from graphrag_ray import schema
from graphrag_ray.errors import IndexFormatError

MANIFEST_VERSION = 1


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow")


class ExtractionFigures(_Section):
    chunks: int = 0
    chunk_tokens: int = 0
    failed_chunks: int = 0
    # Boilerplate kept as text units of its own and never extracted (a Gutenberg header and
    # licence, each passage repeated across documents once).
    boilerplate_chunks: int = 0
    boilerplate_tokens: int = 0
    # Text no extraction read, and its share of the corpus (`index/manifest._kept_out`).
    kept_out_tokens: int = 0
    kept_out_share: float = 0.0
    malformed_records: int = 0
    # What could not be used of the replies, by reason (`tuples.malformed_reason`).
    malformed_by_reason: dict[str, int] = {}


class StageUsage(_Section):
    """One stage's calls as the rate budget counted them (`llm.client.Usage`) and its cost."""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_hits: int = 0
    failed_calls: int = 0
    rate_limited: int = 0
    retries: int = 0
    cost_usd: float | None = None  # None: no price known for the model
    wall_s: float | None = None


class LLMUsage(_Section):
    model: str | None = None
    stages: dict[str, StageUsage] = {}  # `extract`, ..., and `<stage>_batch` by batch
    total: StageUsage = StageUsage()
    # What earlier runs of this index paid and never published (stopped, killed, failed),
    # counted here (`index/run_ledger`): runs, stages, total with its cost.
    earlier_runs: dict[str, Any] | None = None
    # The budgets' own figures (utilization, timeline), when a budget ran.
    rate_limiter: dict[str, Any] | None = None
    embeddings_rate_limiter: dict[str, Any] | None = None


class EmbeddingsFacts(_Section):
    method: str | None = None
    model: str | None = None
    dimensions: int | None = None
    note: str | None = None  # why `auto` chose the method it did, when not the model


class PipelineRun(_Section):
    name: str | None = None  # `index/pipelines.PIPELINES`
    stages: list[str] = []  # the stages that ran, in order


class Manifest(_Section):
    manifest_version: int = MANIFEST_VERSION  # read as 0 from files written before it
    format_version: int = schema.INDEX_FORMAT_VERSION
    version: str | None = None  # the version's id (set when published)
    created_at: str | None = None
    input: str | None = None
    pipeline: PipelineRun = PipelineRun()
    config: dict[str, Any] = {}  # the build's settings, secrets masked (`public_dict`)
    prompt_versions: dict[str, str] = {}
    # What an update compares (`index/update.py`): this version's settings, and its
    # extraction settings.
    settings_fingerprint: str | None = None
    extraction_fingerprint: str | None = None
    tables: dict[str, int] = {}  # rows per table
    embeddings: EmbeddingsFacts = EmbeddingsFacts()
    # Per embeddings table with an approximate index: its Lance dataset (under the index's
    # `vectors/`) and the version of it this index version searches (`storage/lance_vectors`).
    vector_stores: dict[str, dict[str, Any]] = {}
    levels: list[int] = []
    communities_per_level: dict[str, int] = {}
    loose_community_entities: int = 0
    merge: dict[str, Any] | None = None
    leiden: dict[str, Any] = {}
    # Sections of stages that run only when enabled (None: not run).
    repeated_passages: dict[str, Any] | None = None
    resolution: dict[str, Any] | None = None
    # The lexical index of the text units (`storage/lexical_index.py`): segments, units,
    # postings, bytes, seconds; None: a version made before it (queries do without).
    lexical: dict[str, Any] | None = None
    batch: dict[str, Any] | None = None  # `phases`: per phase, the Batch API's rounds
    # Figures of stages with no section of their own, by stage name (`BuildFigures.of_stage`).
    stage_figures: dict[str, dict[str, Any]] = {}
    update: dict[str, Any] | None = None  # an update: what it reused and changed
    # An adopted index (`index/adopt/`): whose output it was, what of its settings mapped.
    adopted_from: dict[str, Any] | None = None
    # Whose community partition an update keeps rather than refines (set by an adoption,
    # carried by its updates: `graph/continuity`); None: our Leiden's.
    communities_kept_from: str | None = None
    extraction: ExtractionFigures = ExtractionFigures()
    llm_usage: LLMUsage = LLMUsage()
    summaries: dict[str, Any] = {}
    reports_by_generation: dict[str, int] = {}
    input_files: dict[str, int] = {}
    skipped_inputs: list[dict[str, Any]] = []
    input_warnings: list[str] = []
    timings_s: dict[str, float] = {}
    stage_starts_s: dict[str, float] = {}
    # The driver holds the graph for Leiden: its peak is what sizes the head node.
    driver_peak_rss_mb: float | None = None
    driver_rss_mb_by_stage: dict[str, dict[str, float]] = {}

    @classmethod
    def read(cls, data: dict[str, Any], where: str) -> "Manifest":
        """`data` as read from the manifest file at `where` (named in the error)."""
        for key, newest in (("manifest_version", MANIFEST_VERSION),
                            ("format_version", schema.INDEX_FORMAT_VERSION)):
            if int(data.get(key) or 0) > newest:
                raise IndexFormatError(
                    f"{where} was written by a newer graphrag-ray ({key} {data[key]}; this "
                    f"one reads up to {newest}): upgrade graphrag-ray to read it")
        return cls.model_validate({"manifest_version": 0, **data})

    def as_json(self) -> dict[str, Any]:
        """The file's content: a section a build did not run is absent (not null), as it was
        before the model; inside sections, null stays null (`cost_usd`: no price known)."""
        return {key: value for key, value in self.model_dump(mode="json").items()
                if value is not None}
