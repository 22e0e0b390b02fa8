"""The final entities and relationships tables: the driver's structure (ids, titles, degrees,
weights, ...) joined, part by part and by the pool's workers, with the description text where
it lies (the blocks of `description_blocks`). The driver never holds the text."""

from __future__ import annotations

import fsspec
import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.distributed import WorkerPool
from graphrag_ray.index.graph.description_blocks import DescriptionAddresses, take_descriptions
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import read_parquet, write_parquet

ADDRESS_COLUMNS = ["block", "row", "list_block", "list_row", "path"]
ELEMENT_PIECES = "element_pieces"  # in the work area


class ElementTableWriter:
    """A batch names one part of the table (`piece`: where the driver wrote its structure,
    with each row's description and list addresses and the part's path inside the index
    version); the part is written here. The structure comes through storage, not the object
    store, whose pages stay in the RSS of the process that wrote them (the driver's, 800 MB
    on a 100M-token build)."""

    def __init__(self, version_url: str, columns: list[str]):
        self.fs, self.root = fsspec.core.url_to_fs(version_url)
        self.columns = columns

    def __call__(self, named: pa.Table, blocks: list[pa.Table]) -> pa.Table:
        fs, path = fsspec.core.url_to_fs(named.column("piece")[0].as_py())
        batch = read_parquet(fs, path)
        description = take_descriptions(blocks, batch.column("block"), batch.column("row"))
        lists = take_descriptions(blocks, batch.column("list_block"), batch.column("list_row"),
                                  "descriptions")
        path = batch.column("path")[0].as_py()
        table = _with_text(batch.drop_columns(ADDRESS_COLUMNS), description, lists)
        write_parquet(self.fs, f"{self.root.rstrip('/')}/{path}", table.select(self.columns))
        return pa.table({"rows": [batch.num_rows]})


# Rows per part of the entities and relationships tables (at most `output.rows_per_part`):
# each part is joined and encoded by one of the pool's workers, so a long table is written by
# all of them. One part per table left the 100M-token index's entities (340 MB of Parquet,
# 258k rows) to one worker: 13 s, the relationships' worker idle after 5.
ELEMENT_ROWS_PER_PART = 65_536


def write_element_tables(staged: IndexVersion, entities: pa.Table, relationships: pa.Table,
                         addresses: DescriptionAddresses, pool: WorkerPool,
                         rows_per_part: int, work_url: str) -> dict[str, int]:
    """Written like `IndexVersion.write_table`: whole, or in parts of
    `ELEMENT_ROWS_PER_PART` rows at most (each part's structure handed to its writer through
    `work_url`)."""
    fs, work_root = fsspec.core.url_to_fs(work_url)
    rows_per_part = min(rows_per_part, ELEMENT_ROWS_PER_PART)
    n_entities = entities.num_rows
    for name, table, first_key, columns in (
            (schema.ENTITIES, entities, 0, schema.ENTITY_COLUMNS),
            (schema.RELATIONSHIPS, relationships, n_entities, schema.RELATIONSHIP_COLUMNS)):
        if not table.num_rows:
            staged.write_table(name, _with_text(table, pa.array([], pa.string()), pa.array(
                [], pa.list_(pa.string()))).select(columns))
            continue
        writer = pool.bind(ElementTableWriter, {"version_url": staged.url_of(""),
                                                "columns": columns})
        starts = range(0, table.num_rows, rows_per_part)
        for part, start in enumerate(starts):
            piece = table.slice(start, rows_per_part)
            keys = np.arange(first_key + start, first_key + start + piece.num_rows)
            handles, where = addresses.gather(keys)
            list_handles, list_where = addresses.gather(keys, lists=True)
            path = f"{name}.parquet" if len(starts) == 1 else f"{name}/part-{part:05d}.parquet"
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


def _with_text(table: pa.Table, description: pa.Array, lists: pa.Array) -> pa.Table:
    return table.append_column("description", description).append_column("descriptions", lists)
