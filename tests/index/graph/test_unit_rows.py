"""Text units as rows of the status table (`unit_rows`): numbered, renumbered from a previous
version's table, and turned back into ids, without losing or inventing a unit."""

import pyarrow as pa
import pytest

from graphrag_ray.index.graph.unit_rows import (
    UNIT_IDS, UNIT_ROWS, renumbered, require_known, rows_now, with_unit_ids, with_unit_rows)


def _elements(lists: list[list[str] | None]) -> pa.Table:
    return pa.table({"title": [f"E{k}" for k in range(len(lists))],
                     UNIT_IDS: pa.array(lists, pa.list_(pa.string()))})


def test_rows_turn_back_into_the_same_ids_slices_and_nulls_included():
    ids = pa.array(["u0", "u1", "u2", "u3"])
    table = _elements([["u2", "u0"], None, [], ["u3", "u3", "u1"]]).slice(1)
    numbered = with_unit_rows(table, ids)
    assert numbered.column(UNIT_ROWS).to_pylist() == [None, [], [3, 3, 1]]
    assert with_unit_ids(numbered, ids).column(UNIT_IDS).to_pylist() == \
        table.column(UNIT_IDS).to_pylist()


def test_an_id_outside_the_status_table_fails_loudly():
    with pytest.raises(ValueError, match="'u9'"):
        with_unit_rows(_elements([["u0", "u9"]]), pa.array(["u0"]))


def test_a_previous_versions_rows_are_renumbered_into_the_status_table_now():
    before = pa.array(["a", "b", "c", "d"])  # the previous version's status rows
    now = pa.array(["d", "e", "a", "c"])  # "b" dropped (its file changed), "e" added
    previous_rows_now = rows_now(pa.chunked_array([before[:2], before[2:]]), now)
    assert previous_rows_now.to_pylist() == [2, -1, 3, 0]
    kept = with_unit_rows(_elements([["a", "d"], ["c"], ["b", "c"]]), before)
    moved = renumbered(kept, previous_rows_now)
    assert with_unit_ids(moved.slice(0, 2), now).column(UNIT_IDS).to_pylist() == \
        [["a", "d"], ["c"]]
    require_known(moved.slice(0, 2))
    # An element found in the dropped unit must have been merged again, not kept.
    with pytest.raises(ValueError, match="dropped"):
        require_known(moved)
