"""The extraction stage: input files -> (workers) documents and chunks -> extraction ->
instances written to the work area, sharded for the merge. `extract_chunks` runs it;
`ExtractionWorker` is what Ray Data runs in its actor pool (threads locally).

One output row per input chunk, always: status "ok" with its records, or "failed" with the
reason, so no chunk disappears. Instance tables are flattened from these rows afterwards.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import map_items, map_table
from graphrag_ray.errors import LLMError
from graphrag_ray.index.chunks.read_and_chunk import read_and_chunk, scan_passages, seq_file_index
from graphrag_ray.index.chunks.repeated_passages import RepeatedPassages
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.extract.kept_extractions import (
    KEPT_EXTRACTIONS, KeptExtractions, keep_extractions, text_hash)
from graphrag_ray.index.extract.llm_extractor import GraphExtractor
from graphrag_ray.index.extract.nlp_extractor import extract_nlp, midsentence_capitals
from graphrag_ray.index.extract.tuples import CLAIM_FIELDS, ParsedRecords, malformed_reason
from graphrag_ray.llm.accounting import USAGE_SCHEMA_FIELDS, usage_row
from graphrag_ray.index.pools import LLM_ACTOR_CPUS, llm_pool_shape
from graphrag_ray.llm.client import ChatClient, FatalLLMError, LLMServices
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
    """Heavy setup once per actor (client, prompts); `__call__` handles one batch. Input
    columns besides id and text (the chunk's `seq`, size, document) are passed through.
    Thread-safe: LLM batches are one chunk each, many at once per actor (`map_table`'s
    shape), so the calls in flight follow the rate budget, not the batches' structure."""

    def __init__(self, config: GraphRagConfig, prompts: dict[str, str],
                 services: LLMServices | None = None, kept_url: str | None = None):
        self.config = config
        self.llm_mode = config.extraction.method == "llm"
        # An update: the previous version's extractions, reused for chunks of the same text.
        self.kept = KeptExtractions(kept_url) if kept_url and self.llm_mode else None
        self.prompts = prompts
        self.chat = ((services or LLMServices()).chat(config.llm, stage="extract")
                     if self.llm_mode else None)
        # One extractor for the actor: what it learns of the endpoint (no logit_bias) holds
        # for every chunk.
        self.extractor = GraphExtractor(config, prompts) if self.llm_mode else None
        self.fatal: str | None = None

    def __call__(self, batch: pa.Table) -> pa.Table:
        repeated = batch.column("repeated_passage").to_pylist() \
            if "repeated_passage" in batch.column_names else [False] * batch.num_rows
        texts = batch.column("text").to_pylist()
        if self.llm_mode or "document_capitals" not in batch.column_names:
            extract = self._llm_row if self.llm_mode else self._nlp_row
        else:
            # What the chunk's whole document capitalises mid-sentence (the reader's
            # `names_of`) tells the names that open its sentences.
            capitals = dict(zip(batch.column("id").to_pylist(),
                                batch.column("document_capitals").to_pylist()))

            def extract(text_unit_id: str, text: str) -> dict:
                return self._nlp_row(text_unit_id, text, set(capitals[text_unit_id]))
        rows = [{**(_empty_row(text_unit_id, schema.REPEATED_PASSAGE) if skip
                    else extract(text_unit_id, text)), "text_hash": text_hash(text)}
                for text_unit_id, text, skip in zip(batch.column("id").to_pylist(), texts,
                                                    repeated)]
        result = pa.Table.from_pylist(rows, schema=EXTRACTION_SCHEMA)
        for name in batch.column_names:
            if name not in ("id", "text", "document_capitals"):
                result = result.append_column(name, batch.column(name))
        return result

    def _nlp_row(self, text_unit_id: str, text: str,
                 document_capitals: set[str] | None = None) -> dict:
        records = extract_nlp(text, self.config.extraction.nlp_max_description_chars,
                              document_capitals)
        return _row(text_unit_id, records)

    def _llm_row(self, text_unit_id: str, text: str) -> dict:
        kept = self.kept.get(text) if self.kept else None
        if kept is not None:
            return {"malformed_reasons": [], **kept, "text_unit_id": text_unit_id,
                    "status": "ok", "error": None, "reused": True, **usage_row(None)}
        if self.fatal:
            return _failed_row(text_unit_id, self.fatal)
        chat = self.chat.scoped()  # usage is counted per chunk
        try:
            records = self.extractor.extract(text, chat)
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
    from graphrag_ray.index.graph.merge import partition_instances

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
# Chunks whose instances are written together, one piece per shard: fewer, larger objects on
# storage. The progress bar moves a batch at a time, hence smaller batches for slow LLM work.
INSTANCE_BATCH_CHUNKS = {"llm": 64, "nlp": 512}


def find_repeated_passages(ctx: BuildContext, input_url: str, input_root: str,
                           files: list[str]) -> RepeatedPassages:
    """A pass over the files (in tasks, `FILES_PER_READ` at a time) before extraction:
    the passages repeated across documents, with the manifest's figures for them."""
    settings = ctx.config.repeated_passages
    batches = [list(enumerate(files))[i:i + FILES_PER_READ]
               for i in range(0, len(files), FILES_PER_READ)]
    scanned = map_items(scan_passages, [(batch, input_url, input_root, ctx.config.input,
                                         ctx.tokenizer, settings.min_chars)
                                        for batch in batches], ctx.config.runtime)
    documents = [(position, passages) for batch in scanned for position, passages, _ in batch]
    repeated = RepeatedPassages.find(documents, settings.min_documents, settings.min_share,
                                     [words for batch in scanned for _, _, words in batch])
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
        "documents_scanned": len(documents)}
    return repeated


class _BatchPass(ExtractionWorker):
    """A batch round's pass over the chunks: what the extraction asks and the cache cannot
    answer is deferred (the chunk stops there); only each chunk's status comes back."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        return super().__call__(batch).select(["text_unit_id", "status"])


_PASS_SCHEMA = pa.schema([("text_unit_id", pa.string()), ("status", pa.string())])


def extract_by_batch(ctx: BuildContext, inputs: pa.Table, reading: dict, batching: dict,
                     previous_kept_url: str | None) -> LLMServices:
    """`llm.batch`: rounds of passes over the chunks (read and chunked as the real run reads
    them, into a scratch area) until a pass defers nothing. Returns the services the real
    run uses."""
    from graphrag_ray.index.batch_rounds import by_batch

    scratch_area = "_work/batch_pass"  # inside the staged version, removed after the rounds
    scratch = {**reading, "work_url": ctx.staged.url_of(scratch_area)}

    def run_pass(services: LLMServices) -> None:
        map_table(inputs, _BatchPass, {"config": ctx.config, "prompts": ctx.prompts,
                                       "services": services, "kept_url": previous_kept_url},
                  ctx.config.runtime, output_schema=_PASS_SCHEMA, **batching,
                  first=(read_and_chunk, scratch, FILES_PER_READ))

    services = by_batch(ctx, "extract", frozenset({"extract"}), run_pass)
    ctx.staged.remove(scratch_area)
    return services


def extract_chunks(ctx: BuildContext, input_url: str, input_root: str, files: list[str],
                   chunk_estimates: list[int], shards: int,
                   previous_kept_url: str | None = None) -> pa.Table:
    """Input files -> (workers) documents and chunks into the work area -> extraction ->
    instances into `shards` pieces per batch. Returns one status row per chunk, in chunk
    order; stops if every chunk failed. `chunk_estimates`: per file, for the progress bar.
    `previous_kept_url`: an update's previous extractions, reused for chunks of the same
    text."""
    config = ctx.config
    llm = config.extraction.method == "llm"
    if llm:
        # One chunk per batch (one call's worth at a time), as many at once as the budget
        # can keep busy: a chunk's calls (extraction, gleaning) are sequential.
        tokens_per_call = count_tokens(ctx.prompts["extract_graph"], ctx.tokenizer) \
            + config.chunks.size
        batching = {"num_cpus": LLM_ACTOR_CPUS, "batch_size": 1,
                    "shape": llm_pool_shape(config.llm, tokens_per_call)}
    else:
        batching = {"num_cpus": 1.0}
    inputs = pa.table({"file_index": pa.array(range(len(files)), pa.int64()),
                       "path": pa.array(files, pa.string())})
    reading = {"input_url": input_url, "input_root": input_root, "input_config": config.input,
               "chunks_config": config.chunks, "tokenizer": ctx.tokenizer,
               "work_url": ctx.work_url,
               "block_rows": batching.get("batch_size", config.runtime.batch_size)}
    if not llm:
        reading["names_of"] = midsentence_capitals
    if config.repeated_passages.enabled:
        reading["boilerplate"] = True
        if len(files) >= config.repeated_passages.min_documents:
            reading["repeated"] = find_repeated_passages(ctx, input_url, input_root, files)
            reading["min_passage_chars"] = config.repeated_passages.min_chars
    services = ctx.services
    if llm and config.llm.batch:
        services = extract_by_batch(ctx, inputs, reading, batching, previous_kept_url)
    extraction = map_table(inputs, ExtractionWorker,
                           {"config": config, "prompts": ctx.prompts, "services": services,
                            "kept_url": previous_kept_url},
                           config.runtime, output_schema=CHUNK_STATUS_SCHEMA, **batching,
                           first=(read_and_chunk, reading, FILES_PER_READ),
                           then=(spill_instances, {
                               "work_url": ctx.work_url, "shards": shards,
                               "kept_url": ctx.staged.url_of(KEPT_EXTRACTIONS) if llm else None},
                                 INSTANCE_BATCH_CHUNKS[config.extraction.method]),
                           progress=ChunkProgress("extract", chunk_estimates, seq_file_index)
                           if ctx.progress_bars else None)
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
