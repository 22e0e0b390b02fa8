"""An update's documents and text units, written from the previous version's parts: a part
whose rows are all carried over unchanged is linked as it is (`IndexVersion.link_part`), a
part that lost rows (a file deleted, changed or read again) or whose rows changed (a chunk's
elements, the documents sharing its passage) is written again, and the rows of the files read
now follow in new parts. New rows are numbered after the previous version's largest
`human_readable_id` (as Microsoft GraphRAG's incremental update numbers them), so a carried
row keeps its number: a number an answer cited names the same text unit in the next version.
Written again whole, a small update's tables cost as much as a build's.

The tables' rows are then no longer in reading order, nor their numbers dense; no reader
relies on either (a table is read by id, a text unit cited by its number)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Callable, Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.index.carry_over import READING, CarriedReading
from graphrag_ray.index.chunks.positions import FILE_SHIFT, FileMap
from graphrag_ray.index.write.documents_and_text_units import TextUnitRows, write_document_files
from graphrag_ray.index.chunks.positions import DOCUMENT_FILES
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet

# A previous version's last part smaller than this is written again with the new rows
# (otherwise every update would leave one more small part behind).
SMALL_PART_BYTES = 16 * 2 ** 20


@dataclass
class CarriedTables:
    """What an update writes its documents and text units from: the previous version, its
    files' numbers now (`FileMap`) and the work area's pieces read now (named after their
    first file's number, `files-N`: a carried piece is named after a carried file)."""
    previous: IndexVersion
    files: FileMap
    fresh: set[str]

    @classmethod
    def of(cls, carried: CarriedReading | None, file_numbers: np.ndarray
           ) -> "CarriedTables | None":
        """None for a build, and for an update of an index kept before each document's file
        number was (its tables are written as a build writes them, once)."""
        if carried is None or not carried.previous.has_table(f"{READING}/{DOCUMENT_FILES}"):
            return None
        read_now = np.setdiff1d(np.asarray(file_numbers, dtype=np.int64),
                                carried.files.carried())
        return cls(carried.previous, carried.files,
                   {f"files-{n:08d}.parquet" for n in read_now.tolist()})

    def fresh_pieces(self, work_url: str, kind: str) -> Iterator[pa.Table]:
        """The work area's documents or chunks of the files read now, piece by piece."""
        fs, root = fsspec.core.url_to_fs(work_url)
        for path in parquet_parts(fs, f"{root}/{kind}"):
            if path.rsplit("/", 1)[-1] in self.fresh:
                yield read_parquet(fs, path)


def carry_documents_and_text_units(staged: IndexVersion, work_url: str, carried: CarriedTables,
                                   extraction: pa.Table, entities: pa.Table,
                                   relationships: pa.Table, claims: pa.Table,
                                   rows_per_part: int,
                                   changed: tuple[np.ndarray, np.ndarray] | None = None
                                   ) -> dict[str, int]:
    """The documents and text units tables of an update (see the module's docstring), and
    the documents' file numbers kept for the next one. Returns the rows of each.

    `changed`: per entity row and per relationship row, whether the update may have changed
    it (None: anything may have, as when resolution renamed entities or claims are kept,
    whose ids are their rows' numbers). Given, a carried text unit's element lists are those
    it had (it keeps its instances, and an element's id is its title's or ends' hash), so
    they are taken from the previous parts as they are, and only the new text units' lists
    are found, among the changed elements: finding every unit's lists over every element
    (7.3M entity-unit pairs at 100M tokens) and comparing them was most of the stage."""
    if changed is not None:
        entities = entities.filter(pa.array(changed[0]))
        relationships = relationships.filter(pa.array(changed[1]))
    rows = TextUnitRows(work_url, extraction, entities, relationships, claims)
    return {schema.TEXT_UNITS: _carry_text_units(staged, work_url, carried, rows, extraction,
                                                 rows_per_part, changed is not None),
            schema.DOCUMENTS: _carry_documents(staged, work_url, carried, rows, extraction,
                                               rows_per_part)}


def _carry_text_units(staged: IndexVersion, work_url: str, carried: CarriedTables,
                      rows: TextUnitRows, extraction: pa.Table, rows_per_part: int,
                      lists_kept: bool) -> int:
    seq = np.asarray(extraction.column("seq").to_numpy(), dtype=np.int64)
    kept = np.flatnonzero(np.isin(seq >> FILE_SHIFT, carried.files.carried()))
    row_of = dict(zip(rows.units.ids.take(pa.array(kept)).to_pylist(), kept.tolist()))

    def now(light: pa.Table) -> tuple[np.ndarray, dict[str, pa.Array]]:
        ids = light.column("id").combine_chunks()
        at = np.fromiter((row_of.get(i, -1) for i in ids.to_pylist()), np.int64, len(ids))
        keep = at >= 0
        mask = pa.array(keep)
        unit_ids = ids.filter(mask)
        documents = {"document_ids": rows.document_ids(
            unit_ids, light.column("document_id").combine_chunks().filter(mask))}
        return keep, documents if lists_kept else {**documents,
                                                   **rows.found(unit_ids, at[keep])}

    def fresh(first_id: int) -> Iterator[pa.Table]:
        for chunks in carried.fresh_pieces(work_url, "chunks"):
            yield rows.table(chunks, rows.units.rows_of(chunks), first_id)
            first_id += chunks.num_rows

    light = ["id", "human_readable_id", "document_id", "document_ids"] if lists_kept else \
        [c for c in schema.TEXT_UNIT_COLUMNS if c != "text"]
    return carry_parts(carried.previous, staged, schema.TEXT_UNITS, light, now, fresh,
                       rows_per_part)


def _carry_documents(staged: IndexVersion, work_url: str, carried: CarriedTables,
                     rows: TextUnitRows, extraction: pa.Table, rows_per_part: int) -> int:
    listing = carried.previous.read_table(f"{READING}/{DOCUMENT_FILES}")
    keep, positions = carried.files.remap(
        np.asarray(listing.column("file_index").to_numpy(), dtype=np.int64) << FILE_SHIFT)
    listing = pa.table({"id": listing.column("id").filter(pa.array(keep)),
                        "file_index": pa.array(positions >> FILE_SHIFT, pa.int64())})
    kept = set(listing.column("id").to_pylist())
    units = set(rows.units.ids.to_pylist())
    files = [listing]

    def now(light: pa.Table) -> tuple[np.ndarray, dict[str, pa.Array]]:
        ids = light.column("id").to_pylist()
        keep = np.fromiter((i in kept for i in ids), bool, len(ids))
        own = [[u for u in listed if u in units] for i, listed, k in zip(
            ids, light.column("text_unit_ids").to_pylist(), keep) if k]
        return keep, {"text_unit_ids": rows.text_unit_ids(
            [i for i, k in zip(ids, keep) if k], own)}

    def fresh(first_id: int) -> Iterator[pa.Table]:
        for part in carried.fresh_pieces(work_url, "documents"):
            files.append(part.select(["id", "file_index"]))
            yield rows.documents(part, first_id)
            first_id += part.num_rows

    written = carry_parts(carried.previous, staged, schema.DOCUMENTS,
                          ["id", "human_readable_id", "text_unit_ids"], now, fresh,
                          rows_per_part)
    write_document_files(work_url, pa.concat_tables(files))
    return written


def carry_parts(previous: IndexVersion, staged: IndexVersion, name: str, light: list[str],
                now: Callable[[pa.Table], tuple[np.ndarray, dict[str, pa.Array]]],
                fresh: Callable[[int], Iterator[pa.Table]], rows_per_part: int) -> int:
    """Table `name` from the previous version's parts, each read first without its text
    (`light` columns): `now` says which of its rows are carried and what their recomputed
    columns hold; a part carried whole and unchanged is linked, any other written again
    (its text read then). The rows `fresh` gives (numbered from the number it is given)
    follow in new parts. Returns the rows written."""
    fs = previous.fs
    files = previous.table_files(name)
    next_id, written, tail = 0, 0, None
    for number, path in enumerate(files):
        part = read_parquet(fs, path, light)
        if part.num_rows:
            next_id = max(next_id, pc.max(part.column("human_readable_id")).as_py() + 1)
        keep, columns = now(part)
        last_and_small = number == len(files) - 1 and fs.size(path) < SMALL_PART_BYTES
        if keep.all() and not last_and_small and _unchanged(part, columns):
            staged.link_part(previous, path, name, number)
            written += part.num_rows
            continue
        if not keep.any():
            continue
        part = read_parquet(fs, path).filter(pa.array(keep))
        for column, values in columns.items():
            part = part.set_column(part.column_names.index(column), column,
                                   values.cast(part.schema.field(column).type))
        if last_and_small:
            tail = part
            continue
        write_parquet(staged.fs, staged.part_path(name, number), part)
        written += part.num_rows
    return written + staged.write_stream(
        name, chain([tail] if tail is not None else [], fresh(next_id)), rows_per_part,
        first_part=len(files) - (tail is not None))


def _unchanged(part: pa.Table, columns: dict[str, pa.Array]) -> bool:
    return all(part.column(column).combine_chunks().equals(
        values.cast(part.schema.field(column).type)) for column, values in columns.items())
