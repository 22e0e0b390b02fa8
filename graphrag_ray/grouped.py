"""Rows grouped by a key, held as arrays: what a dict of Python lists would be, at the size of
a 100M-token index (millions of pairs) without the gigabytes. Local search's lookups (an
entity's relationships, reports, claims) and the text units' element ids are built on it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


class Grouped:
    """Row numbers grouped by a key (entity title -> its relationships' rows, ...): one
    array of rows sorted by key (each key's rows in the order given) and the offsets of each
    key's run."""

    def __init__(self, keys: pa.Array | pa.ChunkedArray, rows: np.ndarray):
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        encoded = keys.dictionary_encode()
        self.slot = {key: i for i, key in enumerate(encoded.dictionary.to_pylist())}
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        self.rows = np.asarray(rows, dtype=np.int64)[order]
        self.offsets = np.searchsorted(codes[order], np.arange(len(self.slot) + 1))

    def get(self, key, default=()) -> list[int]:
        slot = self.slot.get(key)
        if slot is None:
            return list(default)
        return self.rows[self.offsets[slot]:self.offsets[slot + 1]].tolist()

    def lists(self, keys: list, values: pa.Array) -> pa.ListArray:
        """Per key asked, `values` at its rows, as one list column (empty for a key without
        rows)."""
        slots = np.array([self.slot.get(key, -1) for key in keys], dtype=np.int64)
        found = slots >= 0
        # One run past the last key: the slot a missing key borrows is never read past.
        bounds = np.append(self.offsets, self.offsets[-1])
        starts = np.where(found, bounds[np.maximum(slots, 0)], 0)
        lengths = np.where(found, bounds[np.maximum(slots, 0) + 1] - starts, 0)
        return runs_as_lists(self.rows, starts, lengths, values)


def runs_as_lists(rows: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                  values: pa.Array) -> pa.ListArray:
    """One list per run of `rows` (rows[start:start + length]): `values` at those rows."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), values.take(
        pa.array(rows[ranges(starts, lengths)])))


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions start..start+length of every range, one after another."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(ends[-1] if len(ends) else 0)
