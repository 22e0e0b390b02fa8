"""What an adopted index's update reuses: Microsoft GraphRAG's extractions, turned into our
kept extractions (`extract/kept_extractions`), one row per chunk of ours.

An update chunks the corpus as we do and looks each chunk's text up among the kept rows.
Microsoft cut the same files into other windows (its own token windows, a byte-order mark
kept, no boilerplate cut), so its text units are never our chunks. But both are windows of
the same document text: each of its text units is placed in our document's text, and given
to the chunk of ours it overlaps most. That chunk's kept extraction is then what Microsoft
extracted from those units: the entities and relationships its text units name
(`entity_ids`, `relationship_ids`) and its claims (`covariate_ids`). Microsoft keeps no
per-chunk description, so each carries the element's merged description (one distinct
description: an unchanged element needs no new summary), and a relationship's strength is
its weight shared among its text units (the merge sums them back).

A chunk of ours that overlaps placed units none of which it got (its text was extracted with
a neighbour's) keeps an empty extraction; a chunk no placed unit overlaps (text Microsoft did
not have) keeps none, and is extracted by the update like new text. Its cache's raw replies
are not used: they are keyed by hashes of its prompts, which a project need not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.index.extract.kept_extractions import KEPT_COLUMNS, text_hash
from graphrag_ray.index.extract.stage import EXTRACTION_SCHEMA
from graphrag_ray.index.extract.tuples import CLAIM_FIELDS

BOM = "\ufeff"
# A kept row, as our builds keep them.
KEPT_SCHEMA = pa.schema([EXTRACTION_SCHEMA.field(name) for name in KEPT_COLUMNS])


def project_input(settings_path: Path | None, settings: dict[str, Any]) -> Path | None:
    """The project's input folder as its settings name it (3.x `input_storage.base_dir`,
    2.x `input.storage.base_dir` or `input.base_dir`; `input` by default), when it exists."""
    if settings_path is None:
        return None
    section = settings.get("input") or {}
    base = (settings.get("input_storage") or {}).get("base_dir") \
        or (section.get("storage") or {}).get("base_dir") or section.get("base_dir") \
        or "input"
    folder = settings_path.parent / str(base)
    return folder if folder.is_dir() else None


@dataclass
class Placement:
    """Which of its text units each chunk of ours takes, and what could not be placed."""
    units_of: dict[str, list[str]]  # our chunk id -> its text unit ids
    covered: set[str]  # our chunks that overlap a placed unit
    kept_out: list[str]  # its text units found only in text we keep out of extraction
    unplaced: list[str]  # its text units not found in our documents' text


def _spans(text: str, windows: list[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """(id, window text) in document order -> each window's span in `text`. Windows are
    consecutive and may overlap, so each is looked for from just after the previous start;
    one not found is left out."""
    spans, cursor = {}, 0
    for window_id, window in windows:
        window = window.removeprefix(BOM)
        start = text.find(window, cursor) if window else -1
        if start < 0:
            continue
        spans[window_id] = (start, start + len(window))
        cursor = start + 1
    return spans


def _file_name(title: object) -> str:
    return str(title or "").rsplit("/", 1)[-1]


def place_units(documents: pa.Table, chunks: pa.Table, units: pa.Table,
                their_documents: pa.Table) -> Placement:
    """Our `documents` (id, title, text) and extracted `chunks` (id, text, document_id, in
    order); its `units` (id, text, document_ids) and `their_documents` (id, title). A
    document of ours is matched to its documents of the same file name."""
    titles = dict(zip(their_documents.column("id").to_pylist(),
                      their_documents.column("title").to_pylist()))
    their_units: dict[str, list[tuple[str, str]]] = {}  # file name -> its units in order
    for unit, text, document_ids in zip(units.column("id").to_pylist(),
                                        units.column("text").to_pylist(),
                                        units.column("document_ids").to_pylist()):
        for document in document_ids or []:
            their_units.setdefault(_file_name(titles.get(document)), []).append(
                (unit, text or ""))
    ours: dict[str, list[tuple[str, str]]] = {}
    for chunk, text, document in zip(chunks.column("id").to_pylist(),
                                     chunks.column("text").to_pylist(),
                                     chunks.column("document_id").to_pylist()):
        ours.setdefault(document, []).append((chunk, text))
    units_of: dict[str, list[str]] = {}
    covered: set[str] = set()
    placed: set[str] = set()
    found: set[str] = set()
    for document, title, text in zip(documents.column("id").to_pylist(),
                                     documents.column("title").to_pylist(),
                                     documents.column("text").to_pylist()):
        text = text.removeprefix(BOM)
        chunk_spans = _spans(text, ours.get(document, []))
        for unit, (a, b) in _spans(text, their_units.get(_file_name(title), [])).items():
            found.add(unit)
            overlaps = {chunk: min(b, d) - max(a, c) for chunk, (c, d) in chunk_spans.items()
                        if c < b and a < d}
            if not overlaps:
                continue
            placed.add(unit)
            covered.update(overlaps)
            units_of.setdefault(max(overlaps, key=overlaps.get), []).append(unit)
    ids = units.column("id").to_pylist()
    return Placement(units_of, covered, [u for u in ids if u in found and u not in placed],
                     [u for u in ids if u not in found])


def kept_extractions(placement: Placement, chunk_texts: dict[str, str],
                     tables: dict[str, pa.Table]) -> pa.Table:
    """One kept row per covered chunk of ours (KEPT_SCHEMA), from the elements its units
    name."""
    units = tables[schema.TEXT_UNITS]
    unit_rows = {u: (e or [], r or [], c or []) for u, e, r, c in zip(
        units.column("id").to_pylist(), units.column("entity_ids").to_pylist(),
        units.column("relationship_ids").to_pylist(),
        units.column("covariate_ids").to_pylist())}
    entities = {row["id"]: {"title": row["title"], "type": row["type"],
                            "description": row["description"]}
                for row in tables[schema.ENTITIES].select(
                    ["id", "title", "type", "description"]).to_pylist()}
    relationships = {row["id"]: (row["source"], row["target"], row["description"],
                                 (row["weight"] or 1.0) / max(1, len(row["text_unit_ids"] or [])))
                     for row in tables[schema.RELATIONSHIPS].select(
                         ["id", "source", "target", "description", "weight",
                          "text_unit_ids"]).to_pylist()}
    claims = {}
    if schema.COVARIATES in tables:
        covariates = tables[schema.COVARIATES]
        fields = [f for f in CLAIM_FIELDS if f in covariates.column_names]
        claims = {row["id"]: {f: None if row.get(f) is None else str(row[f])
                              for f in CLAIM_FIELDS}
                  for row in covariates.select(["id", *fields]).to_pylist()}
    rows = []
    for chunk in sorted(placement.covered):
        found_entities, found_relationships, found_claims = {}, {}, {}
        for unit in placement.units_of.get(chunk, []):
            entity_ids, relationship_ids, claim_ids = unit_rows.get(unit, ([], [], []))
            for entity in entity_ids:
                if entity in entities:
                    found_entities.setdefault(entity, entities[entity])
            for relationship in relationship_ids:
                if relationship in relationships:
                    source, target, description, share = relationships[relationship]
                    if relationship in found_relationships:
                        found_relationships[relationship]["strength"] += share
                    else:
                        found_relationships[relationship] = {
                            "source": source, "target": target, "description": description,
                            "strength": share}
            for claim in claim_ids:
                if claim in claims:
                    found_claims.setdefault(claim, claims[claim])
        rows.append({"text_hash": text_hash(chunk_texts[chunk]),
                     "entities": list(found_entities.values()),
                     "relationships": list(found_relationships.values()),
                     "claims": list(found_claims.values()),
                     "malformed_records": 0, "malformed_reasons": []})
    return pa.Table.from_pylist(rows, schema=KEPT_SCHEMA)
