"""The documents and text units tables: the readers' documents and chunks (the work area's
pieces) completed with what the build found (each chunk's elements and extraction status, the
documents that hold its passage; each document's chunks, with those of the passages it
shares) and numbered (`human_readable_id`). A build writes them from every piece; an update
from the previous version's parts (`carried_tables`)."""

from __future__ import annotations

from collections import defaultdict

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.grouped import runs_as_lists
from graphrag_ray.index.chunks.positions import DOCUMENT_FILES
from graphrag_ray.index.chunks.read_and_chunk import SHARED_CONTENT, stored_pieces
from graphrag_ray.index.graph.unit_rows import UNIT_ROWS
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import write_parquet

DOCUMENT_FILES_SCHEMA = pa.schema([("id", pa.string()), ("file_index", pa.int64())])


def write_documents_and_text_units(staged: IndexVersion, work_url: str, extraction: pa.Table,
                                    entities: pa.Table, relationships: pa.Table,
                                    claims: pa.Table, rows_per_part: int) -> dict[str, int]:
    """Every document and chunk of the work area, piece by piece, completed, numbered in
    reading order and written in parts: the corpus text is in memory one read batch at a
    time."""
    rows = TextUnitRows(work_url, extraction, entities, relationships, claims)
    files: list[pa.Table] = []

    def text_units():
        next_id = 0
        for chunks in stored_pieces(work_url, "chunks"):
            yield rows.table(chunks, rows.units.rows_of(chunks), next_id)
            next_id += chunks.num_rows

    def documents():
        next_id = 0
        for part in stored_pieces(work_url, "documents"):
            files.append(part.select(DOCUMENT_FILES_SCHEMA.names))
            yield rows.documents(part, next_id)
            next_id += part.num_rows

    counts = {schema.DOCUMENTS: staged.write_stream(schema.DOCUMENTS, documents(), rows_per_part),
              schema.TEXT_UNITS: staged.write_stream(schema.TEXT_UNITS, text_units(),
                                                     rows_per_part)}
    write_document_files(work_url, pa.concat_tables(files) if files
                         else DOCUMENT_FILES_SCHEMA.empty_table())
    return counts


def write_document_files(work_url: str, files: pa.Table) -> None:
    fs, root = fsspec.core.url_to_fs(work_url)
    write_parquet(fs, f"{root}/{DOCUMENT_FILES}.parquet", files.cast(DOCUMENT_FILES_SCHEMA),
                  read_whole=True)


class TextUnitRows:
    """What a document's or a chunk's row holds besides what the reader stored: a chunk's
    elements and extraction status (by its row in the extraction's status table), the other
    documents holding its passage; a document's chunks of the passages it shares."""

    def __init__(self, work_url: str, extraction: pa.Table, entities: pa.Table,
                 relationships: pa.Table, claims: pa.Table):
        self.units = StatusRows(extraction)
        self.entity_ids = ElementsByUnit(entities, UNIT_ROWS, self.units.ids)
        self.relationship_ids = ElementsByUnit(relationships, UNIT_ROWS, self.units.ids)
        self.covariate_ids = ElementsByUnit(claims, "text_unit_id", self.units.ids)
        self.extra_documents, self.extra_units = shared_content_links(work_url)

    def found(self, unit_ids: pa.Array, rows: np.ndarray) -> dict[str, pa.Array]:
        """The columns a chunk's row gains from the build, for chunks `unit_ids` at `rows`
        of the status table."""
        return {
            "entity_ids": self.entity_ids.lists(rows),
            "relationship_ids": self.relationship_ids.lists(rows),
            "covariate_ids": self.covariate_ids.lists(rows),
            "extraction_status": self.units.status.take(pa.array(rows)),
            "extraction_error": self.units.error.take(pa.array(rows)),
        }

    def document_ids(self, unit_ids: pa.Array, documents: pa.Array) -> pa.Array:
        """Each chunk's document, then the others holding its passage."""
        if not self.extra_documents:
            return pa.ListArray.from_arrays(
                pa.array(np.arange(len(unit_ids) + 1, dtype=np.int32)), documents)
        return pa.array([[d] + self.extra_documents.get(u, []) for u, d in
                         zip(unit_ids.to_pylist(), documents.to_pylist())],
                        pa.list_(pa.string()))

    def table(self, chunks: pa.Table, rows: np.ndarray, first_id: int) -> pa.Table:
        """Text unit rows of a piece of chunks, numbered from `first_id`."""
        unit_ids = chunks.column("id").combine_chunks()
        documents = chunks.column("document_id").combine_chunks()
        return pa.table({
            "id": unit_ids,
            "human_readable_id": pa.array(range(first_id, first_id + len(rows)), pa.int64()),
            "text": chunks.column("text"), "n_tokens": chunks.column("n_tokens"),
            "document_ids": self.document_ids(unit_ids, documents),
            "document_id": documents,
            **self.found(unit_ids, rows),
        }).select(schema.TEXT_UNIT_COLUMNS)

    def text_unit_ids(self, document_ids: list[str], own: list[list[str]]) -> pa.Array:
        """Each document's chunks, then those of the passages it shares."""
        return pa.array([units + [u for u in self.extra_units.get(d, []) if u not in units]
                         for d, units in zip(document_ids, own)], pa.list_(pa.string()))

    def documents(self, part: pa.Table, first_id: int) -> pa.Table:
        """Document rows of a piece of the readers' documents, numbered from `first_id`."""
        if self.extra_units:
            part = part.set_column(
                part.column_names.index("text_unit_ids"), "text_unit_ids",
                self.text_unit_ids(part.column("id").to_pylist(),
                                   part.column("text_unit_ids").to_pylist()))
        return part.add_column(1, "human_readable_id", pa.array(
            range(first_id, first_id + part.num_rows), pa.int64())).select(
            schema.DOCUMENT_COLUMNS)


def shared_content_links(work_url: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Repeated content is extracted in its first document only; the others that hold it
    are linked to the chunks that extracted it: chunk -> the other documents (its
    `document_ids`), document -> those chunks (its `text_unit_ids`)."""
    chunks_of: dict[str, list[str]] = defaultdict(list)
    sharers: dict[str, list[str]] = defaultdict(list)
    for part in stored_pieces(work_url, SHARED_CONTENT):
        for passage, document, chunk in zip(*(part.column(c).to_pylist() for c in (
                "passage", "document_id", "chunk_id"))):
            (chunks_of[passage] if chunk else sharers[passage]).append(chunk or document)
    documents_of: dict[str, list[str]] = defaultdict(list)
    units_of: dict[str, list[str]] = defaultdict(list)
    for passage, documents in sharers.items():
        for chunk in chunks_of.get(passage, []):
            documents_of[chunk] += [d for d in documents if d not in documents_of[chunk]]
            for document in documents:
                if chunk not in units_of[document]:
                    units_of[document].append(chunk)
    return dict(documents_of), dict(units_of)


class StatusRows:
    """The extraction's status rows (one per chunk), found for a piece of chunks by their
    `seq` (a sorted search, not a dict of every chunk id: 217k ids at 100M tokens, and a
    lookup per id per piece, were a third of the stage)."""

    def __init__(self, extraction: pa.Table):
        seq = np.asarray(extraction.column("seq").to_numpy(), dtype=np.int64)
        self.order = np.argsort(seq, kind="stable")
        self.seq = seq[self.order]
        self.ids = extraction.column("text_unit_id").combine_chunks()
        self.status = extraction.column("status").combine_chunks()
        self.error = extraction.column("error").combine_chunks()

    def rows_of(self, chunks: pa.Table) -> np.ndarray:
        """The status row of each chunk of a piece; fails if one came back without one."""
        seq = np.asarray(chunks.column("seq").to_numpy(), dtype=np.int64)
        rows, same = np.zeros(len(seq), np.int64), np.zeros(len(seq), bool)
        if len(self.seq):
            at = np.minimum(np.searchsorted(self.seq, seq), len(self.seq) - 1)
            rows = self.order[at]
            same = (self.seq[at] == seq) & pc.equal(
                self.ids.take(pa.array(rows)),
                chunks.column("id").combine_chunks()).to_numpy(zero_copy_only=False)
        if not same.all():
            raise RuntimeError(f"{int((~same).sum())} chunks came back from extraction "
                               "without a result")
        return rows


class ElementsByUnit:
    """The ids of the elements (entities, relationships, claims) found in each text unit, in
    table order, as a list column for any text units asked (by their row in `unit_ids`): the
    (unit, element) pairs sorted once by unit row, each holding its element's row, not its
    id (as a dict of Python lists of ids they were most of the driver's memory; as a dict of
    unit ids to runs, most of the stage's time)."""

    def __init__(self, elements: pa.Table, unit_column: str, unit_ids: pa.Array):
        """`unit_column`: each element's text unit id (a claim's `text_unit_id`), or its
        text units as rows of `unit_ids` (`UNIT_ROWS`)."""
        units = elements.column(unit_column).combine_chunks()
        self.ids = elements.column("id").combine_chunks()
        if unit_column == UNIT_ROWS:
            owners = pc.list_parent_indices(units).to_numpy()
            unit_row = pc.list_flatten(units).to_numpy().astype(np.int64)
        else:
            owners = np.arange(len(units))
            unit_row = pc.index_in(units, value_set=unit_ids).fill_null(-1).to_numpy(
                zero_copy_only=False).astype(np.int64)
        known = unit_row >= 0  # (an element's text unit that is not in the table: none)
        order = np.argsort(unit_row[known], kind="stable")  # each unit's in table order
        self.unit_row = unit_row[known][order]
        self.rows = np.asarray(owners, dtype=np.int64)[known][order]

    def lists(self, unit_rows: np.ndarray) -> pa.ListArray:
        starts = np.searchsorted(self.unit_row, unit_rows, side="left")
        lengths = np.searchsorted(self.unit_row, unit_rows, side="right") - starts
        return runs_as_lists(self.rows, starts, lengths, self.ids)
