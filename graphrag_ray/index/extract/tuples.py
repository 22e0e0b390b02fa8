"""Parse the delimited-tuple format shared across GraphRAG tools.

    ("entity"<|>NAME<|>TYPE<|>DESCRIPTION)##("relationship"<|>SRC<|>TGT<|>DESCRIPTION<|>STRENGTH)
    ...<|COMPLETE|>

LLMs bend the format: records on separate lines without `##`, stray quotes, missing strength.
We accept those and count every record we cannot use, with its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Delimiters:
    tuple: str = "<|>"
    record: str = "##"
    completion: str = "<|COMPLETE|>"


@dataclass
class ParsedRecords:
    entities: list[dict] = field(default_factory=list)
    relationships: list[dict] = field(default_factory=list)
    claims: list[dict] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)

    def extend(self, other: "ParsedRecords") -> None:
        self.entities.extend(other.entities)
        self.relationships.extend(other.relationships)
        self.claims.extend(other.claims)
        self.malformed.extend(other.malformed)


def normalize_name(name: str) -> str:
    """Entity names match exactly after this: quotes and spacing removed, upper case."""
    name = name.strip().strip("\"'`").strip()
    return re.sub(r"\s+", " ", name).upper()


def _clean(value: str) -> str:
    return value.strip().strip("\"'").strip()


def split_records(text: str, delimiters: Delimiters) -> list[str]:
    text = text.replace(delimiters.completion, "")
    pieces = []
    for part in text.split(delimiters.record):
        # Records emitted one per line without the record delimiter.
        pieces.extend(re.split(r"\n\s*(?=\()", part))
    records = []
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if piece.startswith("(") and piece.rstrip().endswith(")"):
            piece = piece[1:].rstrip()[:-1]
        elif piece.startswith("("):
            piece = piece[1:]
        records.append(piece.strip())
    return records


def parse_strength(value: str) -> float | None:
    match = re.search(r"-?\d+(?:\.\d+)?", value)
    return float(match.group()) if match else None


def parse_graph_records(text: str, delimiters: Delimiters = Delimiters()) -> ParsedRecords:
    parsed = ParsedRecords()
    for record in split_records(text, delimiters):
        fields = [_clean(f) for f in record.split(delimiters.tuple)]
        kind = fields[0].lower()
        if kind == "entity":
            if len(fields) < 4 or not normalize_name(fields[1]):
                parsed.malformed.append(f"entity record needs name, type, description: {record[:120]!r}")
                continue
            parsed.entities.append({
                "title": normalize_name(fields[1]),
                "type": normalize_name(fields[2]),
                "description": delimiters.tuple.join(fields[3:]).strip(),
            })
        elif kind == "relationship":
            if len(fields) < 4 or not normalize_name(fields[1]) or not normalize_name(fields[2]):
                parsed.malformed.append(
                    f"relationship record needs source, target, description: {record[:120]!r}")
                continue
            strength = parse_strength(fields[4]) if len(fields) >= 5 else None
            parsed.relationships.append({
                "source": normalize_name(fields[1]),
                "target": normalize_name(fields[2]),
                "description": fields[3],
                "strength": 1.0 if strength is None else strength,
            })
        else:
            parsed.malformed.append(f"unknown record kind {fields[0][:40]!r}")
    return parsed


CLAIM_FIELDS = ("subject_id", "object_id", "type", "status", "start_date", "end_date",
                "description", "source_text")


def parse_claim_records(text: str, delimiters: Delimiters = Delimiters()) -> ParsedRecords:
    """Claims: (SUBJECT<|>OBJECT<|>TYPE<|>STATUS<|>START<|>END<|>DESCRIPTION<|>SOURCE_TEXT)."""
    parsed = ParsedRecords()
    for record in split_records(text, delimiters):
        fields = [_clean(f) for f in record.split(delimiters.tuple)]
        if fields and fields[0].lower() == "claim":
            fields = fields[1:]
        if len(fields) < 7 or not fields[0]:
            parsed.malformed.append(f"claim record needs 8 fields: {record[:120]!r}")
            continue
        fields = (fields + [""])[:8]
        claim = dict(zip(CLAIM_FIELDS, fields))
        claim["subject_id"] = normalize_name(claim["subject_id"])
        claim["object_id"] = normalize_name(claim["object_id"]) if claim["object_id"] else "NONE"
        claim["type"] = normalize_name(claim["type"])
        claim["status"] = normalize_name(claim["status"])
        parsed.claims.append(claim)
    return parsed
