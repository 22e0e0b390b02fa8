"""The build's lexical index of its text units (`storage/lexical_index.py`), written once the
text units and documents are.

A build writes a segment per part of the text units table (in parallel, a part's words read
where it is). An update keeps the previous version's segments, adds one for the units it
adds and lists the units it removed as deleted, so a 1% update reads 1% of the text; when
the deleted units or the segments grow past `REWRITE_*` it writes the index anew. Repeated
passages' own units (boilerplate kept once) are never indexed, as they are never answers.
"""

from __future__ import annotations

import time

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import RuntimeConfig
from graphrag_ray.distributed import map_items
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.atomic import copy_whole
from graphrag_ray.storage.index_store import read_part
from graphrag_ray.storage.lexical_index import (
    LEXICAL, UNITS_SCHEMA, read_catalog, write_catalog, write_segment_of)
from graphrag_ray.storage.parquet_io import read_parquet

# An update writes the index anew past these: more deleted units than this share of the
# indexed ones (they still cost reading), or more segments (each is a look-up a word).
REWRITE_DELETED_SHARE = 0.25
REWRITE_SEGMENTS = 16


def _titles(version: IndexVersion) -> dict[str, str]:
    documents = version.read_table(schema.DOCUMENTS, ["id", "title"])
    return dict(zip(documents.column("id").to_pylist(), documents.column("title").to_pylist()))


def _indexed(units: pa.Table) -> pa.Table:
    status = units.column("extraction_status")
    return units.filter(pc.invert(pc.fill_null(pc.equal(status, schema.REPEATED_PASSAGE), False)))


def _with_titles(units: pa.Table, titles: dict[str, str]) -> pa.Table:
    """The units to index (`_indexed`) as id, title (their document's), text."""
    units = _indexed(units)
    documents = [ids[0] if ids else "" for ids in units.column("document_ids").to_pylist()]
    return pa.table({"id": units.column("id"),
                     "title": pa.array([titles.get(d, "") for d in documents], pa.string()),
                     "text": units.column("text")})


def _part_segment(job: tuple[str, str, str, pa.Array | None], titles: dict[str, str]
                  ) -> dict | None:
    """The segment of one part of the text units table, read where the task runs (the
    driver holds no text); None when no unit of it is indexed."""
    url, name, part_url, left_out = job
    units = _with_titles(read_part(*fsspec.core.url_to_fs(part_url), COLUMNS, left_out),
                         titles)
    if not units.num_rows:
        return None
    fs, folder = fsspec.core.url_to_fs(url)
    return write_segment_of(fs, folder, name, units)


def _part_jobs(staged: IndexVersion, url: str) -> list[tuple[str, str, str, pa.Array | None]]:
    left_out = staged.left_out(schema.TEXT_UNITS)
    return [(url, f"{number:05d}", part_url, left_out.get(part_url.rsplit("/", 1)[-1]))
            for number, part_url in enumerate(staged.table_urls(schema.TEXT_UNITS))]


COLUMNS = ["id", "text", "document_ids", "extraction_status"]


def write_lexical_index(staged: IndexVersion, runtime: RuntimeConfig,
                        previous: IndexVersion | None = None) -> dict:
    """The version's lexical index; its figures for the manifest."""
    started = time.perf_counter()
    url = staged.url_of(LEXICAL)
    titles = _titles(staged)
    plan = _update_plan(staged, previous) if previous is not None else None
    fs, folder = fsspec.core.url_to_fs(url)
    fs.makedirs(folder, exist_ok=True)
    if plan is None:
        segments = [s for s in map_items(_part_segment, _part_jobs(staged, url), runtime,
                                         shared=[titles], python_bound=True) if s]
        deleted, deleted_length, rewritten = [], 0, previous is not None
    else:
        segments, deleted, deleted_length, added = plan
        units = _with_titles(added, titles)
        if units.num_rows:
            segments.append(write_segment_of(fs, folder, f"{staged.version}-00000", units))
        rewritten = False
    write_catalog(fs, folder, segments, deleted, deleted_length)
    return {"segments": len(segments),
            "units": sum(s["units"] for s in segments) - len(deleted),
            "postings": sum(s["postings"] for s in segments),
            "deleted_units": len(deleted), "rewritten": rewritten,
            "bytes": sum(fs.size(path) for path in fs.find(folder)),
            "seconds": round(time.perf_counter() - started, 3)}


def _update_plan(staged: IndexVersion, previous: IndexVersion):
    """(the previous segments copied into this version, the units deleted since and their
    words, this version's units no segment holds), or None when the index is better written
    anew (the previous version has none, or deletions and segments piled up)."""
    old_fs, old_folder = fsspec.core.url_to_fs(previous.url_of(LEXICAL))
    catalog = read_catalog(old_fs, old_folder)
    if catalog is None or len(catalog["segments"]) >= REWRITE_SEGMENTS:
        return None
    old_units = pa.concat_tables(
        [read_parquet(old_fs, f"{old_folder}/units-{s['name']}.parquet")
         for s in catalog["segments"]] or [UNITS_SCHEMA.empty_table()])
    now = _indexed(staged.read_table(schema.TEXT_UNITS, COLUMNS))
    now_ids = now.column("id")
    gone = pc.invert(pc.is_in(old_units.column("id"), value_set=now_ids))
    gone = pc.or_(gone, pc.is_in(old_units.column("id"),
                                 value_set=pa.array(catalog["deleted"], pa.string())))
    deleted = old_units.filter(gone)
    total = max(1, old_units.num_rows)
    if deleted.num_rows > REWRITE_DELETED_SHARE * total:
        return None
    live = old_units.filter(pc.invert(gone)).column("id")
    added = now.filter(pc.invert(pc.is_in(now_ids, value_set=live)))
    new_folder = fsspec.core.url_to_fs(staged.url_of(LEXICAL))[1]
    for segment in catalog["segments"]:
        for kind in ("segment", "units"):
            name = f"{kind}-{segment['name']}.parquet"
            copy_whole(old_fs, f"{old_folder}/{name}", f"{new_folder}/{name}")
    return (list(catalog["segments"]), deleted.column("id").to_pylist(),
            int(np.sum(deleted.column("length").to_numpy())) if deleted.num_rows else 0, added)
