"""The embeddings stage: entity descriptions, text units and community reports as vectors, for
the query methods that retrieve by similarity (local, DRIFT, basic).

Stored beside the other tables as `embeddings_<name>` (id, vector), written in parts by the
workers that compute them (the vectors never pass through the driver); the query side searches
them brute force (one matrix product), which is what these sizes need: a hundred thousand
vectors fit in memory and a query takes milliseconds.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

import fsspec
import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.index.graph.description_blocks import read_descriptions
from graphrag_ray.llm.accounting import USAGE_SCHEMA_FIELDS, table_usage, usage_row
from graphrag_ray.llm.client import LLMServices, Usage
from graphrag_ray.llm.embedding_methods import Embedder
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet

EMBEDDING_WORK_SCHEMA = pa.schema([("table", pa.string()), ("part", pa.int64()),
                                   ("id", pa.string()), ("text", pa.string())])
EMBEDDING_RESULT_SCHEMA = pa.schema([("table", pa.string()), ("rows", pa.int64()),
                                     ("dimensions", pa.int64()), *USAGE_SCHEMA_FIELDS])
EMBEDDING_SCHEMA = pa.schema([("id", pa.string()), ("vector", pa.list_(pa.float32()))])
ROWS_PER_PART = 1024


def embedding_texts(reports: pa.Table, entity_parts) -> Iterator[
        tuple[str, list[str], list[str]]]:
    """(table name, ids, texts) of the entities and reports, a piece at a time: entities come
    part by part from storage (`entity_parts`: id, title, description). A carried-down
    community's report is its child's: each distinct text appears once, with all its ids."""
    for entities in entity_parts:
        yield (schema.ENTITY_DESCRIPTION_EMBEDDINGS, entities.column("id").to_pylist(),
               [f"{title}: {description}" for title, description in zip(
                   entities.column("title").to_pylist(),
                   entities.column("description").to_pylist())])
    ids_by_text: dict[str, list[str]] = {}
    for report_id, text in zip(reports.column("id").to_pylist(),
                               reports.column("full_content").to_pylist()):
        ids_by_text.setdefault(text, []).append(report_id)
    yield (schema.REPORT_EMBEDDINGS, [i for ids in ids_by_text.values() for i in ids],
           [text for text, ids in ids_by_text.items() for _ in ids])


class EmbeddingWorker:
    """A batch is one part of one table: its vectors are written straight to the index
    version (`<table>/part-<number>.parquet`), and one row of counts and usage comes back.
    The texts come in the batch (`text`), or, for entities, as a `title` and the address of
    the description in the blocks of `description_blocks` (`block`, `row`)."""

    def __init__(self, config: GraphRagConfig, version_url: str,
                 services: LLMServices | None = None):
        self.embedder = Embedder(config.embeddings, services)
        self.fs, self.root = fsspec.core.url_to_fs(version_url)

    def __call__(self, batch: pa.Table, blocks: list[pa.Table] | None = None) -> pa.Table:
        if blocks is not None:
            texts = [f"{title}: {description}" for title, description in zip(
                batch.column("title").to_pylist(), read_descriptions(blocks, zip(
                    batch.column("block").to_pylist(), batch.column("row").to_pylist())))]
        else:
            texts = batch.column("text").to_pylist()
        embedder = self.embedder.scoped()
        table, part = batch.column("table")[0].as_py(), batch.column("part")[0].as_py()
        vectors = embedder.embed(texts, summary=table != schema.TEXT_UNIT_EMBEDDINGS)
        rows = pa.table({"id": batch.column("id"),
                         "vector": pa.array(list(vectors), pa.list_(pa.float32()))},
                        schema=EMBEDDING_SCHEMA)
        write_parquet(self.fs, f"{self.root}/{table}/part-{part:019d}.parquet", rows)
        return pa.Table.from_pylist([{"table": table, "rows": batch.num_rows,
                                      "dimensions": int(vectors.shape[1]),
                                      **usage_row(embedder.usage)}],
                                    schema=EMBEDDING_RESULT_SCHEMA)


EMBEDDING_TABLES = (schema.ENTITY_DESCRIPTION_EMBEDDINGS, schema.REPORT_EMBEDDINGS,
                    schema.TEXT_UNIT_EMBEDDINGS)


@dataclass
class _Pending:
    """Rows of one table waiting to be sent: texts, or titles with description addresses
    (each row's block handle and row)."""
    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    addresses: list[tuple[object, int]] = field(default_factory=list)
    since: float = 0.0


class EmbeddingFeed:
    """The embedding tables, written part by part as their texts become final: one thread
    owns the pool and sends what the stages queue (`add`, `add_addressed`), so a stage never
    waits for the embeddings. Small additions (a report, a few summaries) are gathered into
    parts of at least `batch_rows` rows, or sent after `linger_s`; parts of at most
    `ROWS_PER_PART` rows are numbered in the order they were queued (or from `first_part`),
    so a table reads back in its source's order. At most two pool-fulls of parts are in
    flight, so the texts waiting are a few parts' worth, not the corpus."""

    def __init__(self, config: GraphRagConfig, staged: IndexVersion, services: LLMServices,
                 pool: WorkerPool, linger_s: float = 2.0):
        self.pool = pool
        self.key = pool.bind(EmbeddingWorker, {"config": config,
                                               "version_url": staged.url_of(""),
                                               "services": services})
        self.batch_rows = config.embeddings.batch_size
        self.linger_s = linger_s
        self.queue: queue.Queue = queue.Queue()
        self.results: list[pa.Table] = []
        self.numbered: dict[str, int] = dict.fromkeys(EMBEDDING_TABLES, 0)
        self.pending: dict[str, _Pending] = {}
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="embeddings", daemon=True)
        self.thread.start()

    def add(self, name: str, ids: list[str], texts: list[str],
            first_part: int | None = None) -> None:
        """`ids`' `texts` for table `name`; with `first_part`, sent as they are, in parts
        numbered from it (callers that number parts themselves do so for the whole table)."""
        self.queue.put(("text", name, ids, texts, first_part))

    def wait_for_room(self, items: int = 4) -> None:
        """For a caller reading a table piece by piece: until at most `items` wait."""
        while self.queue.qsize() > items and self.thread.is_alive():
            time.sleep(0.05)

    def add_addressed(self, name: str, ids: list[str], titles: list[str], handles: list,
                      where: list[tuple[int, int]]) -> None:
        """Entities whose final description is at `where` ((position in `handles`, row), as
        `DescriptionAddresses.gather` gives) in the blocks: the worker reads it there."""
        self.queue.put(("addressed", name, ids, titles,
                        [(handles[block], row) for block, row in where]))

    def _run(self) -> None:
        try:
            done = False
            while not done or self.pending or self.pool.busy():
                try:
                    item = self.queue.get(timeout=0.05 if self.pool.busy() else 0.5)
                except queue.Empty:
                    item = None
                if item is None:
                    pass
                elif item[0] == "finish":
                    done = True
                else:
                    self._take(item)
                self._send(flush=done)
                if self.pool.busy():
                    self.results.extend(result for _, result in self.pool.completed(
                        timeout=None if self.pool.pending() >= 2 * self.pool.capacity else 0))
        except BaseException as exc:  # noqa: BLE001 - raised in the driver by `finish`
            self.error = exc

    def _take(self, item: tuple) -> None:
        kind, name, ids, values, extra = item
        if kind == "text" and extra is not None:
            for start in range(0, len(ids), ROWS_PER_PART):
                self._submit(name, ids[start:start + ROWS_PER_PART],
                             texts=values[start:start + ROWS_PER_PART], part=extra + start)
            return
        waiting = self.pending.setdefault(name, _Pending(since=time.monotonic()))
        waiting.ids.extend(ids)
        waiting.texts.extend(values)  # titles, for addressed rows
        if kind == "addressed":
            waiting.addresses.extend(extra)

    def _send(self, flush: bool) -> None:
        now = time.monotonic()
        for name in list(self.pending):
            waiting = self.pending[name]
            if not (flush or len(waiting.ids) >= self.batch_rows
                    or now - waiting.since >= self.linger_s):
                continue
            del self.pending[name]
            for start in range(0, len(waiting.ids), ROWS_PER_PART):
                rows = slice(start, start + ROWS_PER_PART)
                self._submit(name, waiting.ids[rows], waiting.texts[rows],
                             waiting.addresses[rows] if waiting.addresses else None)

    def _submit(self, name: str, ids: list[str], texts: list[str],
                addresses: list[tuple[object, int]] | None = None,
                part: int | None = None) -> None:
        while self.pool.pending() >= 2 * self.pool.capacity:
            self.results.extend(result for _, result in self.pool.completed())
        if part is None:
            part = self.numbered[name]
            self.numbered[name] += len(ids)
        columns = {"table": [name] * len(ids), "part": [part] * len(ids), "id": ids}
        if addresses is None:
            self.pool.submit(self.key, pa.table({**columns, "text": texts},
                                                schema=EMBEDDING_WORK_SCHEMA))
            return
        handles = list({id(handle): handle for handle, _ in addresses}.values())
        position = {id(handle): i for i, handle in enumerate(handles)}
        self.pool.submit(self.key, pa.table({
            **columns, "title": texts,
            "block": [position[id(handle)] for handle, _ in addresses],
            "row": [row for _, row in addresses]}), blocks=handles)

    def finish(self, staged: IndexVersion, carried: dict[str, int] | None = None
               ) -> tuple[dict[str, int], int | None, Usage]:
        """Sends what waits, waits for every part; returns the row counts per table (with
        the `carried` rows an update wrote), the vector size and the usage. An empty table
        is written for each table with no row."""
        self.queue.put(("finish", None, None, None, None))
        self.thread.join()
        if self.error is not None:
            raise self.error
        counts = {name: (carried or {}).get(name, 0) for name in EMBEDDING_TABLES}
        done = (pa.concat_tables(self.results) if self.results
                else EMBEDDING_RESULT_SCHEMA.empty_table())
        for name, rows in zip(done.column("table").to_pylist(), done.column("rows").to_pylist()):
            counts[name] += rows
        for name, total in counts.items():
            if not total:
                staged.write_table(name, EMBEDDING_SCHEMA.empty_table())
        dimensions = done.column("dimensions")[0].as_py() if done.num_rows else None
        return counts, dimensions, table_usage(done)

    def stop(self) -> None:
        """After a failure: the thread ends once the queue drains (nothing is waited for)."""
        self.queue.put(("finish", None, None, None, None))


class FinalTextsToEmbed:
    """`summaries_and_reports.FinalTexts` for the feed: each entity is queued once its
    description is final (read by the worker from the blocks), each report once written."""

    def __init__(self, feed: EmbeddingFeed, entities: pa.Table, addresses):
        self.feed = feed
        self.ids = entities.column("id").to_pylist()
        self.titles = entities.column("title").to_pylist()
        self.addresses = addresses

    def entities_final(self, keys: list[int]) -> None:
        if keys:
            handles, where = self.addresses.gather(keys)
            self.feed.add_addressed(schema.ENTITY_DESCRIPTION_EMBEDDINGS,
                                    [self.ids[k] for k in keys], [self.titles[k] for k in keys],
                                    handles, where)

    def report_done(self, ids: list[str], text: str) -> None:
        self.feed.add(schema.REPORT_EMBEDDINGS, ids, [text] * len(ids))


class TextUnitEmbeddings:
    """The text units embedded while extraction runs, as the readers write them: embeddings
    have their own budget, so they need not wait for the chat work (for an embeddings
    endpoint; the offline hashing method is CPU work and waits). A thread watches the work
    area's chunk pieces and queues each piece once, parts numbered by the chunks' `seq`."""

    def __init__(self, feed: EmbeddingFeed, work_url: str,
                 skip: pa.ChunkedArray | None = None, poll_s: float = 0.5):
        """`skip` (an update): the carried chunks, whose vectors are the previous
        version's."""
        self.feed = feed
        self.fs, self.root = fsspec.core.url_to_fs(work_url)
        self.poll_s = poll_s
        self.reading_done = threading.Event()
        self.error: BaseException | None = None
        self.skip = skip
        self.thread = threading.Thread(target=self._run, name="embed-text-units", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        seen: set[str] = set()
        leave_out: set[str] | None = None  # `skip` as a set, built once
        try:
            while True:
                last_round = self.reading_done.is_set()
                self.fs.invalidate_cache(f"{self.root}/chunks")
                for piece in parquet_parts(self.fs, f"{self.root}/chunks"):
                    if piece not in seen:
                        seen.add(piece)
                        if self.skip is not None and leave_out is None:
                            leave_out = set(self.skip.to_pylist())
                        chunks = _rows_left(self.fs, piece, ["id", "text", "seq"], leave_out)
                        if chunks is None:
                            continue
                        seq = chunks.column("seq").to_pylist()
                        ids = chunks.column("id").to_pylist()
                        texts = chunks.column("text").to_pylist()
                        for start in range(0, len(ids), ROWS_PER_PART):
                            rows = slice(start, start + ROWS_PER_PART)
                            self.feed.add(schema.TEXT_UNIT_EMBEDDINGS, ids[rows], texts[rows],
                                          first_part=seq[start])
                if last_round:
                    return
                self.reading_done.wait(self.poll_s)
        except BaseException as exc:  # noqa: BLE001 - raised in the driver by `join`
            self.error = exc

    def join(self) -> None:
        """After extraction: queues the pieces not seen yet; raises what the thread raised."""
        self.reading_done.set()
        self.thread.join()
        if self.error is not None:
            raise self.error


def _rows_left(fs: fsspec.AbstractFileSystem, path: str, columns: list[str],
               leave_out: set[str] | None) -> pa.Table | None:
    """The piece's rows whose id is not in `leave_out` (a carried piece: none, and its text
    is not read)."""
    if leave_out is None:
        return read_parquet(fs, path, columns)
    mask = np.fromiter((i not in leave_out for i in read_parquet(fs, path, ["id"]).column(
        "id").to_pylist()), dtype=bool)
    return read_parquet(fs, path, columns).filter(pa.array(mask)) if mask.any() else None


def parts_without(staged: IndexVersion, name: str, columns: list[str],
                  ids: pa.ChunkedArray | None):
    """Table `name`'s rows (`columns`, a part at a time) whose id is not in `ids`, the ids
    of an update's carried vectors: every row of a part linked from the previous version is
    among them (its text is the previous text: `carry_over.same_texts`, the carried text
    units), so a linked part is not read; a part all of whose ids are is read no further."""
    if ids is None:
        yield from staged.iter_table(name, columns)
        return
    linked = staged.linked_parts(name)
    yield from staged.iter_rows_without(name, columns, ids.combine_chunks(),
                                        linked.__contains__)


def texts_to_embed(staged: IndexVersion, skip: dict[str, pa.ChunkedArray] | None = None
                   ) -> Iterator[tuple[str, list[str], list[str]]]:
    """(table name, ids, texts) of every table to embed, read back from `staged` (entities
    and text units a part at a time) once the stages have written them; not the ids in
    `skip[table]` (an update copied their vectors)."""
    skip = skip or {}
    reports = [pa.table({"id": pa.array([], pa.string()),
                         "full_content": pa.array([], pa.string())}),
               *parts_without(staged, schema.COMMUNITY_REPORTS, ["id", "full_content"],
                              skip.get(schema.REPORT_EMBEDDINGS))]
    texts = embedding_texts(
        pa.concat_tables(reports),
        parts_without(staged, schema.ENTITIES, ["id", "title", "description"],
                      skip.get(schema.ENTITY_DESCRIPTION_EMBEDDINGS)))
    units = parts_without(staged, schema.TEXT_UNITS, ["id", "text"],
                          skip.get(schema.TEXT_UNIT_EMBEDDINGS))
    text_units = ((schema.TEXT_UNIT_EMBEDDINGS, part.column("id").to_pylist(),
                   part.column("text").to_pylist()) for part in units if part.num_rows)
    return itertools.chain(texts, text_units)


def embed_index(staged: IndexVersion, feed: EmbeddingFeed, queued: bool,
                carried: dict[str, int] | None = None,
                skip: dict[str, pa.ChunkedArray] | None = None
                ) -> tuple[dict[str, int], int | None, Usage]:
    """Writes the embedding tables into `staged`; returns their row counts, the vector size
    and the usage. `queued`: the stages queued every text as it became final (an embeddings
    endpoint); otherwise entities and text units are read back from `staged` now.
    `carried`: rows per table an update copied from the previous version (written
    already); `skip`: their ids per table."""
    if not queued:
        for name, ids, values in texts_to_embed(staged, skip):
            feed.add(name, ids, values)
            feed.wait_for_room()
    return feed.finish(staged, carried)
