"""The graph tables' list columns gathered in Arrow: the communities table written piece by
piece is the table written whole, and a text unit's elements are listed in table order."""

import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.write import tables
from graphrag_ray.index.write.tables import ElementsByUnit, StatusRows, communities_tables


def graph():
    entities = pa.table({"id": [f"e{i}" for i in range(6)]})
    relationships = pa.table({
        "id": ["r0", "r1", "r2", "r3"],
        "text_unit_ids": [["u1", "u2"], ["u2", "u3"], ["u4"], ["u3", "u1"]]})
    endpoints = (np.array([0, 1, 3, 0]), np.array([1, 2, 4, 2]))
    communities = [Community(0, 0, -1, np.array([0, 1, 2]), children=[2, 3]),
                   Community(1, 0, -1, np.array([3, 4, 5])),
                   Community(2, 1, 0, np.array([0, 1])),
                   Community(3, 1, 0, np.array([2]))]
    return communities, entities, relationships, endpoints


def test_the_communities_table_in_pieces_is_the_whole_table(monkeypatch):
    whole = pa.concat_tables(communities_tables(*graph()))
    monkeypatch.setattr(tables, "COMMUNITIES_PER_PIECE", 1)
    pieces = list(communities_tables(*graph()))
    assert len(pieces) == 4 and pa.concat_tables(pieces).equals(whole)
    rows = whole.to_pylist()
    assert rows[0]["relationship_ids"] == ["r0", "r1", "r3"]
    assert rows[0]["text_unit_ids"] == ["u1", "u2", "u3"]  # first seen, each once
    assert rows[1]["text_unit_ids"] == ["u4"] and rows[3]["relationship_ids"] == []
    assert rows[0]["entity_ids"] == ["e0", "e1", "e2"] and rows[0]["children"] == [2, 3]
    empty = pa.concat_tables(communities_tables([], *graph()[1:]))
    assert empty.num_rows == 0 and empty.schema.equals(whole.schema)


def test_a_units_elements_come_in_table_order_and_a_unit_without_any_gets_none():
    units = pa.array(["u1", "u2", "u3", "u4", "u9"])  # asked by their row here
    found = ElementsByUnit(graph()[2], "text_unit_ids", units).lists(np.array([2, 4, 0]))
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
