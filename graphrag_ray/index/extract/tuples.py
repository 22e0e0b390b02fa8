"""Parse the delimited-tuple format shared across GraphRAG tools.

    ("entity"<|>NAME<|>TYPE<|>DESCRIPTION)##("relationship"<|>SRC<|>TGT<|>DESCRIPTION<|>STRENGTH)
    ...<|COMPLETE|>

LLMs bend the format: records on separate lines without `##`, stray quotes, missing strength,
or JSON instead of tuples (an object of entity and relationship lists, a list of records, a
list of tuples as arrays). We accept those and count every record we cannot use, with its
reason.
"""

from __future__ import annotations

import ast
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
    malformed: list[str] = field(default_factory=list)  # "reason: the record", each

    def extend(self, other: "ParsedRecords") -> None:
        self.entities.extend(other.entities)
        self.relationships.extend(other.relationships)
        self.claims.extend(other.claims)
        self.malformed.extend(other.malformed)


def malformed_reason(entry: str) -> str:
    """The reason of a `ParsedRecords.malformed` entry ("reason: the record"), for counts."""
    return entry.split(": ", 1)[0]


def normalize_name(name: str) -> str:
    """Entity names match exactly after this: quotes and spacing removed, upper case."""
    name = name.strip().strip("\"'`").strip()
    return re.sub(r"\s+", " ", name).upper()


def _clean(value: str) -> str:
    # A stray angle bracket against a quote is the prompt's <slot> syntax leaking: "Analyst">
    value = re.sub(r"^<(?=[\"'])|(?<=[\"'])>$", "", value.strip())
    return value.strip("\"'").strip()


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


# Names models give the record kinds of the graph prompt.
_ENTITY_KINDS = {"entity"}
_RELATIONSHIP_KINDS = {"relationship", "relation"}


# Program code some models write instead of answering: its string templates look like records.
_CODE_BLOCK = re.compile(
    r"```(?:python|py|javascript|js|typescript|ts|java|bash|sh)\b.*?(?:```|$)",
    re.DOTALL | re.IGNORECASE)


def find_graph_records(text: str, delimiters: Delimiters) -> list[str]:
    """The graph records in a reply, each as its fields joined by the tuple delimiter.

    Records are found where they start, not by splitting on the record delimiter: real
    replies put them in numbered lists under markdown headings, wrap the record delimiter in
    bold (`**##**`), drop the parentheses, or write prose around them. A record starts at an
    opening parenthesis followed by a kind and the tuple delimiter, or at a line start (or
    after a record delimiter) with a known kind and no parenthesis; it runs to the closing
    parenthesis that ends its line, else to the record delimiter or the line's end. Text
    outside records is not a record and is not counted.
    """
    text = _CODE_BLOCK.sub("", text.split(delimiters.completion, 1)[0])
    tup, rec = re.escape(delimiters.tuple), re.escape(delimiters.record)
    kinds = "|".join(sorted(_ENTITY_KINDS | _RELATIONSHIP_KINDS, key=len, reverse=True))
    quote = "[\"'`]?"
    start = re.compile(
        rf"\(\s*{quote}[A-Za-z_][\w ]{{0,40}}?{quote}\s*{tup}"  # ("kind"<|>
        rf"|(?:^|(?<={rec})|(?<=\n))[\s*#>\-\d.)]*?(?<![\w\"'`]){quote}(?:{kinds}){quote}\s*{tup}",
        re.IGNORECASE)
    starts = [m.start() for m in start.finditer(text)]
    records = []
    for begin, end in zip(starts, starts[1:] + [len(text)]):
        span = text[begin:end].lstrip(" \t\r\n*#>-0123456789.)")  # list markers, markdown
        opened = span.startswith("(")
        if opened:
            span = span[1:].lstrip()
            closing = re.search(rf"\)[\s*,;]*?(?:{rec}|\n|$)", span)
            if closing:
                span = span[:closing.start()]
            else:  # cut short (the reply hit its length limit) or closed by the delimiter
                span = re.split(rf"{rec}|\n", span, maxsplit=1)[0]
        else:
            span = re.split(rf"{rec}|\n", span, maxsplit=1)[0].rstrip(" )")
        records.append(span.strip().rstrip("*").strip())
    return records


def parse_graph_records(text: str, delimiters: Delimiters = Delimiters()) -> ParsedRecords:
    records = find_graph_records(text, delimiters)
    parsed = _parse_tuples(records, delimiters)
    if not (parsed.entities or parsed.relationships) and ("{" in text or "[" in text):
        from_json = _parse_json_records(text, delimiters)
        if from_json is not None:
            return from_json
    if not records and text.split(delimiters.completion, 1)[0].strip():
        parsed.malformed.append(f"reply has no records: {text.strip()[:120]!r}")
    return parsed


# A field that is the prompt's own slot, as models echo the format before answering:
# ("entity"<|><entity_name><|><entity_type><|>...).
# A record tag that is a type word, in a record of an entity's four fields.
_TYPE_AS_TAG = re.compile(r"[^\W\d_][\w -]{0,39}")
_DELIMITER_BITS = re.compile(r"[<>|]")  # a record garbled by its delimiters is not one
_PLACEHOLDER = re.compile(r"^(?:<\s*[\w ]+\s*>|\{\s*[\w ]+\s*\})$")


def _parse_tuples(records: list[str], delimiters: Delimiters) -> ParsedRecords:
    parsed = ParsedRecords()
    for record in records:
        fields = [_clean(f) for f in record.split(delimiters.tuple)]
        kind = fields[0].lower()
        if any(_PLACEHOLDER.match(f) for f in fields[1:3]):
            parsed.malformed.append(f"the format's placeholder, not a record: {record[:120]!r}")
        elif kind in _ENTITY_KINDS:
            if len(fields) < 4 or not normalize_name(fields[1]):
                parsed.malformed.append(f"entity record needs name, type, description: {record[:120]!r}")
                continue
            parsed.entities.append({
                "title": normalize_name(fields[1]),
                "type": normalize_name(fields[2]),
                "description": delimiters.tuple.join(fields[3:]).strip(),
            })
        elif kind in _RELATIONSHIP_KINDS:
            if len(fields) < 4 or not normalize_name(fields[1]) or not normalize_name(fields[2]):
                parsed.malformed.append(
                    f"relationship record needs source, target, description: {record[:120]!r}")
                continue
            # The strength is the last field: LightRAG-style prompts put keywords before it.
            strength = parse_strength(fields[-1]) if len(fields) >= 5 else None
            parsed.relationships.append({
                "source": normalize_name(fields[1]),
                "target": normalize_name(fields[2]),
                "description": fields[3],
                "strength": 1.0 if strength is None else strength,
            })
        elif len(fields) == 4 and _TYPE_AS_TAG.fullmatch(fields[0]) and \
                normalize_name(fields[1]) and not _DELIMITER_BITS.search(fields[1] + fields[2]):
            # An entity whose type took the tag's place: ("event"<|>NAME<|>"event"<|>...)
            # (Qwen 2.5 writes a share of its entities so).
            parsed.entities.append({"title": normalize_name(fields[1]),
                                    "type": normalize_name(fields[2] or fields[0]),
                                    "description": fields[3].strip()})
        else:
            parsed.malformed.append(f"unknown record kind: {fields[0][:40]!r}")
    return parsed


# The keys models use for each field when they answer in JSON.
_JSON_KEYS = {
    "kind": ("type", "kind", "record_type", "record"),
    "name": ("name", "entity_name", "entity", "title", "id"),
    "entity_type": ("entity_type", "type", "category", "label"),
    "description": ("description", "entity_description", "relationship_description", "desc"),
    "source": ("source", "source_entity", "src", "from", "head", "subject"),
    "target": ("target", "target_entity", "tgt", "to", "tail", "object"),
    "strength": ("strength", "relationship_strength", "weight", "score"),
}


def _first(record: dict, field: str) -> str:
    for key in _JSON_KEYS[field]:
        value = record.get(key)
        if value not in (None, ""):
            return str(value)
    return ""


def _parse_json_records(text: str, delimiters: Delimiters) -> ParsedRecords | None:
    """Records from a JSON reply, as the tuple parser would give them; None when the reply
    holds no JSON value."""
    import json

    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:].strip())
    except ValueError:
        # Models asked for records sometimes write a Python list of dicts (single quotes).
        end = max(text.rfind("}"), text.rfind("]"))
        try:
            value = ast.literal_eval(text[start:end + 1])
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    entities, relationships, others = [], [], []
    if isinstance(value, dict):
        lists = {key.lower(): items for key, items in value.items() if isinstance(items, list)}
        entities = [r for key in ("entities", "nodes") for r in lists.get(key, [])]
        relationships = [r for key in ("relationships", "relations", "edges")
                         for r in lists.get(key, [])]
        if not (entities or relationships):
            others = [value]
    elif isinstance(value, list):
        others = value
    for record in others:
        if isinstance(record, list) and record:  # a tuple as an array
            as_tuple = _parse_tuples([delimiters.tuple.join(map(str, record))], delimiters)
            entities.extend({"name": e["title"], "entity_type": e["type"],
                             "description": e["description"]} for e in as_tuple.entities)
            relationships.extend(as_tuple.relationships)  # same keys as a JSON record's
            continue
        if not isinstance(record, dict):
            continue
        kind = _first(record, "kind").lower()
        if kind == "relationship" or (_first(record, "source") and _first(record, "target")):
            relationships.append(record)
        elif kind == "entity" or _first(record, "name"):
            entities.append(record)
    parsed = ParsedRecords()
    for record in entities:
        if not isinstance(record, dict):
            continue
        name = normalize_name(_first(record, "name"))
        if not name:
            parsed.malformed.append(f"JSON entity without a name: {str(record)[:120]!r}")
            continue
        entity_type = _first(record, "entity_type")
        if entity_type.lower() == "entity":  # "type" named the record's kind
            entity_type = str(record.get("entity_type") or record.get("category") or "")
        parsed.entities.append({"title": name, "type": normalize_name(entity_type),
                                "description": _first(record, "description").strip()})
    for record in relationships:
        if not isinstance(record, dict):
            continue
        source, target = normalize_name(_first(record, "source")), \
            normalize_name(_first(record, "target"))
        if not (source and target):
            parsed.malformed.append(
                f"JSON relationship needs source and target: {str(record)[:120]!r}")
            continue
        strength = parse_strength(_first(record, "strength"))
        parsed.relationships.append({"source": source, "target": target,
                                     "description": _first(record, "description").strip(),
                                     "strength": 1.0 if strength is None else strength})
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
