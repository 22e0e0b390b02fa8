import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphrag_ray.config import InputConfig
from graphrag_ray.errors import InputError
from graphrag_ray.input.loader import list_input_files, load_documents


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
    # The reason is whole: json's message with where it stopped, not cut before it.
    assert "line 52 is not JSON (Unterminated string starting at: column 29)" in warning


def test_utf16_text_with_a_byte_order_mark_is_read_not_skipped_as_binary(tmp_path):
    (tmp_path / "windows.txt").write_bytes("Zoë met Bob in Paris.".encode("utf-16"))
    (tmp_path / "big-endian.txt").write_bytes(b"\xfe\xff" + "Anna in Oslo.".encode("utf-16-be"))
    loaded = load_documents(str(tmp_path), InputConfig())
    assert loaded.skipped == []
    assert sorted(loaded.documents.column("text").to_pylist()) == [
        "Anna in Oslo.", "Zoë met Bob in Paris."]


def test_utf16_text_cut_short_is_read_with_the_bad_end_replaced_and_said(tmp_path):
    # A copy cut after an odd number of bytes: the last half character is no UTF-16.
    (tmp_path / "cut.txt").write_bytes("Zoë met Bob in Paris.".encode("utf-16") + b"\x00")
    (tmp_path / "fine.txt").write_text("Anna in Oslo.", encoding="utf-8")
    loaded = load_documents(str(tmp_path), InputConfig())
    assert loaded.skipped == []
    texts = sorted(loaded.documents.column("text").to_pylist())
    assert texts == ["Anna in Oslo.", "Zoë met Bob in Paris.\ufffd"]
    assert any(w.startswith("cut.txt: not valid utf-16 after its byte order mark")
               for w in loaded.warnings), loaded.warnings


def test_a_semicolon_or_tab_separated_csv_is_sniffed_or_configured(tmp_path):
    (tmp_path / "export.csv").write_text("title;text\nOne;Alice met Bob.\nTwo;Carol left.\n",
                                         encoding="utf-8")
    for config in (InputConfig(), InputConfig(csv_delimiter=";")):
        loaded = load_documents(str(tmp_path), config)
        assert loaded.documents.column("text").to_pylist() == ["Alice met Bob.", "Carol left."]
    (tmp_path / "export.csv").write_text("title\ttext\nOne\tAlice, Bob; and Carol.\n")
    loaded = load_documents(str(tmp_path), InputConfig())
    assert loaded.documents.column("text").to_pylist() == ["Alice, Bob; and Carol."]
    # Configured wrongly: the reason names the delimiter and the setting.
    with pytest.raises(InputError, match="delimiter ','.*input.csv_delimiter"):
        load_documents(str(tmp_path), InputConfig(csv_delimiter=","))


def test_a_malformed_csv_record_loses_that_record_not_the_rest(tmp_path):
    (tmp_path / "a.csv").write_text(
        'title,text\nA,"Alice met Bob."\nB,"Bob never closed his quote\nC,Carol left.\n'
        'D,"Dan" stayed\nE,Eve arrived.,extra\nF,"Frank,\nover two lines."\n',
        encoding="utf-8")
    loaded = load_documents(str(tmp_path), InputConfig())
    assert loaded.documents.column("text").to_pylist() == [
        "Alice met Bob.", "Carol left.", "Frank,\nover two lines."]
    warning, = loaded.warnings
    assert "a.csv: 3 malformed CSV records skipped" in warning
    assert "line 3" in warning and "line 5" in warning and "line 6" in warning


def test_a_json_array_of_records_is_read_and_other_file_types_are_said(tmp_path):
    (tmp_path / "records.json").write_text(json.dumps(
        [{"title": "One", "text": "Alice met Bob."}, "not a record",
         {"title": "Two", "text": "Carol left."}]), encoding="utf-8")
    (tmp_path / "one.json").write_text(json.dumps({"title": "Three", "text": "Dan stayed."}))
    (tmp_path / "slides.pptx").write_bytes(b"PK\x03\x04 ...")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x01")
    loaded = load_documents(str(tmp_path), InputConfig())
    assert sorted(loaded.documents.column("text").to_pylist()) == [
        "Alice met Bob.", "Carol left.", "Dan stayed."]
    assert [s["path"] for s in loaded.skipped] == ["slides.pptx"]
    assert "unsupported file type" in loaded.skipped[0]["reason"]
    assert any("1 of 3 array entries" in w for w in loaded.warnings)


def _pdf(pages: list[str], title: str | None = None) -> bytes:
    """A PDF with one line of Helvetica text per page (pypdf writes the structure)."""
    import io

    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica")}))
    for text in pages:
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
        content = DecodedStreamObject()
        content.set_data(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(content)
    if title:
        writer.add_metadata({"/Title": title})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _docx() -> bytes:
    import io

    import docx

    document = docx.Document()
    document.core_properties.title = "Ghosts"
    document.add_paragraph("A preface before any heading.")
    document.add_heading("Marley", level=1)
    document.add_paragraph("Marley was dead, to begin with.")
    document.add_heading("Scrooge", level=1)
    document.add_paragraph("Scrooge knew he was dead.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_pdf_docx_and_html_are_read_with_page_and_section_provenance(tmp_path):
    (tmp_path / "book.pdf").write_bytes(_pdf(["Scrooge met Marley.", "Bob Cratchit waited."],
                                             title="A Carol"))
    (tmp_path / "notes.docx").write_bytes(_docx())
    (tmp_path / "page.html").write_text(
        "<html><head><title>Fezziwig</title><style>p {color: red}</style></head><body>"
        "<script>var hidden = 1;</script><h1>The ball</h1><p>Fezziwig danced.</p>"
        "<ul><li>Mrs Fezziwig too.</li></ul><h2>After</h2><div>Everyone went home.</div>"
        "</body></html>", encoding="utf-8")
    loaded = load_documents(str(tmp_path), InputConfig())
    assert loaded.skipped == []
    docs = {d["title"]: d for d in loaded.documents.to_pylist()}
    pdf = docs["A Carol"]
    assert "Scrooge met Marley." in pdf["text"] and "Bob Cratchit waited." in pdf["text"]
    pages = json.loads(pdf["metadata"])["pages"]
    assert [p["page"] for p in pages] == [1, 2]
    assert pdf["text"][pages[1]["start"]:].startswith("Bob Cratchit")
    notes = docs["Ghosts"]
    sections = json.loads(notes["metadata"])["sections"]
    assert [s["heading"] for s in sections] == [None, "Marley", "Scrooge"]
    assert notes["text"][sections[2]["start"]:] == "Scrooge\nScrooge knew he was dead."
    page = docs["Fezziwig"]
    assert "var hidden" not in page["text"] and "color" not in page["text"]
    assert page["text"] == ("The ball\nFezziwig danced.\nMrs Fezziwig too.\n\n"
                            "After\nEveryone went home.")
    assert [s["heading"] for s in json.loads(page["metadata"])["sections"]] == \
        ["The ball", "After"]


def test_a_pdf_without_text_or_broken_is_skipped_with_its_reason(tmp_path):
    (tmp_path / "scan.pdf").write_bytes(_pdf([""]))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7 truncated")
    (tmp_path / "ok.txt").write_text("Marley was dead.")
    loaded = load_documents(str(tmp_path), InputConfig())
    reasons = {s["path"]: s["reason"] for s in loaded.skipped}
    assert "OCR" in reasons["scan.pdf"]
    assert reasons["broken.pdf"].startswith("not a readable PDF")
    assert loaded.documents.column("text").to_pylist() == ["Marley was dead."]


def test_an_unsupported_single_file_fails_before_any_work(tmp_path):
    (tmp_path / "slides.pptx").write_bytes(b"PK\x03\x04")
    with pytest.raises(InputError, match="unsupported file type .pptx"):
        list_input_files(str(tmp_path / "slides.pptx"), InputConfig())


def test_a_utf8_file_with_a_bad_byte_stays_utf8_and_names_the_line(tmp_path):
    text = "Scrooge’s nephew said “Merry Christmas” to Bob Cratchit.\n" * 50
    data = bytearray(text.encode("utf-8"))
    position = data.index(b"\n", 20 * len(data) // 50) + 5  # inside line 22
    data[position:position + 1] = b"\xe9"
    loaded = load_documents(str(_write(tmp_path, "book.txt", bytes(data))), InputConfig())
    decoded = loaded.documents.column("text")[0].as_py()
    assert "â€" not in decoded and decoded.count("’") == 50 and decoded.count("\ufffd") == 1
    (warning,) = loaded.warnings
    assert "book.txt" in warning and "1 byte(s)" in warning and "line 22" in warning
    assert "read as UTF-8" in warning


def test_a_latin1_file_is_decoded_whole_and_the_warning_says_so(tmp_path):
    text = "Café Müller met Zoë in Köln. " * 20
    loaded = load_documents(str(_write(tmp_path, "latin.txt", text.encode("latin-1"))),
                            InputConfig())
    assert loaded.documents.column("text")[0].as_py() == text
    (warning,) = loaded.warnings
    assert "decoded as cp1252" in warning and "replace" not in warning


def _write(folder, name, data: bytes):
    (folder / name).write_bytes(data)
    return folder
