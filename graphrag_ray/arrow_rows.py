"""Rows of Arrow tables taken, sorted and looked up at the speed of one chunk.

Arrow's take of a list column held in many chunks (a table concatenated from shards, or read
from many row groups) is slower than joining the chunks and taking from one. A column is joined only where one chunk can hold it
(string data under 2 GiB); past that it is taken as it is.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Beyond this many bytes a column of 32-bit offsets may not fit one chunk.
_ONE_CHUNK_BYTES = 2 ** 31


def one_chunk(table: pa.Table) -> pa.Table:
    """`table` with every column that fits one chunk in one."""
    columns = [column.combine_chunks() if column.num_chunks > 1 and
               column.nbytes < _ONE_CHUNK_BYTES else column for column in table.columns]
    return pa.table(columns, schema=table.schema)


def one_array(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`array` as one Arrow array (a chunked one joined)."""
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def list_parts(lists: pa.ListArray | pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """The offsets and values of `lists`, counted from its first value (a slice's offsets
    are not, and its `values` hold more than its lists)."""
    lists = one_array(lists)
    offsets = lists.offsets
    first, last = (offsets[0].as_py(), offsets[-1].as_py()) if len(offsets) else (0, 0)
    return (pc.subtract(offsets, first) if first else offsets,
            lists.values.slice(first, last - first))


def group_offsets(groups: np.ndarray, n_groups: int) -> pa.Array:
    """The list offsets of `n_groups` lists whose values are grouped in order, `groups`
    giving each value's group (ascending)."""
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(groups, minlength=n_groups), out=offsets[1:])
    return pa.array(offsets, pa.int32())


def take_rows(table: pa.Table, rows) -> pa.Table:
    """`table.take(rows)`, from one chunk per column."""
    return one_chunk(table).take(rows)


def sorted_rows(table: pa.Table, keys: list[tuple[str, str]]) -> pa.Table:
    """`table.sort_by(keys)` (stable), from one chunk per column."""
    return take_rows(table, pc.sort_indices(table, sort_keys=keys))


# `index_in` hashes the values instead of the value set when the set is this many times
# longer (past it, hashing the few values is the cheaper side).
_HASH_THE_VALUES_PAST = 4


def index_in(values: pa.Array | pa.ChunkedArray, value_set: pa.Array | pa.ChunkedArray
             ) -> pa.Array:
    """`pc.index_in(values, value_set=value_set)`: each value's first row in `value_set`,
    null when it has none. Arrow builds a hash table of the whole value set at every call;
    an update's merge looks a few thousand text unit ids up among all the build's, a
    hundred times a shard. When the set is much longer,
    the distinct values are hashed instead, and the set's rows are looked up in them."""
    values, value_set = (column.combine_chunks() if isinstance(column, pa.ChunkedArray)
                         else column for column in (values, value_set))
    if len(values) * _HASH_THE_VALUES_PAST >= len(value_set):
        return pc.index_in(values, value_set=value_set)
    distinct = pc.unique(values)
    where = pc.index_in(value_set, value_set=distinct)  # each set row's value, if any
    found = pc.is_valid(where).to_numpy(zero_copy_only=False)
    places = where.filter(found).to_numpy()
    first = np.full(len(distinct), -1, dtype=np.int64)
    # Set rows ascend, so each place's first occurrence holds its first row.
    place, at = np.unique(places, return_index=True)
    first[place] = np.flatnonzero(found)[at]
    return pa.array(first, pa.int32(), mask=first < 0).take(
        pc.index_in(values, value_set=distinct))
