"""The final entities and relationships tables: the driver's structure (ids, titles, degrees,
weights, ...) joined, part by part and by the pool's workers, with the description text where
it lies (the blocks of `description_blocks`). The driver never holds the text."""

from __future__ import annotations

from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.index.graph.description_blocks import DescriptionAddresses, take_descriptions
from graphrag_ray.index.graph.stage import Graph
from graphrag_ray.index.graph.unit_rows import UNIT_IDS, UNIT_ROWS, with_unit_ids
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import read_parquet, write_parquet

ADDRESS_COLUMNS = ["block", "row", "list_block", "list_row", "path"]
ELEMENT_PIECES = "element_pieces"  # in the work area
UNIT_ID = "text_unit_id"


class ElementTableWriter:
    """A batch names one part of the table (`piece`: where the driver wrote its structure,
    with each row's description and list addresses and the part's path inside the index
    version); the part is written here, its text units' ids taken from their rows
    (`unit_rows.py`) in the ids the driver wrote once (`unit_ids_url`). The structure comes
    through storage, not the object store, whose pages stay in the RSS of the process that
    wrote them (the driver's)."""

    def __init__(self, version_url: str, columns: list[str], unit_ids_url: str):
        self.fs, self.root = fsspec.core.url_to_fs(version_url)
        self.columns = columns
        fs, path = fsspec.core.url_to_fs(unit_ids_url)
        self.unit_ids = read_parquet(fs, path).column(UNIT_ID).combine_chunks()

    def __call__(self, named: pa.Table, blocks: list[pa.Table]) -> pa.Table:
        fs, path = fsspec.core.url_to_fs(named.column("piece")[0].as_py())
        batch = with_unit_ids(read_parquet(fs, path), self.unit_ids)
        description = take_descriptions(blocks, batch.column("block"), batch.column("row"))
        lists = take_descriptions(blocks, batch.column("list_block"), batch.column("list_row"),
                                  "descriptions")
        path = batch.column("path")[0].as_py()
        table = _with_text(batch.drop_columns(ADDRESS_COLUMNS), description, lists)
        write_parquet(self.fs, f"{self.root.rstrip('/')}/{path}", table.select(self.columns))
        return pa.table({"rows": [batch.num_rows]})


# Rows per part of the entities and relationships tables (at most `output.rows_per_part`):
# each part is joined and encoded by one of the pool's workers, so a long table is written by
# all of them. One part per table left a large table to one worker while the others idled.
ELEMENT_ROWS_PER_PART = 65_536


@dataclass
class CarriedElements:
    """An update's unchanged entities and relationships (by row of the driver's tables),
    whose rows are in the previous version's parts as they are now."""
    previous: IndexVersion
    entities: np.ndarray  # bool per entity row
    relationships: np.ndarray  # bool per relationship row


def unchanged_elements(graph: Graph, kept_summaries: np.ndarray | None,
                       previous: IndexVersion | None) -> CarriedElements | None:
    """An update's entities and relationships whose rows are the previous version's: an
    entity the merge did not touch (nor any of its relationships: `Graph.touched`) with one
    description or its summary kept; a relationship with neither end touched and one
    description or its summary kept. Their numbers and layout positions are kept too
    (`graph/numbers`, `graph/layout`). None when the merge does not know what it touched."""
    if graph.touched is None or previous is None:
        return None
    entities, relationships = graph.entities, graph.relationships
    n_entities = entities.num_rows
    kept = np.zeros(n_entities + relationships.num_rows, dtype=bool)
    if kept_summaries is not None:
        kept[kept_summaries] = True
    single = np.concatenate([entities.column("description_count").to_numpy(),
                             relationships.column("description_count").to_numpy()]) <= 1
    same = single | kept
    touched = np.asarray(graph.touched, dtype=bool)
    sources, targets = graph.endpoints
    edges = ~touched[sources] & ~touched[targets] & same[n_entities:]
    if _largest_count(relationships) != _largest_count(
            previous.read_table(schema.RELATIONSHIPS, ["instance_count"])):
        edges[:] = False  # every weight is a share of the largest count (`merge.with_weights`)
    return CarriedElements(previous, ~touched & same[:n_entities], edges)


def _largest_count(relationships: pa.Table) -> int:
    return pc.max(relationships.column("instance_count")).as_py() or 0 \
        if relationships.num_rows else 0


def write_element_tables(staged: IndexVersion, entities: pa.Table, relationships: pa.Table,
                         addresses: DescriptionAddresses, pool: WorkerPool,
                         rows_per_part: int, work_url: str, unit_ids: pa.Array,
                         carried: CarriedElements | None = None) -> dict[str, int]:
    """Written like `IndexVersion.write_table`: whole, or in parts of
    `ELEMENT_ROWS_PER_PART` rows at most (each part's structure handed to its writer through
    `work_url`, with `unit_ids`, the ids the tables' `unit_rows` count in). `carried`: an
    update's unchanged rows, served by the previous version's parts where they lie
    (`carried_elements`); only the other rows are joined and written, in parts after
    those."""
    fs, work_root = fsspec.core.url_to_fs(work_url)
    rows_per_part = min(rows_per_part, ELEMENT_ROWS_PER_PART)
    unit_ids_path = f"{work_root}/{ELEMENT_PIECES}/{UNIT_IDS}.parquet"
    write_parquet(fs, unit_ids_path, pa.table({UNIT_ID: unit_ids}), read_whole=True)
    n_entities = entities.num_rows
    for name, table, first_key, columns, unchanged in (
            (schema.ENTITIES, entities, 0, schema.ENTITY_COLUMNS,
             carried.entities if carried else None),
            (schema.RELATIONSHIPS, relationships, n_entities, schema.RELATIONSHIP_COLUMNS,
             carried.relationships if carried else None)):
        if not table.num_rows:
            staged.write_table(name, _with_text(with_unit_ids(table, unit_ids), pa.array(
                [], pa.string()), pa.array([], pa.list_(pa.string()))).select(columns))
            continue
        rows, first_part = np.arange(table.num_rows), 0
        if carried is not None and len(carried.previous.table_files(name)) > 1:
            served, first_part = carried_elements(carried.previous, staged, name, table,
                                                  unchanged)
            rows = np.flatnonzero(~served)
        writer = pool.bind(ElementTableWriter, {
            "version_url": staged.url_of(""), "columns": columns,
            "unit_ids_url": fs.unstrip_protocol(unit_ids_path)})
        starts = range(0, len(rows), rows_per_part)
        for part, start in enumerate(starts):
            taken = rows[start:start + rows_per_part]
            piece = table.take(pa.array(taken))
            keys = first_key + taken
            handles, where = addresses.gather(keys)
            list_handles, list_where = addresses.gather(keys, lists=True)
            path = f"{name}.parquet" if len(starts) == 1 and not first_part \
                else f"{name}/part-{first_part + part:05d}.parquet"
            addressed = {"block": [b for b, _ in where], "row": [r for _, r in where],
                         "list_block": [len(handles) + b for b, _ in list_where],
                         "list_row": [r for _, r in list_where], "path": [path] * piece.num_rows}
            for column in ADDRESS_COLUMNS:
                piece = piece.append_column(column, pa.array(addressed[column]))
            piece_path = f"{work_root}/{ELEMENT_PIECES}/{name}-{part:05d}.parquet"
            write_parquet(fs, piece_path, piece, read_whole=True)
            pool.submit(writer, pa.table({"piece": [fs.unstrip_protocol(piece_path)]}),
                        blocks=handles + list_handles)
    pool.drain()
    return {schema.ENTITIES: n_entities, schema.RELATIONSHIPS: relationships.num_rows}


def carried_elements(previous: IndexVersion, staged: IndexVersion, name: str,
                     table: pa.Table, unchanged: np.ndarray) -> tuple[np.ndarray, int]:
    """The previous version's parts of table `name` linked into `staged` where most of
    their rows are unchanged (`unchanged`: per row of the driver's `table`, by id), the rows
    they no longer serve (changed, gone, or left out before) left out
    (`IndexVersion.link_parts`). A 1% add to a 100M-token index changes a few % of the
    entities and relationships, spread over every part: writing them all again would
    rewrite the whole tables for a few changed rows.
    "Most" weighs each row by its lists' lengths (`_row_weights`: the entities an update
    touches are often the most mentioned, whose rows are the longest), so a part's left-out
    rows stay under `LEFT_OUT_SHARE` of its bytes, roughly, not only of its rows. Returns
    which rows the linked parts serve and the number the new parts start from."""
    ids = table.column("id").combine_chunks().to_pylist()
    row_of = {element: row for row, element in enumerate(ids)}
    weights = _row_weights(table)
    rows_of: dict[int, np.ndarray] = {}  # part number -> each of its rows' row in `table`

    def serving(number: int, part: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        rows = rows_of[number] = np.fromiter(
            (row_of.get(i, -1) for i in part.column("id").to_pylist()), np.int64,
            part.num_rows)
        # A row gone from the graph weighs as little as a row can: it was mentioned little.
        return (rows >= 0) & unchanged[rows], np.where(rows >= 0, weights[rows], 1.0)

    served = np.zeros(len(unchanged), dtype=bool)
    linked, first_part = staged.link_parts(previous, name, ["id"], serving)
    for number, _, serves in linked:
        served[rows_of[number][serves]] = True
    return served, first_part


def _row_weights(table: pa.Table) -> np.ndarray:
    """Per row, about how long its stored row is: one, plus its text units (each brings an
    id to `text_unit_ids` and, mostly, a description to `descriptions`: the lists that make a
    row long). Counted chunk by chunk: joining the lists first copied them whole."""
    units = pc.fill_null(pc.list_value_length(table.column(UNIT_ROWS)), 0)
    return 1.0 + np.asarray(units.to_numpy(), dtype=np.float64)


def _with_text(table: pa.Table, description: pa.Array, lists: pa.Array) -> pa.Table:
    return table.append_column("description", description).append_column("descriptions", lists)
