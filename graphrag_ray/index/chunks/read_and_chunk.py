"""The first stage, run by workers: input files -> documents and chunks, so the corpus text
never has to pass through the driver.

A batch of consecutive files is read and chunked; its documents and chunks are written to the
build's work area, named by the batch's first file (`_work/documents/files-N.parquet`,
`_work/chunks/files-N.parquet`, `_work/inputs/files-N.json` for the files' fingerprints,
skipped files, decoding warnings and the files mostly kept out as boilerplate, and
`_work/shared_content/files-N.parquet` for repeated content cut from a document), and the
chunks flow on to extraction. `seq` (`positions`) orders chunks across the corpus: file,
then document, then window.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Iterator

import fsspec
import pyarrow as pa

from graphrag_ray.config import ChunksConfig, InputConfig
from graphrag_ray.index.chunks.chunking import chunk_documents, chunk_id
from graphrag_ray.index.chunks.passage_scans import scan_table
from graphrag_ray.index.chunks.positions import chunk_seq
from graphrag_ray.index.chunks.repeated_passages import (
    RepeatedPassages, document_passages, framed_boilerplate, opening_words, split_repeated)
from graphrag_ray.input.loader import load_file
from graphrag_ray.storage.atomic import write_atomically
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet
from graphrag_ray.tokens import count_tokens

# `file_chunks`: how many chunks the chunk's file made (progress corrects its estimate by it).
# `repeated_passage`: a passage repeated across documents, homed here (never extracted).
CHUNK_SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()), ("n_tokens", pa.int64()),
                          ("document_id", pa.string()), ("seq", pa.int64()),
                          ("file_chunks", pa.int64()), ("repeated_passage", pa.bool_())])


# Repeated content (`repeated_passages.RepeatedPassages.content`): per passage, the chunks of
# its first document that extracted it (`chunk_id`) and the documents it was cut from
# (`chunk_id` null). The tables writer links each such document to those chunks.
SHARED_CONTENT = "shared_content"
SHARED_SCHEMA = pa.schema([("passage", pa.string()), ("document_id", pa.string()),
                           ("chunk_id", pa.string())])
KEPT_OUT_WARNING = 0.2  # a file with more of its text kept out of extraction is named


def _content_chunks(units: pa.Table, kept_content: dict[str, list[tuple[str, int, int]]]
                    ) -> list[tuple[str, str, str]]:
    """(passage, document, chunk) for each chunk whose window holds part of a repeated
    content passage its document is the first home of (`kept_content`: the passages'
    characters in the document's text, as the windows' `char_start` and `char_end`)."""
    rows = []
    for chunk, document, start, end in zip(*(units.column(name).to_pylist() for name in (
            "id", "document_id", "char_start", "char_end"))):
        rows += [(name, document, chunk) for name, a, b in kept_content.get(document, ())
                 if a < end and start < b]
    return rows


def scan_passages(job: tuple[list[tuple[int, str]], str, str, InputConfig, str, int]
                  ) -> pa.Table:
    """(files as (file index, path), input URL and root, input settings, tokenizer, passage
    minimum) -> each document of the files as (corpus position, its passages' keys, MinHash
    bands and tokens, its opening words): the pass before extraction that finds repeated
    passages. As a table (`passage_scans.SCAN_SCHEMA`): made here, in parallel, it is what
    the version keeps (`passage_scans.write_scans`), and it reaches the driver faster than
    Python lists."""
    files, input_url, input_root, input_config, tokenizer, min_chars = job
    input_fs = fsspec.core.url_to_fs(input_url)[0]
    documents = []
    for file_index, path in files:
        loaded = load_file(input_fs, input_root, path, input_config)
        for position, text in enumerate(loaded.documents.column("text").to_pylist()):
            body = framed_boilerplate(text)[0]  # what split_repeated will be given
            documents.append((chunk_seq(file_index, position, 0),
                              document_passages(body, min_chars, tokenizer),
                              opening_words(body)))
    return scan_table(documents)


@dataclass(frozen=True)
class Reading:
    """How every file of a build is read and chunked (the real extraction's pass and a batch
    round's pass read alike). `block_rows`: chunks per yielded block, each a separate unit for
    the extraction pool, so one long file still keeps every extraction actor busy.
    `boilerplate`: a Project Gutenberg file's header and licence, and the `repeated`
    passages, are cut from the text that is chunked, each kept once as a chunk of its own (in
    its first document). `names_of`: what the offline extractor reads from a whole document
    (the words it capitalises mid-sentence), given to each of its chunks as
    `document_capitals` (the yielded blocks only), so that it does not depend on how chunks
    are batched."""
    input_url: str
    input_root: str
    input_config: InputConfig
    chunks_config: ChunksConfig
    tokenizer: str
    work_url: str
    block_rows: int
    boilerplate: bool = False
    repeated: RepeatedPassages | None = None
    min_passage_chars: int = 0
    names_of: Callable[[str], set[str]] | None = None


def read_and_chunk(files: pa.Table, reading: Reading) -> Iterator[pa.Table]:
    """Rows: file_index, path -> one row per chunk (CHUNK_SCHEMA), yielded in blocks of
    `reading.block_rows`, the documents and chunks written to `reading.work_url`."""
    input_fs = fsspec.core.url_to_fs(reading.input_url)[0]
    indexes = files.column("file_index").to_pylist()
    read, skipped, warnings, document_parts, chunk_parts = [], [], [], [], []
    shared: list[tuple[str, str, str | None]] = []  # (content passage, document, chunk)
    capitals: dict[str, list[str]] = {}  # document -> `names_of` its text (when asked)
    kept_out: list[tuple[str, float]] = []  # files mostly boilerplate: (path, share)
    for file_index, path in zip(indexes, files.column("path").to_pylist()):
        loaded = load_file(input_fs, reading.input_root, path, reading.input_config)
        read += loaded.files
        skipped += loaded.skipped
        warnings += loaded.warnings
        documents = loaded.documents
        if not documents.num_rows:
            continue
        masked = _Masked(documents)
        if reading.boilerplate:
            masked = _mask(documents, file_index, reading)
            shared += masked.shared
            if masked.kept_out is not None:
                kept_out.append((loaded.files[-1]["path"], masked.kept_out))
        units = chunk_documents(masked.to_chunk, reading.chunks_config, reading.tokenizer,
                                masked.cuts)
        if reading.names_of is not None:
            extracted = masked.extracted
            capitals.update((d, sorted(reading.names_of(extracted[d] if extracted else text)))
                            for d, text in zip(masked.to_chunk.column("id").to_pylist(),
                                               masked.to_chunk.column("text").to_pylist()))
        if masked.kept_content:
            shared += _content_chunks(units, masked.kept_content)
        chunks, document_part = _file_parts(file_index, documents, units, masked.homed,
                                            reading.tokenizer)
        chunk_parts += chunks
        document_parts.append(document_part)
    name = f"files-{indexes[0]:08d}"
    work_fs, work_root = fsspec.core.url_to_fs(reading.work_url)
    write_atomically(work_fs, f"{work_root}/inputs/{name}.json", json.dumps(
        {"files": read, "skipped": skipped, "warnings": warnings,
         "kept_out": kept_out}).encode("utf-8"))
    if not chunk_parts:
        return
    chunks = pa.concat_tables(chunk_parts)
    write_parquet(work_fs, f"{work_root}/documents/{name}.parquet",
                  pa.concat_tables(document_parts))
    write_parquet(work_fs, f"{work_root}/chunks/{name}.parquet", chunks)
    if shared:
        write_parquet(work_fs, f"{work_root}/{SHARED_CONTENT}/{name}.parquet",
                      pa.Table.from_pylist([{"passage": p, "document_id": d, "chunk_id": c}
                                            for p, d, c in shared], schema=SHARED_SCHEMA))
    if reading.names_of is not None:
        chunks = chunks.append_column("document_capitals", pa.array(
            [capitals.get(d, []) for d in chunks.column("document_id").to_pylist()],
            pa.list_(pa.string())))
    for start in range(0, chunks.num_rows, reading.block_rows):
        yield chunks.slice(start, reading.block_rows)


@dataclass
class _Masked:
    """One file's documents as they are chunked: framing boilerplate and the corpus's
    repeated passages cut (`boilerplate`), or as they were read."""
    to_chunk: pa.Table
    extracted: dict[str, str] | None = None  # document -> the text extraction reads
    homed: dict[str, list[str]] = field(default_factory=dict)  # passages it keeps as units
    kept_content: dict = field(default_factory=dict)
    cuts: dict = field(default_factory=dict)
    shared: list = field(default_factory=list)
    kept_out: float | None = None  # the share cut, when most of the file was


def _mask(documents: pa.Table, file_index: int, reading: Reading) -> _Masked:
    repeated = reading.repeated
    masked = _Masked(documents)
    texts, extracted_texts, file_cut, file_chars = [], [], 0, 0
    for i, (document, text) in enumerate(zip(documents.column("id").to_pylist(),
                                             documents.column("text").to_pylist())):
        body, masked.homed[document] = framed_boilerplate(text)
        cut, extracted_text = len(text) - len(body), body
        if repeated is not None and (repeated.first or repeated.openings):
            split = split_repeated(body, repeated, chunk_seq(file_index, i, 0),
                                   reading.min_passage_chars)
            cut, extracted_text = cut + split.cut_chars, split.text
            masked.homed[document] += split.homed
            masked.kept_content[document] = split.kept_content_at
            masked.cuts[document] = split.cuts
            masked.shared += [(name, document, None) for name in split.shared]
        file_cut, file_chars = file_cut + cut, file_chars + len(text)
        texts.append(body)
        extracted_texts.append(extracted_text)
    if file_cut > KEPT_OUT_WARNING * file_chars:
        masked.kept_out = round(file_cut / file_chars, 3)
    # A file's windows come from its own text (its book, for a Project Gutenberg file); the
    # corpus's repeated passages are masked in them, never moving them.
    masked.to_chunk = documents.set_column(documents.column_names.index("text"), "text",
                                           pa.array(texts, pa.string()))
    masked.extracted = dict(zip(documents.column("id").to_pylist(), extracted_texts))
    return masked


def _file_parts(file_index: int, documents: pa.Table, units: pa.Table,
                homed: dict[str, list[str]], tokenizer: str) -> tuple[list[pa.Table], pa.Table]:
    """A file's chunk rows (its windows, then the passages its documents keep as units of
    their own) and its documents' rows with their text units."""
    position = {d: i for i, d in enumerate(documents.column("id").to_pylist())}
    windows: dict[str, int] = {}  # document -> its windows, the masked ones included
    seq = []
    for document, window in zip(units.column("document_id").to_pylist(),
                                units.column("window").to_pylist()):
        windows[document] = window
        seq.append(chunk_seq(file_index, position[document], window))
    passages = [(document, j, text) for document, texts in homed.items()
                for j, text in enumerate(texts)]
    n_chunks = units.num_rows + len(passages)
    parts = [pa.table({
        "id": units.column("id"), "text": units.column("text"),
        "n_tokens": units.column("n_tokens"), "document_id": units.column("document_id"),
        "seq": pa.array(seq, pa.int64()),
        "file_chunks": pa.array([n_chunks] * units.num_rows, pa.int64()),
        "repeated_passage": pa.array([False] * units.num_rows)}, schema=CHUNK_SCHEMA)]
    if passages:
        parts.append(pa.table({
            "id": [chunk_id(d, -1 - j, text) for d, j, text in passages],
            "text": [text for _, _, text in passages],
            "n_tokens": [count_tokens(text, tokenizer) for _, _, text in passages],
            "document_id": [d for d, _, _ in passages],
            "seq": [chunk_seq(file_index, position[d], windows.get(d, -1) + 1 + j)
                    for d, j, _ in passages],
            "file_chunks": [n_chunks] * len(passages),
            "repeated_passage": [True] * len(passages)}, schema=CHUNK_SCHEMA))
        units = pa.concat_tables([units.select(["id", "document_id"]), pa.table({
            "id": parts[-1].column("id"), "document_id": parts[-1].column("document_id")})])
    unit_ids: dict[str, list[str]] = {}
    for unit, document in zip(units.column("id").to_pylist(),
                              units.column("document_id").to_pylist()):
        unit_ids.setdefault(document, []).append(unit)
    document_part = documents.append_column("text_unit_ids", pa.array(
        [unit_ids.get(d, []) for d in documents.column("id").to_pylist()],
        pa.list_(pa.string()))).append_column(  # which file: an update carries it
        "file_index", pa.array([file_index] * documents.num_rows, pa.int64()))
    return parts, document_part


@dataclass
class InputReports:
    """What the readers recorded, in file order."""
    files: list[dict]  # every file read: path, bytes, sha256
    skipped: list[dict]  # files skipped, with reasons
    warnings: list[str]
    # Files with over KEPT_OUT_WARNING of their text kept out as boilerplate: (path, share).
    kept_out: list[tuple[str, float]] = field(default_factory=list)

    def kept_out_warning(self) -> str | None:
        """One line naming the files that lost most of their text to boilerplate."""
        if not self.kept_out:
            return None
        worst = sorted(self.kept_out, key=lambda item: -item[1])
        shown = ", ".join(f"{path} ({share:.0%})" for path, share in worst[:5])
        more = f" and {len(worst) - 5} more" if len(worst) > 5 else ""
        return (f"{len(worst)} file(s) have over {KEPT_OUT_WARNING:.0%} of their text kept "
                f"out of extraction as boilerplate (Project Gutenberg headers and licences, "
                f"passages repeated at the start or end of many documents): {shown}{more}; "
                "see repeated_passages in the manifest")


def input_reports(work_url: str) -> InputReports:
    fs, root = fsspec.core.url_to_fs(work_url)
    reports = InputReports([], [], [])
    try:
        names = sorted(fs.ls(f"{root}/inputs", detail=False))
    except FileNotFoundError:
        names = []
    for name in names:
        report = json.loads(fs.cat_file(name))
        reports.files += report["files"]
        reports.skipped += report["skipped"]
        reports.warnings += report["warnings"]
        reports.kept_out += [tuple(item) for item in report.get("kept_out", [])]
    return reports


def stored_pieces(work_url: str, kind: str, columns: list[str] | None = None):
    """The readers' documents or chunks, a read batch at a time, in file order."""
    fs, root = fsspec.core.url_to_fs(work_url)
    for part in parquet_parts(fs, f"{root}/{kind}"):
        yield read_parquet(fs, part, columns)
