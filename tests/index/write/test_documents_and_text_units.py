"""A text unit's elements are listed in table order, and a piece's chunks find their
extraction status rows by position."""

import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray.index.graph.unit_rows import UNIT_ROWS, with_unit_rows
from graphrag_ray.index.write.documents_and_text_units import ElementsByUnit, StatusRows


def test_a_units_elements_come_in_table_order_and_a_unit_without_any_gets_none():
    units = pa.array(["u1", "u2", "u3", "u4", "u9"])  # asked by their row here
    relationships = pa.table({
        "id": ["r0", "r1", "r2", "r3"],
        "text_unit_ids": [["u1", "u2"], ["u2", "u3"], ["u4"], ["u3", "u1"]]})
    found = ElementsByUnit(with_unit_rows(relationships, units), UNIT_ROWS, units).lists(
        np.array([2, 4, 0]))
    assert found.to_pylist() == [["r1", "r3"], [], ["r0", "r3"]]
    claims = pa.table({"id": ["c0", "c1"], "text_unit_id": ["u2", "u2"]})
    by_unit = ElementsByUnit(claims, "text_unit_id", units)
    assert by_unit.lists(np.array([1])).to_pylist() == [["c0", "c1"]]
    assert ElementsByUnit(claims.slice(0, 0), "text_unit_id", units).lists(
        np.array([1])).to_pylist() == [[]]


def test_a_pieces_chunks_find_their_status_rows_by_seq_and_a_chunk_without_one_fails():
    extraction = pa.table({"text_unit_id": ["u1", "u2", "u3"], "seq": [30, 10, 20],
                           "status": ["ok", "failed", "ok"], "error": [None, "x", None]})
    rows = StatusRows(extraction)
    piece = pa.table({"id": ["u2", "u3"], "seq": [10, 20]})
    found = rows.rows_of(piece)
    assert rows.status.take(pa.array(found)).to_pylist() == ["failed", "ok"]
    for stray in (pa.table({"id": ["u4"], "seq": [40]}),  # no status row
                  pa.table({"id": ["u9"], "seq": [10]})):  # another chunk's place
        with pytest.raises(RuntimeError, match="1 chunks came back"):
            rows.rows_of(stray)
    with pytest.raises(RuntimeError):
        StatusRows(extraction.slice(0, 0)).rows_of(piece)
