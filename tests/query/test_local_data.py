"""Local search's rows and lookups over Arrow columns: the same answers the dict-of-rows
version gave (names longest first, an entity's relationships, reports and claims, units by
id), made without turning every row into a Python dict."""

import numpy as np
import pyarrow as pa

from graphrag_ray.query.local_data import LocalData, Rows, RowsById
from graphrag_ray.query.local_search import named_entities
from graphrag_ray.query.vectors import VectorTable


def make_data() -> LocalData:
    entities = pa.table({
        "id": ["e0", "e1", "e2", "e3"], "human_readable_id": [0, 1, 2, 3],
        "title": ["SCROOGE", "EBENEZER SCROOGE", "BOB", "BOB CRATCHIT"],
        "type": ["PERSON"] * 4, "description": ["miser", "the miser", "clerk", "the clerk"],
        "text_unit_ids": [["u1"], ["u1", "u2"], ["u2"], ["u2"]], "degree": [2, 1, 3, 1]})
    relationships = pa.table({
        "id": ["r0", "r1", "r2"], "human_readable_id": [0, 1, 2],
        "source": ["SCROOGE", "BOB", "BOB"], "target": ["BOB", "BOB CRATCHIT", "SCROOGE"],
        "description": ["employs", "same", "fears"], "weight": [1.0, 5.0, 2.0],
        "combined_degree": [5, 4, 5]})
    claims = pa.table({"id": ["c0"], "human_readable_id": ["0"], "subject_id": ["BOB"],
                       "type": ["x"], "status": ["TRUE"], "description": ["is poor"]})
    units = pa.table({"id": ["u1", "u2"], "human_readable_id": [1, 2], "text": ["a", "b"],
                      "n_tokens": [1, 1]})
    reports = pa.table({"id": ["p0", "p1"], "community": [0, 1], "level": [0, 0],
                        "title": ["Office", "Home"], "summary": ["", ""],
                        "full_content": ["x", "y"], "rank": [1.0, 1.0]})
    memberships = pa.table({"community": [1, 0], "entity_ids": [["e2", "e3"], ["e0", "e2"]]})
    return LocalData(Rows(entities), Rows(relationships), Rows(claims), RowsById(units),
                     RowsById(reports), memberships, VectorTable([], np.zeros((0, 0), np.float32)),
                     aliases=[("OLD EBENEZER", "e1")])

def test_names_longest_first_then_in_table_order_and_aliases_count():
    data = make_data()
    assert named_entities("Did Ebenezer Scrooge pay Bob Cratchit?", data) == [1, 3, 0, 2]
    assert named_entities("What did old Ebenezer do?", data) == [1]
    assert named_entities("Who is Marley?", data) == []


def test_lookups_give_row_numbers_and_rows_are_dicts_when_taken():
    data = make_data()
    assert data.edges_of.get("BOB") == [0, 1, 2]  # as source and as target, in row order
    assert data.edges_of.get("SCROOGE") == [0, 2] and data.edges_of.get("MARLEY") == []
    assert data.reports_of.get("e2") == [0, 1] and data.claims_of.get("BOB") == [0]
    assert data.members_of.get(1) == [2, 3] and data.members_of.get(0) == [0, 2]
    assert data.entities[2] == {"id": "e2", "human_readable_id": 2, "title": "BOB",
                                "type": "PERSON", "description": "clerk",
                                "text_unit_ids": ["u2"], "degree": 3}
    assert "u2" in data.units and "u9" not in data.units and data.units.take(["u2"])[0]["text"] == "b"
    assert data.relationships.numbers("weight").tolist() == [1.0, 5.0, 2.0]
    assert data.by_id["e3"] == 3
