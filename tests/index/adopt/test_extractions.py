"""Microsoft GraphRAG's extractions as our kept extractions: its text units placed in our
chunks of the same document (other windows, a byte-order mark), each given once, to the
chunk it overlaps most; elements carry their merged descriptions, relationships their
weight shared among their units."""

from pathlib import Path

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.index.adopt.extractions import (
    kept_extractions, place_units, project_input)
from graphrag_ray.index.extract.kept_extractions import text_hash

TEXT = "".join(f"Sentence {i} tells of Scrooge and Marley. " for i in range(40))


def _ours(windows: list[tuple[int, int]]) -> tuple[pa.Table, pa.Table]:
    documents = pa.table({"id": ["d1"], "title": ["book.txt"], "text": [TEXT]})
    chunks = pa.table({"id": [f"c{i}" for i in range(len(windows))],
                       "text": [TEXT[a:b] for a, b in windows],
                       "document_id": ["d1"] * len(windows)})
    return documents, chunks


def _theirs(windows: list[tuple[int, int]], bom: bool = True) -> dict[str, pa.Table]:
    text = ("\ufeff" if bom else "") + TEXT
    shift = 1 if bom else 0
    units = pa.table({
        "id": [f"u{i}" for i in range(len(windows))],
        "text": [text[a + shift * (a > 0):b + shift] for a, b in windows],
        "document_ids": [["m1"]] * len(windows),
        "entity_ids": [["e1"], ["e1", "e2"], ["e2"]][:len(windows)],
        "relationship_ids": [["r1"], ["r1"], []][:len(windows)],
        "covariate_ids": [[]] * len(windows)})
    return {
        schema.TEXT_UNITS: units,
        schema.DOCUMENTS: pa.table({"id": ["m1"], "title": ["book.txt"]}),
        schema.ENTITIES: pa.table({"id": ["e1", "e2"], "title": ["SCROOGE", "MARLEY"],
                                   "type": ["PERSON", "PERSON"],
                                   "description": ["A miser", "His late partner"]}),
        schema.RELATIONSHIPS: pa.table({"id": ["r1"], "source": ["SCROOGE"],
                                        "target": ["MARLEY"], "description": ["Partners"],
                                        "weight": [4.0], "text_unit_ids": [["u0", "u1"]]})}


def test_each_of_its_units_goes_to_the_chunk_it_overlaps_most():
    n = len(TEXT)
    documents, chunks = _ours([(0, n // 2), (n // 2 - 20, n)])
    theirs = _theirs([(0, n // 3), (n // 3 - 10, 2 * n // 3 - 60), (2 * n // 3, n)])
    placement = place_units(documents, chunks, theirs[schema.TEXT_UNITS],
                            theirs[schema.DOCUMENTS])
    assert placement.units_of == {"c0": ["u0", "u1"], "c1": ["u2"]}
    assert placement.covered == {"c0", "c1"} and not placement.unplaced
    kept = kept_extractions(placement, dict(zip(chunks.column("id").to_pylist(),
                                                chunks.column("text").to_pylist())), theirs)
    rows = {row["text_hash"]: row for row in kept.to_pylist()}
    first = rows[text_hash(chunks.column("text")[0].as_py())]
    assert [e["title"] for e in first["entities"]] == ["SCROOGE", "MARLEY"]
    assert first["entities"][0]["description"] == "A miser"
    # r1 is named by two units, both in c0: its whole weight is back there.
    assert [(r["source"], r["target"], r["strength"]) for r in first["relationships"]] == [
        ("SCROOGE", "MARLEY", 4.0)]
    second = rows[text_hash(chunks.column("text")[1].as_py())]
    assert [e["title"] for e in second["entities"]] == ["MARLEY"]
    assert second["relationships"] == []


def test_a_chunk_whose_text_it_never_had_keeps_nothing_and_a_unit_not_found_is_said():
    n = len(TEXT)
    documents, chunks = _ours([(0, n // 2), (n // 2, n)])
    theirs = _theirs([(0, n // 2)], bom=False)
    lost = pa.table({"id": ["u9"], "text": ["Text that is in no document of ours."],
                     "document_ids": [["m1"]], "entity_ids": [[]], "relationship_ids": [[]],
                     "covariate_ids": [[]]}, schema=theirs[schema.TEXT_UNITS].schema)
    units = pa.concat_tables([theirs[schema.TEXT_UNITS], lost])
    placement = place_units(documents, chunks, units, theirs[schema.DOCUMENTS])
    assert placement.covered == {"c0"}  # c1 is extracted by the update, like new text
    assert placement.unplaced == ["u9"] and placement.kept_out == []


def test_a_unit_only_in_text_we_keep_out_is_told_apart():
    n = len(TEXT)
    documents, chunks = _ours([(n // 2, n)])  # the first half is boilerplate to us
    theirs = _theirs([(0, n // 3), (n // 2, n)], bom=False)
    placement = place_units(documents, chunks, theirs[schema.TEXT_UNITS],
                            theirs[schema.DOCUMENTS])
    assert placement.kept_out == ["u0"] and placement.units_of == {"c0": ["u1"]}


def test_the_input_folder_is_where_its_settings_say(tmp_path):
    settings = tmp_path / "settings.yaml"
    (tmp_path / "corpus").mkdir()
    assert project_input(settings, {"input_storage": {"base_dir": "corpus"}}) == \
        tmp_path / "corpus"
    assert project_input(settings, {"input": {"storage": {"base_dir": "corpus"}}}) == \
        tmp_path / "corpus"
    assert project_input(settings, {}) is None  # no input/ folder
    (tmp_path / "input").mkdir()
    assert project_input(settings, {}) == tmp_path / "input"
    assert project_input(None, {}) is None
    assert isinstance(project_input(settings, {}), Path)
