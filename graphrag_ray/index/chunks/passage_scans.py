"""Each document's scanned passages (`read_and_chunk.scan_passages`) as a table, kept with the
version, so that an update scans only the files that changed and still finds the passages
repeated across the whole corpus (`RepeatedPassages.find` over the kept rows and the new).
The driver, which gathers every scan to find them, keeps them as one table
(`write_scans`): kept as the scanning tasks wrote them, a part per read batch, a large
corpus's were thousands of files that an update spent CPU opening, beside Ray's start.

A row is a document: its corpus position (`positions.chunk_seq` of its file and place
in the file), its passages (key, MinHash bands, tokens; a null key for the rest of its text)
and its opening words. The repeated passages found are kept too (`repeated_table`), so an
update can tell which unchanged documents a change elsewhere reads differently
(`reading_signature`).
"""

from __future__ import annotations

import fsspec
import pyarrow as pa

from graphrag_ray.index.chunks.repeated_passages import OPENING_WORDS, RepeatedPassages
from graphrag_ray.storage.parquet_io import write_parquet

PASSAGE_STRUCT = pa.struct([("key", pa.string()), ("bands", pa.list_(pa.string())),
                            ("tokens", pa.int64())])
SCAN_SCHEMA = pa.schema([("position", pa.int64()), ("passages", pa.list_(PASSAGE_STRUCT)),
                         ("opening", pa.list_(pa.string()))])
# A document's scan, as `RepeatedPassages.find` takes it, with its opening words.
Scan = tuple[int, list[tuple[str | None, list[str], int]], list[str]]


def scan_table(scans: list[Scan]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"position": position, "opening": opening,
          "passages": [{"key": key, "bands": bands, "tokens": tokens}
                       for key, bands, tokens in passages]}
         for position, passages, opening in scans], schema=SCAN_SCHEMA)


def write_scans(work_url: str, tables: list[pa.Table]) -> None:
    """Every document's scan as one table in the work area (`passages/`), in corpus order:
    the tables of the scans made now (`read_and_chunk.scan_passages`) and of the carried
    ones (`carry_over.carry_scans`)."""
    table = pa.concat_tables([SCAN_SCHEMA.empty_table(), *tables]).sort_by("position")
    fs, root = fsspec.core.url_to_fs(work_url)
    write_parquet(fs, f"{root}/{SCANS}", table, read_whole=True)


SCANS = "passages/documents.parquet"


def scans_of(table: pa.Table) -> list[Scan]:
    return [(position, [(p["key"], p["bands"], p["tokens"]) for p in passages], opening)
            for position, passages, opening in zip(
                table.column("position").to_pylist(), table.column("passages").to_pylist(),
                table.column("opening").to_pylist())]


REPEATED_SCHEMA = pa.schema([("key", pa.string()), ("first", pa.int64()),
                             ("content", pa.string())])
OPENINGS_SCHEMA = pa.schema([("opening", pa.string()), ("length", pa.int64()),
                             ("first", pa.int64()), ("documents", pa.int64())])


def repeated_table(repeated: RepeatedPassages | None) -> tuple[pa.Table, pa.Table]:
    """What a version's reading made repeated: each key's first home and content name, and
    the repeated openings."""
    if repeated is None:
        return REPEATED_SCHEMA.empty_table(), OPENINGS_SCHEMA.empty_table()
    keys = list(repeated.first)
    return (pa.table({"key": keys, "first": [repeated.first[k] for k in keys],
                      "content": [repeated.content.get(k) for k in keys]},
                     schema=REPEATED_SCHEMA),
            pa.table({"opening": list(repeated.openings),
                      "length": [v[0] for v in repeated.openings.values()],
                      "first": [v[1] for v in repeated.openings.values()],
                      "documents": [v[2] for v in repeated.openings.values()]},
                     schema=OPENINGS_SCHEMA))


def repeated_from_tables(keys: pa.Table, openings: pa.Table) -> RepeatedPassages:
    """The inverse of `repeated_table` (without the per-passage counts, which only the
    manifest's figures read)."""
    first = dict(zip(keys.column("key").to_pylist(), keys.column("first").to_pylist()))
    content = {k: c for k, c in zip(keys.column("key").to_pylist(),
                                    keys.column("content").to_pylist()) if c is not None}
    return RepeatedPassages(first, {}, content, {
        o: (n, f, d) for o, n, f, d in zip(*(openings.column(c).to_pylist() for c in (
            "opening", "length", "first", "documents")))})


def reading_signature(scan: Scan, repeated: RepeatedPassages) -> tuple:
    """What `split_repeated` makes of a document, given the repeated passages: per passage,
    whether it is repeated, its content name and whether this document is its first home;
    and its opening's cut. Two readings of a document with the same signature cut and keep
    the same text (positions aside), so its chunks and extraction can be carried over."""
    position, passages, opening = scan
    shared = repeated.openings.get(" ".join(opening[:OPENING_WORDS])) \
        if len(opening) > OPENING_WORDS else None
    return (tuple((key in repeated.first, repeated.content.get(key),
                   repeated.first.get(key) == position)
                  for key, _, _ in passages if key is not None),
            None if shared is None else (shared[0], shared[1] == position))
