"""The graph tables' list columns gathered in Arrow: the communities table written piece by
piece is the table written whole."""

import pyarrow as pa

from graphrag_ray.index.write import tables
from graphrag_ray.index.write.tables import communities_tables


def test_the_communities_table_in_pieces_is_the_whole_table(community_graph, monkeypatch):
    whole = pa.concat_tables(communities_tables(*community_graph))
    monkeypatch.setattr(tables, "COMMUNITIES_PER_PIECE", 1)
    pieces = list(communities_tables(*community_graph))
    assert len(pieces) == 4 and pa.concat_tables(pieces).equals(whole)
    rows = whole.to_pylist()
    assert rows[0]["relationship_ids"] == ["r0", "r1", "r3"]
    assert rows[0]["text_unit_ids"] == ["u1", "u2", "u3"]  # first seen, each once
    assert rows[1]["text_unit_ids"] == ["u4"] and rows[3]["relationship_ids"] == []
    assert rows[0]["entity_ids"] == ["e0", "e1", "e2"] and rows[0]["children"] == [2, 3]
    empty = pa.concat_tables(communities_tables([], *community_graph[1:]))
    assert empty.num_rows == 0 and empty.schema.equals(whole.schema)
