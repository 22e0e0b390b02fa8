import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from graphrag_ray.arrow_rows import index_in


@pytest.mark.parametrize("n_values", [0, 1, 7, 40, 300, 5000])
def test_index_in_finds_the_rows_arrow_finds_whichever_side_it_hashes(n_values):
    rng = np.random.default_rng(n_values)
    # A value set with repeats (a text unit's id is its text's: two equal chunks share it)
    # and values both in it and not.
    value_set = pa.array([f"id-{i}" for i in rng.integers(0, 600, 1000)])
    values = pa.array([f"id-{i}" for i in rng.integers(0, 700, n_values)], pa.string())
    expected = pc.index_in(values, value_set=value_set)
    got = index_in(values, value_set)
    assert got.type == expected.type
    assert got.to_pylist() == expected.to_pylist()
    assert got.null_count == expected.null_count


def test_index_in_takes_chunked_columns_and_nulls_as_arrow_does():
    value_set = pa.chunked_array([["a", None, "b"], ["c", "a"] * 20])
    values = pa.chunked_array([["c", None], ["z"]])
    assert index_in(values, value_set).to_pylist() == pc.index_in(
        values.combine_chunks(), value_set=value_set.combine_chunks()).to_pylist() == [3, 1, None]
