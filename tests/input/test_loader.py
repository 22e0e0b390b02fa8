import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphrag_ray.config import InputConfig
from graphrag_ray.errors import InputError
from graphrag_ray.input.loader import load_documents


def test_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no input documents"):
        load_documents(str(tmp_path), InputConfig())


def test_missing_input(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_documents(str(tmp_path / "missing"), InputConfig())


def test_bad_files_are_skipped_with_reasons_and_text_is_never_lost(tmp_path):
    (tmp_path / "good.txt").write_text("Alice met Bob in Paris.", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "latin.txt").write_bytes("Café Müller met Zoë.".encode("cp1252"))
    loaded = load_documents(str(tmp_path), InputConfig())
    reasons = {s["path"]: s["reason"] for s in loaded.skipped}
    assert reasons == {"blob.txt": "binary file (contains NUL bytes), not text",
                       "empty.txt": "empty file"}
    texts = dict(zip(loaded.documents.column("title").to_pylist(),
                     loaded.documents.column("text").to_pylist()))
    assert texts["latin.txt"] == "Café Müller met Zoë."
    assert any("latin.txt" in w and "not valid utf-8" in w for w in loaded.warnings)


def test_only_bad_files_is_an_error_listing_reasons(tmp_path):
    (tmp_path / "empty.md").write_text("  \n")
    with pytest.raises(InputError, match="empty.md: empty file"):
        load_documents(str(tmp_path), InputConfig())


def test_tabular_inputs_with_configured_columns(tmp_path):
    (tmp_path / "a.csv").write_text("headline,body\nFirst,Alpha text\nSecond,Beta text\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"headline": "Third", "body": "Gamma"}) + "\n")
    pq.write_table(pa.table({"headline": ["Fourth"], "body": ["Delta"]}), tmp_path / "c.parquet")
    config = InputConfig(text_column="body", title_column="headline")
    docs = load_documents(str(tmp_path), config).documents
    assert docs.column("title").to_pylist() == ["First", "Second", "Third", "Fourth"]
    assert docs.column("text").to_pylist() == ["Alpha text", "Beta text", "Gamma", "Delta"]


def test_missing_text_column_names_file_and_column(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    with pytest.raises(InputError, match="a.csv: has no column 'text'"):
        load_documents(str(tmp_path), InputConfig())


def test_ids_are_deterministic(tmp_path):
    (tmp_path / "a.txt").write_text("Same text")
    first = load_documents(str(tmp_path), InputConfig()).documents.column("id").to_pylist()
    second = load_documents(str(tmp_path), InputConfig()).documents.column("id").to_pylist()
    assert first == second


def test_an_id_column_keeps_a_record_the_same_document_when_rows_move(tmp_path):
    def ids(rows: str, config: InputConfig) -> dict[str, str]:
        (tmp_path / "a.csv").write_text("key,text\n" + rows)
        docs = load_documents(str(tmp_path), config).documents
        return dict(zip(docs.column("text").to_pylist(), docs.column("id").to_pylist()))

    keyed = InputConfig(id_column="key")
    before = ids("k1,Alpha\nk2,Beta\n", keyed)
    after = ids("k0,New first row\nk1,Alpha\nk2,Beta\n", keyed)
    assert after["Alpha"] == before["Alpha"] and after["Beta"] == before["Beta"]
    # Without it, a record is its row number: inserting a row above renames the ones below.
    assert ids("k1,Alpha\n", InputConfig())["Alpha"] != \
        ids("k0,New\nk1,Alpha\n", InputConfig())["Alpha"]
    (tmp_path / "a.csv").write_text("x,text\n1,Alpha\n")
    with pytest.raises(InputError, match="a.csv: has no column 'key'.*input.id_column"):
        load_documents(str(tmp_path), keyed)


def test_a_bad_jsonl_line_loses_that_record_not_the_file(tmp_path):
    lines = [json.dumps({"title": f"Doc {i}", "text": f"Record {i} about Paris."})
             for i in range(50)]
    lines.insert(20, "2026-11-30 INFO a log line that is not JSON")
    lines.append('{"title": "Doc 50", "text": "trunc')  # a truncated last line
    (tmp_path / "records.jsonl").write_text("\n".join(lines), encoding="utf-8")
    (tmp_path / "garbage.jsonl").write_text("not json\nnor this\n", encoding="utf-8")
    loaded = load_documents(str(tmp_path), InputConfig())
    assert loaded.documents.num_rows == 50  # every good record kept
    assert [s["path"] for s in loaded.skipped] == ["garbage.jsonl"]  # nothing good in it
    warning, = [w for w in loaded.warnings if "records.jsonl" in w]
    assert "2 of 52 records skipped" in warning and "line 21" in warning and "line 52" in warning


def test_utf16_text_with_a_byte_order_mark_is_read_not_skipped_as_binary(tmp_path):
    (tmp_path / "windows.txt").write_bytes("Zoë met Bob in Paris.".encode("utf-16"))
    (tmp_path / "big-endian.txt").write_bytes(b"\xfe\xff" + "Anna in Oslo.".encode("utf-16-be"))
    loaded = load_documents(str(tmp_path), InputConfig())
    assert loaded.skipped == []
    assert sorted(loaded.documents.column("text").to_pylist()) == [
        "Anna in Oslo.", "Zoë met Bob in Paris."]


def test_a_semicolon_separated_csv_reads_with_its_delimiter(tmp_path):
    (tmp_path / "export.csv").write_text("title;text\nOne;Alice met Bob.\nTwo;Carol left.\n",
                                         encoding="utf-8")
    with pytest.raises(InputError, match="no column 'text'"):
        load_documents(str(tmp_path), InputConfig())
    loaded = load_documents(str(tmp_path), InputConfig(csv_delimiter=";"))
    assert loaded.documents.column("text").to_pylist() == ["Alice met Bob.", "Carol left."]


def test_a_json_array_of_records_is_read_and_other_file_types_are_said(tmp_path):
    (tmp_path / "records.json").write_text(json.dumps(
        [{"title": "One", "text": "Alice met Bob."}, "not a record",
         {"title": "Two", "text": "Carol left."}]), encoding="utf-8")
    (tmp_path / "one.json").write_text(json.dumps({"title": "Three", "text": "Dan stayed."}))
    (tmp_path / "paper.pdf").write_bytes(b"%PDF-1.7 ...")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x01")
    loaded = load_documents(str(tmp_path), InputConfig())
    assert sorted(loaded.documents.column("text").to_pylist()) == [
        "Alice met Bob.", "Carol left.", "Dan stayed."]
    assert [s["path"] for s in loaded.skipped] == ["paper.pdf"]
    assert "unsupported file type" in loaded.skipped[0]["reason"]
    assert any("1 of 3 array entries" in w for w in loaded.warnings)
