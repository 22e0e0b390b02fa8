"""Read input documents from a folder, a file or any fsspec URL into a documents table.

Every file ends up either as documents or in the `skipped` list with its reason; text that is not
valid in the configured encoding is decoded with the fallback encoding and reported, never lost.

File types are read by their `FORMATS` entry, one per suffix: a document format (bytes -> one
document with its title and metadata: pdf, docx, html, `documents.py`), a records format
(decoded text -> records whose `input.text_column` is the text: csv, json, jsonl), a table
format (bytes -> an Arrow table of records: parquet), or plain text (txt, md: one document
per file). A new format is a function of one of those shapes and one entry (and its suffix
in `input.file_types`).
"""

from __future__ import annotations

import bisect
import csv
import hashlib
import io
import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

import fsspec
import pyarrow as pa

from graphrag_ray.config import InputConfig
from graphrag_ray.errors import InputError
from graphrag_ray.input.documents import READERS as DOCUMENT_READERS, Read
from graphrag_ray.storage.atomic import is_local
from graphrag_ray.storage.parquet_io import parquet_from_bytes

# A local file whose modification time is this much older than the moment it is read is
# settled: its time is recorded with its hash, and an update takes the hash again for a file
# of the same size and time instead of reading it (`settled_time`).
SETTLED_S = 2.0

_BINARY_PROBE_BYTES = 8192


@dataclass
class LoadedInput:
    documents: pa.Table
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Each file read: path under the root, size and content hash (what an update compares).
    files: list[dict] = field(default_factory=list)


def document_id(source: str, row: object | None, text: str) -> str:
    """Stable id: the same file (path relative to the input root), record (its row number or
    `input.id_column` value) and text give the same id."""
    key = f"{source}\x00{'' if row is None else row}\x00{text}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def list_input_files(url: str, config: InputConfig
                     ) -> tuple[fsspec.AbstractFileSystem, str, list[str], list[int], list[dict]]:
    """(filesystem, root, input files in order, their sizes in bytes, the files of other types
    in the folder as skipped entries: a PDF or DOCX left out is said, not silently dropped;
    hidden files are not listed)."""
    try:
        fs, root = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise InputError(f"cannot open input {url}: {exc}") from None
    suffixes = tuple(f".{ext.lower().lstrip('.')}" for ext in config.file_types)
    try:
        if not fs.exists(root):
            raise InputError(f"input not found: {url}")
        ignored: list[dict] = []
        if fs.isfile(root):
            if not root.lower().endswith(suffixes):
                raise InputError(f"unsupported file type .{root.rsplit('.', 1)[-1]}: {url} "
                                 f"(input.file_types: {', '.join(config.file_types)})")
            found = {root: fs.info(root)}
            root = root.rsplit("/", 1)[0] if "/" in root else ""
        else:
            everything = fs.find(root, detail=True)
            found = {p: info for p, info in everything.items() if p.lower().endswith(suffixes)}
            supported = ", ".join(f".{ext}" for ext in config.file_types)
            ignored = [{"path": p[len(root):].lstrip("/"),
                        "reason": f"unsupported file type (input.file_types: {supported})"}
                       for p in sorted(everything) if p not in found
                       and not p.rsplit("/", 1)[-1].startswith(".")]
    except OSError as exc:  # denied, unreachable endpoint, bad credentials
        raise InputError(f"cannot list input {url}: {exc}") from None
    if not found:
        raise InputError(
            f"no input documents under {url} (looked for {', '.join('*' + s for s in suffixes)})"
        )
    files = sorted(found)
    return fs, root, files, [int(found[f].get("size") or 0) for f in files], ignored


DOCUMENT_SCHEMA = pa.schema([("id", pa.string()), ("title", pa.string()), ("text", pa.string()),
                             ("creation_date", pa.string()), ("metadata", pa.string())])


def relative_path(path: str, root: str) -> str:
    """A listed file's path under the input root: what a document's source and `update`
    name it by."""
    return path[len(root):].lstrip("/") if root and path.startswith(root) else path


def load_file(fs: fsspec.AbstractFileSystem, root: str, path: str,
              config: InputConfig) -> LoadedInput:
    """One input file's documents (in file order, without human_readable_id), or why it was
    skipped."""
    relative = relative_path(path, root)
    result = LoadedInput(documents=DOCUMENT_SCHEMA.empty_table())
    info = fs.info(path)  # before reading: a later change moves the time recorded here
    with fs.open(path, "rb") as handle:
        data = handle.read()
    result.files.append({"path": relative, "bytes": len(data),
                         "sha256": hashlib.sha256(data).hexdigest(),
                         "modified": settled_time(fs, info)})
    created = _creation_date(info)
    try:
        rows = _read_file(relative, data, config, result)
    except InputError as exc:
        result.skipped.append({"path": relative, "reason": str(exc)})
        return result
    rows.sort(key=lambda r: r["_row"])
    result.documents = pa.table({
        "id": [r["id"] for r in rows],
        "title": [r["title"] for r in rows],
        "text": [r["text"] for r in rows],
        "creation_date": [r.get("creation_date") or created for r in rows],
        "metadata": [json.dumps({"source": r["_source"], **r.get("metadata", {})}) for r in rows],
    }, schema=DOCUMENT_SCHEMA)
    return result


def load_documents(url: str, config: InputConfig) -> LoadedInput:
    """Every input file's documents, in file order, with human_readable_id."""
    fs, root, files, _, ignored = list_input_files(url, config)
    result = LoadedInput(documents=DOCUMENT_SCHEMA.empty_table(), skipped=list(ignored))
    tables = []
    for path in files:
        loaded = load_file(fs, root, path, config)
        result.files += loaded.files
        result.skipped += loaded.skipped
        result.warnings += loaded.warnings
        tables.append(loaded.documents)
    documents = pa.concat_tables(tables)
    if not documents.num_rows:
        reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in result.skipped[:10])
        raise InputError(f"no readable documents under {url} ({reasons})")
    result.documents = documents.add_column(
        1, "human_readable_id", pa.array(range(documents.num_rows), pa.int64()))
    return result


def settled_time(fs: fsspec.AbstractFileSystem, info: dict) -> float | None:
    """A local file's modification time, when it is `SETTLED_S` in the past (a file written
    in the same tick as it is read could change again without its time moving, on disks
    whose times are coarse); None otherwise, and on object stores, whose times are upload
    times and whose listing is not where a hash is saved."""
    modified = info.get("mtime")
    if not is_local(fs) or not isinstance(modified, (int, float)) \
            or time.time() - modified < SETTLED_S:
        return None
    return float(modified)


def _creation_date(info: dict) -> str:
    for key in ("created", "mtime", "LastModified", "last_modified"):
        value = info.get(key)
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(value, tz=timezone.utc).isoformat()
        if isinstance(value, datetime):
            return value.isoformat()
    return ""


def _read_file(relative: str, data: bytes, config: InputConfig, result: LoadedInput) -> list[dict]:
    if not data.strip():
        raise InputError("empty file")
    suffix = relative.lower().rsplit(".", 1)[-1]
    form = FORMATS.get(suffix)
    if form is None:
        raise InputError(f"unsupported file type .{suffix}")
    if form.table:
        return _records_to_rows(relative, form.table(data).to_pylist(), config)
    if form.document:
        text, title, metadata = form.document(data)
        return [{"id": document_id(relative, None, text),
                 "title": title or relative.rsplit("/", 1)[-1], "text": text,
                 "_source": relative, "_row": 0, "metadata": metadata}]
    bom_encoding = _byte_order_mark(data)
    if bom_encoding is None and b"\x00" in data[:_BINARY_PROBE_BYTES]:
        raise InputError("binary file (contains NUL bytes), not text")
    text = _decode_marked(relative, data, bom_encoding, result) if bom_encoding \
        else _decode(relative, data, config, result)
    if form.records:
        return _records_to_rows(relative, form.records(relative, text, config, result), config)
    return [{"id": document_id(relative, None, text), "title": relative.rsplit("/", 1)[-1],
             "text": text, "_source": relative, "_row": 0}]


_SNIFF_CHARS = 8192
_CSV_DELIMITERS = ",;\t|"
_MAX_BAD_CSV_RECORDS = 1000


def _csv_delimiter(text: str, config: InputConfig) -> str:
    if config.csv_delimiter:
        return config.csv_delimiter
    try:
        return csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=_CSV_DELIMITERS).delimiter
    except csv.Error:
        return ","


def _csv_records(relative: str, text: str, config: InputConfig,
                 result: LoadedInput) -> list[dict]:
    """The CSV's records under its header row. A malformed record (a quote never closed, text
    after a closing quote, a different number of fields) loses that record only: its first
    line is skipped, reading goes on from the next, and one warning names the lines."""
    delimiter = _csv_delimiter(text, config)
    lines = text.splitlines(keepends=True)
    header: list[str] | None = None
    records, bad = [], []
    start = 0  # the physical line reading (re)starts from
    while start < len(lines) and len(bad) < _MAX_BAD_CSV_RECORDS:
        reader = csv.reader(io.StringIO("".join(lines[start:]), newline=""),
                            delimiter=delimiter, strict=True)
        record_start = 0
        try:
            for row in reader:
                line = start + record_start + 1  # 1-based, where this record began
                record_start = reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if header is None:
                    header = row
                elif len(row) != len(header):
                    bad.append(f"line {line} has {len(row)} fields, the header {len(header)}")
                else:
                    records.append(dict(zip(header, row)))
            break
        except csv.Error as exc:
            bad.append(f"line {start + record_start + 1}: {exc}")
            start += record_start + 1
    if header is None:
        raise InputError("not a readable CSV: no header row")
    if bad and not records:
        raise InputError(f"not a readable CSV with delimiter {delimiter!r}: {bad[0]} "
                         "(set input.csv_delimiter)")
    if bad:
        shown = "; ".join(bad[:5]) + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
        result.warnings.append(f"{relative}: {len(bad)} malformed CSV records skipped: {shown}")
    return records


def _json_records(relative: str, text: str, config: InputConfig,
                  result: LoadedInput) -> list[dict]:
    """A JSON array of records (entries that are not objects are skipped and said), or one
    object."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg} (line {exc.lineno})") from None
    if isinstance(data, dict):
        return [data]
    if not isinstance(data, list):
        raise InputError("JSON is neither an array of records nor a record")
    records = [r for r in data if isinstance(r, dict)]
    if not records:
        raise InputError("the JSON array holds no record (object)")
    if len(records) < len(data):
        result.warnings.append(f"{relative}: {len(data) - len(records)} of {len(data)} array "
                               "entries are not objects and were skipped")
    return records


def _jsonl_records(relative: str, text: str, config: InputConfig,
                   result: LoadedInput) -> list[dict]:
    """One JSON object per line. A line that is not one (a truncated last line, a stray
    log line) loses that record only: the rest of the file is read, and one warning names
    the lines skipped."""
    records, bad = [], []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            # json's message without its position reads as cut off ("Unterminated string
            # starting at"): the column is said with it.
            bad.append(f"line {line_no} is not JSON ({exc.msg}: column {exc.colno})")
            continue
        if not isinstance(record, dict):
            bad.append(f"line {line_no} is not a JSON object")
            continue
        records.append(record)
    if bad and not records:
        raise InputError(f"no line is a JSON object; {bad[0]}")
    if bad:
        shown = "; ".join(bad[:5]) + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
        result.warnings.append(f"{relative}: {len(bad)} of {len(bad) + len(records)} records "
                               f"skipped: {shown}")
    return records


def _byte_order_mark(data: bytes) -> str | None:
    """The encoding a UTF-16/32 byte order mark announces (Windows tools write UTF-16 text
    with one; its NUL bytes are not binary)."""
    for mark, encoding in ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
                           (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(mark):
            return encoding
    return None


_UNDECODED = re.compile("[\udc80-\udcff]")  # bytes surrogateescape could not decode
_SHOWN_LINES = 10


def _line_numbers(text: str, positions: list[int]) -> list[int]:
    """1-based line numbers of character positions (in order)."""
    breaks = [m.start() for m in re.finditer("\n", text)]
    return [bisect.bisect_right(breaks, p) + 1 for p in positions]


def _shown(lines: list[int]) -> str:
    distinct = sorted(set(lines))
    more = len(distinct) - _SHOWN_LINES
    return ", ".join(map(str, distinct[:_SHOWN_LINES])) + (f" and {more} more" if more > 0 else "")


def _decode_marked(relative: str, data: bytes, encoding: str, result: LoadedInput) -> str:
    """A file whose byte order mark names its encoding is read in it; a sequence that is
    not (a truncated copy, an odd byte count) is replaced and said, as a bad byte in UTF-8
    is: the rest of the file is still text."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        result.warnings.append(
            f"{relative}: not valid {encoding} after its byte order mark (byte {exc.start}: "
            f"{exc.reason}); read as {encoding}, each bad sequence replaced by U+FFFD")
        return data.decode(encoding, errors="replace")


def _decode(relative: str, data: bytes, config: InputConfig, result: LoadedInput) -> str:
    """The file's text. The encoding is decided for the file as a whole: a UTF-8 file with a
    few bad bytes (a truncated copy, one pasted Latin-1 character) stays UTF-8 with each bad
    byte replaced and its line reported, because decoding all of it as cp1252 would turn
    every correct accented letter and quote into mojibake (`â€™`). Only a file with no valid
    UTF-8 multi-byte sequence, or fewer of them than bad bytes, is read in
    `fallback_encoding`. Text is never dropped."""
    declared = config.encoding.lower().replace("_", "-")
    if declared not in ("utf-8", "utf8"):
        try:
            return data.decode(config.encoding)
        except UnicodeDecodeError as exc:
            text = data.decode(config.fallback_encoding, errors="replace")
            result.warnings.append(
                f"{relative}: not valid {config.encoding} (byte {exc.start}); decoded as "
                f"{config.fallback_encoding}{_replaced(text)}")
            return text
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    escaped = data.decode("utf-8-sig", errors="surrogateescape")
    bad = [m.start() for m in _UNDECODED.finditer(escaped)]
    non_ascii = len(escaped) - len(escaped.encode("ascii", errors="ignore"))
    multibyte = non_ascii - len(bad)
    if multibyte >= len(bad):
        result.warnings.append(
            f"{relative}: not valid utf-8 at {len(bad):,} byte(s) (line "
            f"{_shown(_line_numbers(escaped, bad))}); read as UTF-8, each bad byte replaced "
            "by U+FFFD")
        return _UNDECODED.sub("\ufffd", escaped)
    text = data.decode(config.fallback_encoding, errors="replace")
    result.warnings.append(
        f"{relative}: not valid utf-8 ({len(bad):,} bytes outside it, {multibyte:,} valid "
        f"multi-byte characters); the whole file decoded as {config.fallback_encoding}"
        f"{_replaced(text)}")
    return text


def _replaced(text: str) -> str:
    """What the warning adds when the fallback encoding itself lacks some of the file's
    bytes (each decoded as U+FFFD: cp1252 and Latin-1 decode nothing else to it)."""
    missing = text.count("\ufffd")
    return f", {missing:,} byte(s) it does not define replaced by U+FFFD" if missing else ""


def _records_to_rows(relative: str, records: list[dict], config: InputConfig) -> list[dict]:
    for column, key in ((config.text_column, "text_column"), (config.id_column, "id_column")):
        if records and column is not None and column not in records[0]:
            columns = ", ".join(map(str, records[0].keys()))
            raise InputError(f"has no column {column!r} (columns: {columns}); "
                             f"set input.{key}")
    rows = []
    for index, record in enumerate(records):
        text = record.get(config.text_column)
        if text is None or not str(text).strip():
            continue
        text = str(text)
        title = record.get(config.title_column)
        title = str(title) if title not in (None, "") else f"{relative}#{index}"
        metadata = {k: v for k, v in record.items()
                    if k not in (config.text_column, config.title_column)}
        identity = record.get(config.id_column) if config.id_column else None
        rows.append({
            "id": document_id(relative, index if identity in (None, "") else identity, text),
            "title": title, "text": text,
            "_source": relative, "_row": index,
            "metadata": json.loads(json.dumps(metadata, default=str)),
        })
    if not rows:
        raise InputError(f"no non-empty {config.text_column!r} values")
    return rows


@dataclass(frozen=True)
class Format:
    """How one file type is read (see the module's docstring); no reader: plain text."""
    document: Callable[[bytes], Read] | None = None
    records: Callable[[str, str, InputConfig, LoadedInput], list[dict]] | None = None
    table: Callable[[bytes], pa.Table] | None = None


FORMATS: dict[str, Format] = {
    "txt": Format(), "md": Format(),
    "csv": Format(records=_csv_records), "json": Format(records=_json_records),
    "jsonl": Format(records=_jsonl_records),
    "parquet": Format(table=parquet_from_bytes),
    **{suffix: Format(document=read) for suffix, read in DOCUMENT_READERS.items()},
}
