"""The lexical index of an index version's text units: BM25 (Robertson's, Lucene's IDF) over
each unit's document title and text, read as content words (`terms.content_terms`: any
script, accents folded, Chinese and Japanese as character pairs, no stopwords).

Stored as Parquet beside the tables, so it lives on object storage like them and a question
reads only the row groups holding its words (range reads, none of the index in memory):

    <version>/lexical/segment-<name>.parquet   term, unit (row in its units file), tf;
                                               sorted by term, in small row groups
    <version>/lexical/units-<name>.parquet     unit id, length (its words)
    <version>/lexical/index.json               the segments, live units and their length,
                                               and the units deleted since (`deleted`)

An update adds a segment for its new units and lists the units it removed as deleted (a
segment is never rewritten); when deletions or segments pile up it writes the index anew
(`index/write/lexical.py`). Scores come from term frequencies, each term's document
frequency counted over live units at query time, and the live units' count and mean
length, so a segment stays valid whatever joins the index later.
"""

from __future__ import annotations

import bisect
import io
import json
import math
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphrag_ray.storage.atomic import write_atomically
from graphrag_ray.storage.parquet_io import open_input
from graphrag_ray.terms import content_terms

LEXICAL = "lexical"
K1, B = 1.2, 0.75  # BM25's usual constants (Robertson and Zaragoza's range; Lucene's)
ROW_GROUP_ROWS = 16_384  # a question reads a term's group or two: ~100 KB each
UNITS_AT_ONCE = 2048  # units whose postings are Python objects at one time
POSTINGS_SCHEMA = pa.schema([("term", pa.string()), ("unit", pa.int32()), ("tf", pa.int32())])
UNITS_SCHEMA = pa.schema([("id", pa.string()), ("length", pa.int32())])


def unit_terms(title: str, text: str) -> list[str]:
    """What the index reads of a unit: its document's title (what the document is about;
    in a wiki, the name a question asks by) and its text."""
    return content_terms(f"{title}\n{text}")


def segment_tables(units: pa.Table) -> tuple[pa.Table, pa.Table]:
    """A segment's postings (sorted by term, then unit) and units tables, from `units`: id,
    title, text. Words are numbered as they come and a batch of units at a time becomes
    arrays: a large part's postings as Python lists would hold gigabytes."""
    vocabulary: dict[str, int] = {}
    words, rows, counts = [], [], []
    lengths = np.zeros(units.num_rows, dtype=np.int32)
    for start in range(0, units.num_rows, UNITS_AT_ONCE):
        batch = units.slice(start, UNITS_AT_ONCE)
        found_words, found_rows, found_counts = [], [], []
        for row, (title, text) in enumerate(zip(batch.column("title").to_pylist(),
                                                batch.column("text").to_pylist()), start):
            terms = unit_terms(title or "", text or "")
            lengths[row] = len(terms)
            for term, count in Counter(terms).items():
                found_words.append(vocabulary.setdefault(term, len(vocabulary)))
                found_rows.append(row)
                found_counts.append(count)
        words.append(np.array(found_words, dtype=np.int32))
        rows.append(np.array(found_rows, dtype=np.int32))
        counts.append(np.array(found_counts, dtype=np.int32))
    words, rows, counts = (np.concatenate(a) if a else np.zeros(0, np.int32)
                           for a in (words, rows, counts))
    names = pa.array(list(vocabulary), pa.string())
    place = np.empty(len(names), dtype=np.int64)  # each word's place in term order
    place[pc.sort_indices(names).to_numpy()] = np.arange(len(names))
    order = np.lexsort((rows, place[words]))
    postings = pa.table({"term": names.take(pa.array(words[order])),
                         "unit": pa.array(rows[order]), "tf": pa.array(counts[order])},
                        schema=POSTINGS_SCHEMA)
    return postings, pa.table({"id": units.column("id"), "length": pa.array(lengths)},
                              schema=UNITS_SCHEMA)


def write_segment(fs: fsspec.AbstractFileSystem, folder: str, name: str, ids: list[str],
                  titles: list[str], texts: list[str]) -> dict:
    """The segment `name` of these units written under `folder` (`write_segment_of`)."""
    return write_segment_of(fs, folder, name, pa.table({
        "id": pa.array(ids, pa.string()), "title": pa.array(titles, pa.string()),
        "text": pa.array(texts, pa.string())}))


def write_segment_of(fs: fsspec.AbstractFileSystem, folder: str, name: str,
                     units: pa.Table) -> dict:
    """The segment `name` of `units` (id, title, text) written under `folder`; its figures
    for index.json."""
    postings, units = segment_tables(units)
    for table, kind in ((postings, "segment"), (units, "units")):
        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd", row_group_size=ROW_GROUP_ROWS,
                       write_statistics=["term"] if kind == "segment" else False)
        write_atomically(fs, f"{folder}/{kind}-{name}.parquet", buffer.getvalue())
    return {"name": name, "units": units.num_rows,
            "length": int(pc.sum(units.column("length")).as_py() or 0),
            "postings": postings.num_rows}


def write_catalog(fs: fsspec.AbstractFileSystem, folder: str, segments: list[dict],
                  deleted: list[str], deleted_length: int) -> dict:
    """index.json: the segments, and the units of theirs deleted since (with their words)."""
    catalog = {"format": 1, "k1": K1, "b": B, "segments": segments, "deleted": sorted(deleted),
               "deleted_length": deleted_length}
    write_atomically(fs, f"{folder}/index.json", json.dumps(catalog).encode("utf-8"))
    return catalog


def read_catalog(fs: fsspec.AbstractFileSystem, folder: str) -> dict | None:
    try:
        return json.loads(fs.cat_file(f"{folder}/index.json"))
    except FileNotFoundError:
        return None


@dataclass
class _Segment:
    """One segment opened: its units and where each row group's terms begin and end."""
    fs: fsspec.AbstractFileSystem
    path: str
    metadata: pq.FileMetaData
    ids: list[str]
    lengths: np.ndarray
    live: np.ndarray  # bool per unit: not deleted since
    first_terms: list[str] = field(default_factory=list)
    last_terms: list[str] = field(default_factory=list)

    def read_group(self, group: int) -> pa.Table:
        """One row group, through a file opened for this read: a Parquet reader shared by
        threads (a served index's questions) mixes their reads up."""
        with open_input(self.fs, self.path) as handle:
            return pq.ParquetFile(handle, metadata=self.metadata).read_row_group(
                group, use_threads=False)

    def groups_of(self, term: str) -> list[int]:
        """The row groups whose term range holds `term` (sorted by term: one or two)."""
        start = bisect.bisect_left(self.last_terms, term)
        end = bisect.bisect_right(self.first_terms, term)
        return list(range(start, end))


class LexicalIndex:
    """A version's lexical index, opened: `search(question, k)` -> [(unit id, score)], best
    first. Row groups a question reads are kept (the last `CACHE_GROUPS`), so a served
    index answers repeated words from memory."""

    CACHE_GROUPS = 512

    def __init__(self, fs: fsspec.AbstractFileSystem, folder: str, catalog: dict):
        self.catalog = catalog
        deleted = set(catalog["deleted"])
        self.segments = [self._open(fs, folder, s["name"], deleted) for s in catalog["segments"]]
        self.units = sum(int(s.live.sum()) for s in self.segments)
        length = sum(int(s.lengths[s.live].sum()) for s in self.segments)
        self.mean_length = length / self.units if self.units else 1.0
        self.k1, self.b = catalog.get("k1", K1), catalog.get("b", B)
        self._groups: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._where: dict[str, tuple[int, int]] | None = None

    @staticmethod
    def _open(fs, folder: str, name: str, deleted: set[str]) -> _Segment:
        with fs.open(f"{folder}/units-{name}.parquet", "rb") as handle:
            units = pq.read_table(handle, use_threads=False)
        ids = units.column("id").to_pylist()
        path = f"{folder}/segment-{name}.parquet"
        with open_input(fs, path) as handle:
            metadata = pq.read_metadata(handle)
        segment = _Segment(fs, path, metadata, ids,
                           units.column("length").to_numpy().astype(np.float64),
                           np.array([i not in deleted for i in ids], dtype=bool))
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(0).statistics
            segment.first_terms.append(stats.min if stats is not None else "")
            segment.last_terms.append(stats.max if stats is not None else "\U0010ffff")
        return segment

    def _group(self, index: int, group: int) -> pa.Table:
        key = (index, group)
        with self._lock:
            if key in self._groups:
                self._groups.move_to_end(key)
                return self._groups[key]
        table = self.segments[index].read_group(group)
        with self._lock:
            self._groups[key] = table
            while len(self._groups) > self.CACHE_GROUPS:
                self._groups.popitem(last=False)
        return table

    def postings(self, term: str) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(segment, unit rows, tfs) of the live units holding `term`."""
        found = []
        for index, segment in enumerate(self.segments):
            for group in segment.groups_of(term):
                table = self._group(index, group)
                rows = table.filter(pc.equal(table.column("term"), term))
                if not rows.num_rows:
                    continue
                units = rows.column("unit").to_numpy()
                keep = segment.live[units]
                found.append((index, units[keep], rows.column("tf").to_numpy()[keep]))
        return found

    def _scores(self, terms: list[str]) -> list[np.ndarray | None]:
        """Per segment, each unit's BM25 score for `terms` (None: no unit of it matched)."""
        scores: list[np.ndarray | None] = [None] * len(self.segments)
        for term, times in Counter(terms).items():
            postings = self.postings(term)
            frequency = sum(len(units) for _, units, _ in postings)
            if not frequency:
                continue
            idf = math.log(1 + (self.units - frequency + 0.5) / (frequency + 0.5))
            for index, units, tfs in postings:
                segment = self.segments[index]
                norm = self.k1 * (1 - self.b + self.b * segment.lengths[units] / self.mean_length)
                if scores[index] is None:
                    scores[index] = np.zeros(len(segment.ids))
                np.add.at(scores[index], units, times * idf * tfs * (self.k1 + 1) / (tfs + norm))
        return scores

    def search(self, question: str, k: int = 100,
               terms: list[str] | None = None) -> list[tuple[str, float]]:
        """The `k` best units for `question` (or its `terms`), with their scores."""
        found = []
        for index, values in enumerate(self._scores(terms or content_terms(question))):
            if values is None:
                continue
            top = np.flatnonzero(values)
            top = top[np.argsort(-values[top], kind="stable")[:k]]
            found += [(float(values[unit]), index, int(unit)) for unit in top]
        found.sort(key=lambda item: (-item[0], item[1], item[2]))
        return [(self.segments[index].ids[unit], score) for score, index, unit in found[:k]]

    def score_units(self, terms: list[str], unit_ids: list[str]) -> dict[str, float]:
        """The BM25 scores of `unit_ids` for `terms` (units that match none: absent)."""
        if self._where is None:
            self._where = {unit: (index, row) for index, segment in enumerate(self.segments)
                           for row, unit in enumerate(segment.ids) if segment.live[row]}
        scores = self._scores(terms)
        found = {}
        for unit in unit_ids:
            index, row = self._where.get(unit, (None, None))
            if index is not None and scores[index] is not None and scores[index][row] > 0:
                found[unit] = float(scores[index][row])
        return found


def open_lexical(fs: fsspec.AbstractFileSystem, folder: str) -> LexicalIndex | None:
    """The lexical index under `folder`, or None (a version built before it existed)."""
    catalog = read_catalog(fs, folder)
    return LexicalIndex(fs, folder, catalog) if catalog is not None else None
