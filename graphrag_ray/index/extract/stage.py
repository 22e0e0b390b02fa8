"""The extraction stage: input files -> (workers) documents and chunks -> extraction ->
instances written to the work area, sharded for the merge. `extract_chunks` runs it;
`ExtractionWorker` is what Ray Data runs in its actor pool (threads locally).

One output row per input chunk, always: status "ok" with its records, or "failed" with the
reason, so no chunk disappears. Instance tables are flattened from these rows afterwards.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import block_rows, map_items, map_table, warm_up
from graphrag_ray.errors import LLMError
from graphrag_ray.index.chunks.passage_scans import scans_of, write_scans
from graphrag_ray.index.chunks.positions import seq_file_number
from graphrag_ray.index.chunks.read_and_chunk import Reading, read_and_chunk, scan_passages
from graphrag_ray.index.chunks.repeated_passages import RepeatedPassages
from graphrag_ray.index.carry_over import CarriedReading, carry_scans, reading_differently
from graphrag_ray.index.extract.carried_reading import carry_reading
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.extract.kept_extractions import (
    KEPT_EXTRACTIONS, KeptExtractions, keep_extractions, text_hash)
from graphrag_ray.index.extract.llm_extractor import GraphExtractor
from graphrag_ray.index.extract.nlp_extractor import document_words, extract_nlp
from graphrag_ray.index.extract.tuples import CLAIM_FIELDS, ParsedRecords, malformed_reason
from graphrag_ray.llm.accounting import USAGE_SCHEMA_FIELDS, usage_row
from graphrag_ray.index.pools import LLM_ACTOR_CPUS, llm_pool_shape
from graphrag_ray.llm.client import ChatClient, FatalLLMError, LLMServices
from graphrag_ray.llm.reply_check import UnusableReplies
from graphrag_ray.progress import ChunkProgress
from graphrag_ray.tokens import count_tokens

ENTITY_STRUCT = pa.struct([("title", pa.string()), ("type", pa.string()),
                           ("description", pa.string())])
RELATIONSHIP_STRUCT = pa.struct([("source", pa.string()), ("target", pa.string()),
                                 ("description", pa.string()), ("strength", pa.float64())])
CLAIM_STRUCT = pa.struct([(name, pa.string()) for name in CLAIM_FIELDS])


def _instance_schema(struct: pa.StructType) -> pa.Schema:
    return pa.schema(list(struct) + [("text_unit_id", pa.string()), ("seq", pa.int64())])


# Instances as spilled to storage: the record's fields, its chunk, and the chunk's position.
ENTITY_INSTANCE_SCHEMA = _instance_schema(ENTITY_STRUCT)
MENTION_SCHEMA = pa.schema([("title", pa.string()), ("text_unit_id", pa.string()),
                            ("seq", pa.int64())])
RELATIONSHIP_INSTANCE_SCHEMA = _instance_schema(RELATIONSHIP_STRUCT)
CLAIM_INSTANCE_SCHEMA = _instance_schema(CLAIM_STRUCT)

# What the driver receives per chunk: the extraction's status and usage, and the chunk's place.
CHUNK_STATUS_FIELDS = [("seq", pa.int64()), ("n_tokens", pa.int64()), ("document_id", pa.string())]

EXTRACTION_SCHEMA = pa.schema([
    ("text_unit_id", pa.string()),
    ("text_hash", pa.string()),
    # Taken from the previous version's kept extractions (an update): no call made.
    ("reused", pa.bool_()),
    ("status", pa.string()),
    ("error", pa.string()),
    ("entities", pa.list_(ENTITY_STRUCT)),
    ("relationships", pa.list_(RELATIONSHIP_STRUCT)),
    ("claims", pa.list_(CLAIM_STRUCT)),
    ("malformed_records", pa.int64()),
    ("malformed_reasons", pa.list_(pa.string())),  # one per malformed record
    *USAGE_SCHEMA_FIELDS,
])


class ExtractionWorker:
    """What every extraction method's worker does with a batch of chunks: one row per chunk
    (a repeated passage's own text unit is never extracted), its text hash, and the input
    columns besides id and text (the chunk's `seq`, size, document) passed through. Heavy
    setup once per actor in `__init__`; `extract_row` is the method's own part."""

    def __init__(self, config: GraphRagConfig, prompts: dict[str, str],
                 services: LLMServices | None = None, kept_url: str | None = None):
        self.config = config

    def extract_row(self, text_unit_id: str, text: str,
                    document_capitals: set[str] | None) -> dict:
        raise NotImplementedError

    def __call__(self, batch: pa.Table) -> pa.Table:
        n = batch.num_rows
        repeated = batch.column("repeated_passage").to_pylist() \
            if "repeated_passage" in batch.column_names else [False] * n
        capitals = batch.column("document_capitals").to_pylist() \
            if "document_capitals" in batch.column_names else [None] * n
        texts = batch.column("text").to_pylist()
        rows = [{**(_empty_row(text_unit_id, schema.REPEATED_PASSAGE) if skip
                    else self.extract_row(text_unit_id, text,
                                          None if names is None else set(names))),
                 "text_hash": text_hash(text)}
                for text_unit_id, text, skip, names in zip(
                    batch.column("id").to_pylist(), texts, repeated, capitals)]
        result = pa.Table.from_pylist(rows, schema=EXTRACTION_SCHEMA)
        for name in batch.column_names:
            if name not in ("id", "text", "document_capitals"):
                result = result.append_column(name, batch.column(name))
        return result


class NLPExtractionWorker(ExtractionWorker):
    """Offline: names and co-occurrences from the text (`nlp_extractor`), helped by what the
    chunk's whole document capitalises mid-sentence (the reader's `names_of`), which tells
    the names that open its sentences."""

    def extract_row(self, text_unit_id: str, text: str,
                    document_capitals: set[str] | None) -> dict:
        return _row(text_unit_id, extract_nlp(
            text, self.config.extraction.nlp_max_description_chars, document_capitals))


class LLMExtractionWorker(ExtractionWorker):
    """The paper's extraction (and gleanings) by the chat model. Thread-safe: batches are one
    chunk each, many at once per actor (`map_table`'s shape), so the calls in flight follow
    the rate budget, not the batches' structure."""

    def __init__(self, config: GraphRagConfig, prompts: dict[str, str],
                 services: LLMServices | None = None, kept_url: str | None = None):
        super().__init__(config, prompts, services, kept_url)
        # An update: the previous version's extractions, reused for chunks of the same text.
        self.kept = KeptExtractions(kept_url) if kept_url else None
        self.chat = (services or LLMServices()).chat(config.llm, stage="extract")
        # One extractor for the actor: what it learns of the endpoint (no logit_bias) holds
        # for every chunk.
        self.extractor = GraphExtractor(config, prompts)
        self.fatal: str | None = None

    def extract_row(self, text_unit_id: str, text: str,
                    document_capitals: set[str] | None) -> dict:
        kept = self.kept.get(text) if self.kept else None
        if kept is not None:
            return {"malformed_reasons": [], **kept, "text_unit_id": text_unit_id,
                    "status": "ok", "error": None, "reused": True, **usage_row(None)}
        if self.fatal:
            return _failed_row(text_unit_id, self.fatal)
        chat = self.chat.scoped()  # usage is counted per chunk
        try:
            records = self.extractor.extract(text, chat)
        except UnusableReplies as exc:  # the prompt's or the model's, not this chunk's:
            return _empty_row(text_unit_id, STOPPED, str(exc), chat)  # the build stops
        except FatalLLMError as exc:
            self.fatal = str(exc)  # Every further call would fail the same way: stop calling.
            return _failed_row(text_unit_id, str(exc), chat)
        except LLMError as exc:
            return _failed_row(text_unit_id, str(exc), chat)
        return _row(text_unit_id, records, chat)


def _row(text_unit_id: str, records: ParsedRecords, chat: ChatClient | None = None) -> dict:
    return {"text_unit_id": text_unit_id, "status": "ok", "error": None, "reused": False,
            "entities": records.entities, "relationships": records.relationships,
            "claims": records.claims, "malformed_records": len(records.malformed),
            "malformed_reasons": [malformed_reason(entry) for entry in records.malformed],
            **usage_row(chat.usage if chat else None)}


def _ledger_of(services: LLMServices, stage: str) -> Callable[[], dict] | None:
    """The provider's count of `stage`'s calls so far (the budget's ledger, calls settled)."""
    if services.limiter is None:
        return None
    return lambda: services.limiter.ledger(settle_s=0.0).get(stage, {})


# A chunk's status when its stage was stopped for unusable replies (`llm/reply_check`): the
# driver stops the build with the reason once the stage's rows are in.
STOPPED = "stopped"


def check_not_stopped(extraction: pa.Table) -> None:
    """Raises the reason a stage stopped (UnusableReplies) when a chunk says it did."""
    stopped = pc.equal(extraction.column("status"), STOPPED)
    if pc.any(stopped).as_py():
        raise UnusableReplies(extraction.filter(stopped).column("error")[0].as_py())


def _failed_row(text_unit_id: str, reason: str, chat: ChatClient | None = None) -> dict:
    return _empty_row(text_unit_id, "failed", reason, chat)


def _empty_row(text_unit_id: str, status: str, error: str | None = None,
               chat: ChatClient | None = None) -> dict:
    """A chunk with no records: failed, or a repeated passage's own text unit (never
    extracted: `schema.REPEATED_PASSAGE`)."""
    return {"text_unit_id": text_unit_id, "status": status, "error": error, "reused": False,
            "entities": [], "relationships": [], "claims": [], "malformed_records": 0,
            "malformed_reasons": [], **usage_row(chat.usage if chat else None)}


def flatten_instances(extraction: pa.Table, column: str,
                      seq: pa.Array | pa.ChunkedArray | None = None) -> pa.Table:
    """One row per extracted instance, tagged with the chunk it came from (and, given each
    row's `seq`, the chunk's position)."""
    lists = extraction.column(column).combine_chunks()
    values = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists)
    flat = (pa.Table.from_struct_array(values) if len(values)
            else pa.schema(list(lists.type.value_type)).empty_table())
    flat = flat.append_column("text_unit_id", pc.take(extraction.column("text_unit_id"), parents))
    if seq is not None:
        flat = flat.append_column("seq", pc.take(seq, parents))
    return flat


def spill_instances(extraction: pa.Table, work_url: str, shards: int,
                    kept_url: str | None = None) -> pa.Table:
    """Extraction rows (with `seq`) -> their instances partitioned and written to storage
    (`instance_shards`), and the rows themselves kept with the version (`kept_url`, LLM
    extraction); the rows come back without instances, so what reaches the driver is one
    small status row per chunk. Runs as its own stage, on batches larger than the LLM's."""
    from graphrag_ray.index.extract.instance_shards import piece_name, write_pieces
    from graphrag_ray.index.elements import partition_instances

    seq = extraction.column("seq")
    name = piece_name(extraction.column("text_unit_id").to_pylist())
    pieces = partition_instances(flatten_instances(extraction, "entities", seq),
                                 flatten_instances(extraction, "relationships", seq), shards)
    write_pieces(work_url, pieces, flatten_instances(extraction, "claims", seq), name)
    if kept_url:
        keep_extractions(extraction, kept_url, name)
    empty = pa.array([[]] * extraction.num_rows)
    for column in ("entities", "relationships", "claims"):
        index = extraction.schema.get_field_index(column)
        extraction = extraction.set_column(index, extraction.schema.field(index),
                                           empty.cast(extraction.schema.field(index).type))
    return extraction


# Input files per read task (documents and chunks are written by the readers).
FILES_PER_READ = 32
CHUNK_STATUS_SCHEMA = pa.schema(list(EXTRACTION_SCHEMA) + CHUNK_STATUS_FIELDS)


def find_repeated_passages(ctx: BuildContext, input_url: str, input_root: str,
                           files: list[str], numbers: np.ndarray,
                           carried: CarriedReading | None = None) -> RepeatedPassages | None:
    """A pass over the files (in tasks, `FILES_PER_READ` at a time) before extraction:
    the passages repeated across documents, with the manifest's figures for them. None
    when the corpus has fewer files than a passage must recur in (nothing can repeat).
    An update (`carried`) scans only the files it does not carry over, takes the others'
    scans from the previous version, and reads again the carried files whose documents the
    passages found now cut differently."""
    settings = ctx.config.repeated_passages
    skip = carried.carried_numbers() if carried is not None else set()
    indexed = [(n, path) for n, path in zip(numbers.tolist(), files) if n not in skip]
    batches = [indexed[i:i + FILES_PER_READ] for i in range(0, len(indexed), FILES_PER_READ)]
    with ThreadPoolExecutor(1, thread_name_prefix="carried-scans") as reading:
        carrying = warm_up(ctx.config.runtime, (lambda: reading.submit(
            carry_scans, ctx, carried)) if carried is not None else None)
        scanned_tables = map_items(
            scan_passages, [(batch, input_url, input_root, ctx.config.input, ctx.tokenizer,
                             settings.min_chars) for batch in batches], ctx.config.runtime,
            python_bound=True)
        scanned = [document for table in scanned_tables for document in scans_of(table)]
        kept, kept_tables = carrying.result() if carrying is not None else ([], [])
    write_scans(ctx.work_url, scanned_tables + kept_tables)
    if len(files) < settings.min_documents:  # (scanned all the same, for the next update)
        if carried is not None:
            carried.read_again(reading_differently(carried, kept, RepeatedPassages()))
        return None
    scans = sorted(scanned + [scan for _, scan in kept], key=lambda scan: scan[0])
    documents = [(position, passages) for position, passages, _ in scans]
    repeated = RepeatedPassages.find(documents, settings.min_documents, settings.min_share,
                                     [words for _, _, words in scans])
    if carried is not None:
        carried.read_again(reading_differently(carried, kept, repeated))
    tokens = {key: n for _, passages in documents for key, _, n in passages if key}
    content = set(repeated.content.values())
    boilerplate = {k: n for k, n in repeated.documents_with.items() if k not in content}
    ctx.figures.repeated_passages = {
        "passages": len(repeated.documents_with),
        "occurrences": sum(repeated.documents_with.values()),
        # Boilerplate: kept out of extraction everywhere (also its own text unit).
        "boilerplate_passages": len(boilerplate),
        "tokens_not_extracted": sum(tokens[k] * n for k, n in boilerplate.items()),
        # ... of which in documents other than the one keeping it as a text unit.
        "boilerplate_copies_tokens": sum(tokens[k] * (n - 1) for k, n in boilerplate.items()),
        # Repeated content (duplicated documents, quoted sections): extracted in its first
        # document, cut from the others (linked to the chunks that extracted it).
        "content_passages": len(content),
        "content_occurrences": sum(repeated.documents_with[k] for k in content),
        "content_tokens_extracted_once": sum(
            tokens[k] * (repeated.documents_with[k] - 1) for k in content),
        "variants": len(repeated.first),  # distinct texts (near-copies) of the passages
        # Openings shared by documents (a transcript's file name opening each of its parts)
        # and the documents they were cut from.
        "openings": len(repeated.openings),
        "documents_with_openings": sum(n for _, _, n in repeated.openings.values()),
        "documents_scanned": len(scanned),
        # An update: the unchanged files' scans, taken from the previous version.
        **({"documents_carried": len(kept)} if carried is not None else {})}
    return repeated


@dataclass(frozen=True)
class ExtractionMethod:
    """What differs between `extraction.method`s, said once: the worker, how its pool is
    shaped, how many chunks' instances are written together (one piece per shard: fewer,
    larger objects on storage; the progress bar moves a batch at a time, hence smaller
    batches for slow LLM work), whether the rows are kept for an update to reuse, and what
    the reader gives it of each whole document; the pipeline (`index/pipelines.py`) a build
    with it runs."""
    worker: type[ExtractionWorker]
    instance_batch_chunks: int
    calls_llm: bool
    pipeline: str
    names_of: Callable[[str], set[str]] | None = None

    def pool(self, ctx: BuildContext) -> dict:
        """`map_table`'s pool arguments: offline, a CPU per worker."""
        return {"num_cpus": 1.0}

    def services(self, services: LLMServices) -> LLMServices | None:
        """What the workers are given of the job's services: offline, none (they call none,
        and may be processes, where the services' rate budget and cache do not travel)."""
        return None

    def kept(self, url: str | None) -> str | None:
        """Where its extractions are kept for an update to reuse: offline ones are not
        (they cost nothing to redo)."""
        return None

    def calls_source(self, services: LLMServices) -> Callable[[], dict] | None:
        """What the progress bar counts calls from: offline, nothing."""
        return None


@dataclass(frozen=True)
class LLMExtractionMethod(ExtractionMethod):
    def pool(self, ctx: BuildContext) -> dict:
        """One chunk per batch (one call's worth at a time), as many at once as the budget
        can keep busy (a chunk's calls, extraction then gleaning, are sequential)."""
        tokens_per_call = count_tokens(ctx.prompts["extract_graph"], ctx.tokenizer) \
            + ctx.config.chunks.size
        return {"num_cpus": LLM_ACTOR_CPUS, "batch_size": 1,
                "shape": llm_pool_shape(ctx.config.llm, tokens_per_call)}

    def services(self, services: LLMServices) -> LLMServices | None:
        return services

    def kept(self, url: str | None) -> str | None:
        return url

    def calls_source(self, services: LLMServices) -> Callable[[], dict] | None:
        return _ledger_of(services, "extract")


EXTRACTION_METHODS = {
    "llm": LLMExtractionMethod(LLMExtractionWorker, instance_batch_chunks=64, calls_llm=True,
                               pipeline="standard"),
    "nlp": ExtractionMethod(NLPExtractionWorker, instance_batch_chunks=512, calls_llm=False,
                            pipeline="nlp", names_of=document_words),
}


@dataclass
class ExtractionPlan:
    """The files and how they are read and extracted: the same for a batch round's pass and
    the real run. `previous_kept_url`: an update's previous extractions, reused for chunks
    of the same text."""
    method: ExtractionMethod
    inputs: pa.Table  # file_index, path
    reading: Reading
    pool: dict  # `map_table`'s pool arguments
    previous_kept_url: str | None = None
    carried: CarriedReading | None = None  # an update: files not read again

    def worker_args(self, ctx: BuildContext, services: LLMServices) -> dict:
        """The worker's constructor arguments (`ExtractionMethod.services`)."""
        return {"config": ctx.config, "prompts": ctx.prompts,
                "services": self.method.services(services),
                "kept_url": self.previous_kept_url}


def plan_extraction(ctx: BuildContext, input_url: str, input_root: str, files: list[str],
                    numbers: np.ndarray, repeated: RepeatedPassages | None = None,
                    previous_kept_url: str | None = None,
                    carried: CarriedReading | None = None) -> ExtractionPlan:
    config = ctx.config
    method = EXTRACTION_METHODS[config.extraction.method]
    pool = method.pool(ctx)
    reading = Reading(input_url, input_root, config.input, config.chunks, ctx.tokenizer,
                      ctx.work_url,
                      block_rows(pool.get("batch_size", config.runtime.batch_size),
                                 pool.get("shape")),
                      boilerplate=config.repeated_passages.enabled, repeated=repeated,
                      min_passage_chars=config.repeated_passages.min_chars
                      if repeated is not None else 0,
                      names_of=method.names_of)
    skip = carried.carried_numbers() if carried is not None else set()
    to_read = [(n, path) for n, path in zip(numbers.tolist(), files) if n not in skip]
    inputs = pa.table({"file_index": pa.array([n for n, _ in to_read], pa.int64()),
                       "path": pa.array([path for _, path in to_read], pa.string())})
    return ExtractionPlan(method, inputs, reading, pool, method.kept(previous_kept_url),
                          carried)


class _BatchPass(LLMExtractionWorker):
    """A batch round's pass over the chunks: what the extraction asks and the cache cannot
    answer is deferred (the chunk stops there); only each chunk's status comes back."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        return super().__call__(batch).select(["text_unit_id", "status"])


_PASS_SCHEMA = pa.schema([("text_unit_id", pa.string()), ("status", pa.string())])


def extract_by_batch(ctx: BuildContext, plan: ExtractionPlan) -> LLMServices:
    """`llm.batch`: rounds of passes over the chunks (read and chunked as the real run reads
    them, into a scratch area) until a pass defers nothing. Returns the services the real
    run uses."""
    from graphrag_ray.index.batch_rounds import by_batch

    scratch_area = "_work/batch_pass"  # inside the staged version, removed after the rounds
    scratch = replace(plan.reading, work_url=ctx.staged.url_of(scratch_area))

    def run_pass(services: LLMServices) -> None:
        map_table(plan.inputs, _BatchPass, plan.worker_args(ctx, services),
                  ctx.config.runtime, output_schema=_PASS_SCHEMA, **plan.pool,
                  first=(read_and_chunk, {"reading": scratch}, FILES_PER_READ))

    services = by_batch(ctx, "extract", frozenset({"extract"}), run_pass)
    ctx.staged.remove(scratch_area)
    return services


def extract_chunks(ctx: BuildContext, plan: ExtractionPlan, shards: int,
                   services: LLMServices | None = None,
                   chunk_estimates: dict[int, int] | None = None) -> pa.Table:
    """Input files -> (workers) documents and chunks into the work area -> extraction ->
    instances into `shards` pieces per batch. Returns one status row per chunk, in chunk
    order; stops if every chunk failed. `services`: the context's, or those a batch pass
    returned; `chunk_estimates`: per file number, for the progress bar."""
    with ctx.stage("extract"), ThreadPoolExecutor(1, thread_name_prefix="carry") as carrying:
        # An update's carried reading is linked and renumbered (by the driver's threads,
        # mostly waiting on files) while the pool reads and extracts the files read now.
        pending = carrying.submit(carry_reading, ctx, plan.carried, plan.previous_kept_url) \
            if plan.carried is not None else None
        extraction = None if not plan.inputs.num_rows else map_table(
            plan.inputs, plan.method.worker, plan.worker_args(ctx, services or ctx.services),
            ctx.config.runtime, output_schema=CHUNK_STATUS_SCHEMA, **plan.pool,
            first=(read_and_chunk, {"reading": plan.reading}, FILES_PER_READ),
            then=(spill_instances, {
                "work_url": ctx.work_url, "shards": shards,
                "kept_url": plan.method.kept(ctx.staged.url_of(KEPT_EXTRACTIONS))},
                plan.method.instance_batch_chunks),
            progress=ChunkProgress(
                "extract", chunk_estimates, seq_file_number,
                calls_source=plan.method.calls_source(services or ctx.services),
                calls_per_chunk=1 + ctx.config.extraction.max_gleanings
                * (2 if ctx.config.extraction.glean_check else 1))
            if ctx.progress_bars and chunk_estimates else None)
        carried = pending.result() if pending is not None else None
        if carried is not None:
            ctx.progress(f"{plan.carried.carried()} unchanged files carried over "
                         f"({carried.num_rows} chunks); {plan.inputs.num_rows} to read")
        if extraction is None:
            extraction = carried if carried is not None else CHUNK_STATUS_SCHEMA.empty_table()
        elif carried is not None:
            extraction = pa.concat_tables([carried, extraction.cast(carried.schema)])
    # Workers return rows in completion order; chunk order makes every later stage
    # (description lists, prompts, hence cache keys) the same from run to run.
    extraction = extraction.sort_by("seq")
    failed = extraction.filter(pc.equal(extraction.column("status"), "failed"))
    if failed.num_rows:
        reasons = failed.column("error").to_pylist()
        ctx.progress(f"warning: {failed.num_rows} of {extraction.num_rows} chunks failed "
                     f"extraction; first reason: {reasons[0]}")
        if failed.num_rows == extraction.num_rows:
            raise LLMError(f"every chunk failed extraction: {reasons[0]}")
    return extraction
