"""Where the description text of every entity and relationship lives during a build: in
blocks (Arrow tables) that stay in the workers' object store on Ray, so the driver keeps only
each element's address (block, row), never the text.

An element's key is its row among the entities, or `n_entities` + its row among the
relationships. Its description list lives in the block of its merge shard (column
`descriptions`); its current description (column `description`) moves to a summary's block when
one arrives. Summaries pass through the driver once, a call's worth at a time, on their way
into the object store (`WorkerPool.put_block`): a small block returned by a worker would stay
inline in the driver, and be copied again for every call that reads it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from graphrag_ray.index.graph.merge import description_digest
from graphrag_ray.index.context_rows import inner_cells_tokens

MERGED_BLOCK_SCHEMA = pa.schema([("description", pa.string()),
                                 ("descriptions", pa.list_(pa.string()))])


def merged_block(descriptions: list[list[str]]) -> pa.Table:
    """A shard's description lists, with the one description of single-description elements
    (those with several wait for their summary; until then they have none)."""
    return pa.table({"description": pa.array([d[0] if len(d) == 1 else "" for d in descriptions],
                                             pa.string()),
                     "descriptions": pa.array(descriptions, pa.list_(pa.string()))},
                    schema=MERGED_BLOCK_SCHEMA)


class DescriptionAddresses:
    """Per element key: the block and row of its description, and of its description list.
    Both start in the key's merge shard's block (`handles[shard]`); a summary moves the
    description."""

    def __init__(self, handles: list, shard: np.ndarray, row: np.ndarray):
        self.handles = list(handles)
        self.list_block = shard.astype(np.int32)
        self.list_row = row.astype(np.int32)
        self.block = self.list_block.copy()
        self.row = self.list_row.copy()

    def copy(self) -> "DescriptionAddresses":
        """Addresses that summaries can be added to without changing these."""
        clone = object.__new__(type(self))
        clone.__dict__.update({name: value.copy() if hasattr(value, "copy") else value
                               for name, value in self.__dict__.items()})
        return clone

    def add_summaries(self, handle, keys: list[int]) -> None:
        """A summary block: row i is the new description of `keys[i]`."""
        self.handles.append(handle)
        self.block[keys] = len(self.handles) - 1
        self.row[keys] = np.arange(len(keys), dtype=np.int32)

    def gather(self, keys, lists: bool = False) -> tuple[list, list[tuple[int, int]]]:
        """What a worker needs to read `keys`' descriptions (or lists): the blocks holding them
        and, per key, (position in that list of blocks, row)."""
        blocks = (self.list_block if lists else self.block)[keys]
        rows = (self.list_row if lists else self.row)[keys]
        used, position = np.unique(blocks, return_inverse=True)
        return ([self.handles[b] for b in used],
                list(zip(position.tolist(), rows.tolist())))


def read_descriptions(tables: list[pa.Table], addresses, column: str = "description") -> list:
    """The values at (block position, row) `addresses`, from blocks resolved by the worker."""
    pairs = np.asarray(list(addresses), dtype=np.int64).reshape(-1, 2)
    return take_descriptions(tables, pairs[:, 0], pairs[:, 1], column).to_pylist()


def take_descriptions(tables: list[pa.Table], blocks, rows, column: str = "description"
                      ) -> pa.Array:
    """The values at (`blocks[i]`, `rows[i]`) (block positions and rows, arrays), in that
    order: taken from each block at once in Arrow (a value at a time, as Python, was most of
    writing a 100M-token index's entities and relationships)."""
    blocks = np.asarray(blocks, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    kind = pa.string() if column == "description" else pa.list_(pa.string())
    if not len(blocks):
        return pa.array([], kind)
    order = np.argsort(blocks, kind="stable")
    starts = np.flatnonzero(np.diff(blocks[order], prepend=-1))
    ends = np.append(starts[1:], len(order))
    taken = [tables[int(blocks[order[a]])].column(column).take(pa.array(rows[order[a:b]]))
             .combine_chunks().cast(kind) for a, b in zip(starts, ends)]
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return pa.concat_arrays(taken).take(pa.array(inverse))


def split_descriptions(entities: pa.Table, relationships: pa.Table, shard: int, encoding: str
                       ) -> tuple[pa.Table, pa.Table, pa.Table]:
    """A merged shard -> its structure and its block (entities' rows, then relationships').
    The structure has, instead of `descriptions`: `description_count`, `inner_tokens` (the
    context row's tokens but its numbers, with the description it has now: `inner_cells_tokens`),
    `description_digest` (what a report reads of it: `merge.description_digest`) and the rows'
    place in the block (`description_shard`, `description_row`)."""
    lists = entities.column("descriptions").to_pylist() + \
        relationships.column("descriptions").to_pylist()
    block = merged_block(lists)
    current = block.column("description").to_pylist()

    def structure(table: pa.Table, first_row: int, cells: tuple[str, str]) -> pa.Table:
        n = table.num_rows
        inner = [inner_cells_tokens({cells[0]: a, cells[1]: b, "description": d}, encoding)
                 for a, b, d in zip(table.column(cells[0]).to_pylist(),
                                    table.column(cells[1]).to_pylist(),
                                    current[first_row:first_row + n])]
        return table.drop_columns(["descriptions"]).append_column(
            "description_count", pa.array([len(d) for d in lists[first_row:first_row + n]],
                                          pa.int64())).append_column(
            "inner_tokens", pa.array(inner, pa.int64())).append_column(
            "description_digest", pa.array([description_digest(key, d) for key, d in zip(
                zip(table.column(cells[0]).to_pylist(), table.column(cells[1]).to_pylist()),
                lists[first_row:first_row + n])], pa.int64())).append_column(
            "description_shard", pa.array(np.full(n, shard, dtype=np.int64))).append_column(
            "description_row", pa.array(np.arange(first_row, first_row + n, dtype=np.int64)))

    return (structure(entities, 0, ("title", "type")),
            structure(relationships, entities.num_rows, ("source", "target")), block)


def place_blocks(entities: pa.Table, relationships: pa.Table, handles: list
                 ) -> tuple[pa.Table, pa.Table, DescriptionAddresses]:
    """After the shards are combined and put in their final order: each element's key gets
    its address in its shard's block (`handles[shard]`); the placement columns are dropped."""
    shard = np.concatenate([entities.column("description_shard").to_numpy(),
                            relationships.column("description_shard").to_numpy()])
    row = np.concatenate([entities.column("description_row").to_numpy(),
                          relationships.column("description_row").to_numpy()])
    placement = ["description_shard", "description_row"]
    return (entities.drop_columns(placement), relationships.drop_columns(placement),
            DescriptionAddresses(handles, shard, row))
