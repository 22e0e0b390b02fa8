"""The graph tables' list columns gathered in Arrow: the communities table written piece by
piece is the table written whole."""

import numpy as np
import pyarrow as pa

from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.graph.unit_rows import with_unit_rows
from graphrag_ray.index.write import tables
from graphrag_ray.index.write.tables import communities_tables


def graph():
    entities = pa.table({"id": [f"e{i}" for i in range(6)]})
    units = pa.array(["u0", "u1", "u2", "u3", "u4"])
    relationships = with_unit_rows(pa.table({
        "id": ["r0", "r1", "r2", "r3"],
        "text_unit_ids": [["u1", "u2"], ["u2", "u3"], ["u4"], ["u3", "u1"]]}), units)
    endpoints = (np.array([0, 1, 3, 0]), np.array([1, 2, 4, 2]))
    communities = [Community(0, 0, -1, np.array([0, 1, 2]), children=[2, 3]),
                   Community(1, 0, -1, np.array([3, 4, 5])),
                   Community(2, 1, 0, np.array([0, 1])),
                   Community(3, 1, 0, np.array([2]))]
    return communities, entities, relationships, endpoints, units


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
