"""Rows grouped by a key as arrays: each key's rows in the order given, and list columns for
any keys asked (empty for a key without rows)."""

import numpy as np
import pyarrow as pa

from graphrag_ray.grouped import Grouped, ranges


def test_grouped_keeps_each_keys_rows_in_their_order():
    grouped = Grouped(pa.array(["b", "a", "b", "c", "a"]), np.array([10, 11, 12, 13, 14]))
    assert (grouped.get("a"), grouped.get("b"), grouped.get("c")) == ([11, 14], [10, 12], [13])
    assert Grouped(pa.array([], pa.string()), np.array([], dtype=np.int64)).get("a") == []


def test_lists_give_each_keys_values_and_nothing_for_a_missing_key():
    grouped = Grouped(pa.array(["u2", "u1", "u2", "u3"]), np.array([0, 1, 1, 2]))
    values = pa.array(["e0", "e1", "e2"])
    assert grouped.lists(["u2", "u9", "u3", "u1"], values).to_pylist() == [
        ["e0", "e1"], [], ["e2"], ["e1"]]
    empty = Grouped(pa.array([], pa.string()), np.array([], dtype=np.int64))
    assert empty.lists(["u1", "u2"], values).to_pylist() == [[], []]
    assert grouped.lists([], values).to_pylist() == []


def test_ranges_run_one_after_another():
    assert ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]
    assert ranges(np.array([], np.int64), np.array([], np.int64)).tolist() == []
