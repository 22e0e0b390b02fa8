"""Each chunk's extraction kept with the published version (`_extractions`), so that an update
(`index/update`) pays only for chunks whose text is new, whether or not the response cache is
still there.

A kept row is keyed by the hash of the chunk's text: extraction depends on the text alone
(given the settings), not on where the chunk sits, so a chunk that moved (a row inserted above
it in a CSV, a paragraph added before it) is still found. Only successful extractions are kept;
a failed chunk is tried again. The rows are valid for the extraction settings they were made
with (`extraction_fingerprint`); an update with other settings extracts everything anew.

    <version>/_extractions/batch-<hash of its chunk ids>.parquet
"""

from __future__ import annotations

import hashlib
import json
import threading

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.prompts_loader import prompt_version
from graphrag_ray.storage.parquet_io import parquet_parts, write_parquet
from graphrag_ray.storage.row_reader import RowReader

KEPT_EXTRACTIONS = "_extractions"
# What is kept of an extraction row (`stage.EXTRACTION_SCHEMA`): not its usage, not its id.
KEPT_COLUMNS = ["text_hash", "entities", "relationships", "claims", "malformed_records",
                "malformed_reasons"]
EXTRACTION_PROMPTS = ("extract_graph", "glean_check", "glean_continue", "extract_claims")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def extraction_fingerprint(config: GraphRagConfig, prompts: dict[str, str]) -> str:
    """Everything an extraction's result depends on besides the chunk's text."""
    settings = {
        "extraction": config.extraction.model_dump(mode="json"),
        "claims": config.claims.model_dump(mode="json") if config.claims.enabled else None,
        "model": config.llm.model, "temperature": config.llm.temperature,
        "tokenizer": config.tokenizer.encoding,
        "prompts": {name: prompt_version(prompts[name]) for name in EXTRACTION_PROMPTS
                    if name in prompts},
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def keep_extractions(extraction: pa.Table, kept_url: str, name: str) -> None:
    """The batch's successful rows (with their records) written under `kept_url`."""
    write_kept(extraction.filter(pc.equal(extraction.column("status"), "ok")).select(
        KEPT_COLUMNS), kept_url, name)


def write_kept(rows: pa.Table, kept_url: str, name: str) -> None:
    """Kept rows (KEPT_COLUMNS) written under `kept_url` as `name`: a build's, or those an
    adoption makes of another tool's extractions."""
    if rows.num_rows:
        fs, root = fsspec.core.url_to_fs(kept_url)
        write_parquet(fs, f"{root}/{name}", rows)


class KeptExtractions:
    """The previous version's kept rows, looked up by text hash without holding them: each
    worker holds an index of the hashes (their first 8 bytes as sorted integers, with each
    one's row number across the kept files: 16 bytes a chunk) and reads a row's Parquet row
    group when a chunk needs it, the last 64 MB of groups kept (an update's chunks come in
    corpus order, as the kept files were written, so a group serves its neighbours). Holding
    every kept row as Python objects took gigabytes in every worker at scale. Built on first use,
    once per worker (threads share it)."""

    def __init__(self, kept_url: str):
        self.kept_url = kept_url
        self._index: tuple[RowReader | None, np.ndarray, np.ndarray] | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[RowReader | None, np.ndarray, np.ndarray]:
        with self._lock:
            if self._index is None:
                fs, root = fsspec.core.url_to_fs(self.kept_url)
                parts = parquet_parts(fs, root)
                if not parts:
                    self._index = (None, np.empty(0, np.uint64), np.empty(0, np.int64))
                    return self._index
                reader = RowReader(fs, parts)
                keys = np.fromiter((_key(h) for group in reader.groups(["text_hash"])
                                    for h in group.column("text_hash").to_pylist()),
                                   dtype=np.uint64, count=len(reader))
                order = np.argsort(keys, kind="stable")
                self._index = (reader, keys[order], order)
            return self._index

    def get(self, text: str) -> dict | None:
        """The kept extraction of a chunk with this text, or None."""
        reader, keys, rows = self._index or self._load()
        if reader is None:
            return None
        wanted = text_hash(text)
        key = _key(wanted)
        at = int(np.searchsorted(keys, key))
        # Rows whose hashes share the first 8 bytes (distinct texts: almost never) are told
        # apart by the whole hash.
        while at < len(keys) and keys[at] == key:
            row = reader.take([int(rows[at])], KEPT_COLUMNS).to_pylist()[0]
            if row.pop("text_hash") == wanted:
                return row
            at += 1
        return None


def _key(hex_hash: str) -> int:
    return int(hex_hash[:16], 16)
