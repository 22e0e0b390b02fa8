"""Real corpora lose no text: every book of a concatenated Project Gutenberg file is
extracted, a document present several times is extracted once and linked to every copy, and
what is kept out of extraction is counted, said, and named per file."""

import re
from pathlib import Path

import pytest

from graphrag_ray import schema
from graphrag_ray.cli import kept_out_line
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.chunks.repeated_passages import framed_boilerplate
from graphrag_ray.storage import IndexStore
from graphrag_ray.tokens import count_tokens

from conftest import CAROL_DIR

QUIET = {"progress": lambda _: None}
CAROL = (CAROL_DIR / "book.txt").read_text(encoding="utf-8")
START = CAROL.index("*** START OF")
END = CAROL.index("*** END OF")
HEADER, LICENCE = CAROL[:CAROL.index("\n", START) + 1], CAROL[END:]
BODY = CAROL[len(HEADER):END]


def gutenberg_book(body: str, title: str) -> str:
    """`body` framed as Project Gutenberg frames a book: header, START line, END line,
    licence."""
    return (HEADER.replace("A Christmas Carol", title).replace("A CHRISTMAS CAROL",
                                                               title.upper())
            + body + LICENCE.replace("A CHRISTMAS CAROL", title.upper()))


def renamed(text: str) -> str:
    """A second book: Carol with every name changed, so its entities are its own."""
    for old, new in (("Scrooge", "Nemo"), ("Marley", "Aronnax"), ("Cratchit", "Conseil"),
                     ("Fezziwig", "Ned Land"), ("Fred", "Farragut"), ("Tim", "Pierre")):
        text = text.replace(old, new).replace(old.upper(), new.upper())
    return text


def build(folder: Path, output: Path):
    manifest = build_index(str(folder), str(output), load_config(None, ["runtime.engine=local"]),
                           **QUIET)
    return manifest, IndexStore(str(output)).open()


def titles(version) -> set[str]:
    return set(version.read_table(schema.ENTITIES, ["title"]).column("title").to_pylist())


def licence_tokens(*books: str) -> int:
    return sum(count_tokens(part) for book in books for part in framed_boilerplate(book)[1])


def test_every_start_end_pair_frames_a_book():
    body, boilerplate = framed_boilerplate(CAROL + "\n" + renamed(CAROL))
    assert body.count("Marley was dead") == CAROL.count("Marley was dead")
    assert "Aronnax was dead" in body and "Project Gutenberg" not in body
    # Header; licence and second header; licence.
    assert len(boilerplate) == 3 and all("Gutenberg" in part for part in boilerplate)
    # Text between two books that is not Gutenberg's is text; unpaired markers frame nothing.
    end_line = CAROL[END:CAROL.index("\n", END)]
    body, _ = framed_boilerplate(CAROL[:END] + end_line + "\nMy own notes on Dickens.\n"
                                 + CAROL[START:])
    assert "My own notes on Dickens." in body and body.count("Marley was dead") == 2 * CAROL.count(
        "Marley was dead")
    assert framed_boilerplate(CAROL[:END])[0] == CAROL[:END]


def test_two_concatenated_books_are_both_extracted(tmp_path):
    """`cat a.txt b.txt`: the second book was kept out of extraction as 'licence' (56% of a
    real pair's tokens), and a question about its hero found nothing."""
    (tmp_path / "in").mkdir()
    pair = CAROL + renamed(CAROL)
    (tmp_path / "in" / "two.txt").write_text(pair, encoding="utf-8")
    manifest, version = build(tmp_path / "in", tmp_path / "index")
    assert {"NEMO", "ARONNAX", "SCROOGE", "MARLEY"} <= titles(version)
    corpus = count_tokens(pair)
    books = corpus - licence_tokens(pair)
    kept_out = manifest.extraction.kept_out_tokens
    assert kept_out <= licence_tokens(pair) + 0.05 * books
    assert 0.05 < manifest.extraction.kept_out_share < 0.15


@pytest.mark.slow  # a 745k-token build
def test_a_file_of_many_books_extracts_their_text(tmp_path):
    """A file of 22 framed books (the 50 MB case in small): >= 95% of the non-licence text
    is extracted; before, everything after the first END line was licence."""
    staves = re.split(r"(?=\nSTAVE )", BODY)
    books = [gutenberg_book(staves[i % len(staves)] * 2 if i % 2 else staves[i % len(staves)],
                            f"Volume {i}") for i in range(22)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "shelf.txt").write_text("\n".join(books), encoding="utf-8")
    manifest, _ = build(tmp_path / "in", tmp_path / "index")
    text = "\n".join(books)
    non_licence = count_tokens(text) - licence_tokens(text)
    extracted_once = count_tokens(framed_boilerplate(text)[0])
    assert extracted_once >= 0.95 * non_licence
    assert manifest.extraction.kept_out_tokens <= licence_tokens(text) * 1.05 + 100


@pytest.mark.slow  # whole builds and updates
def test_five_copies_of_a_book_give_the_graph_of_one_with_five_documents(tmp_path):
    """Every paragraph was a 'repeated passage' (in 5 of 5 documents), so the whole book was
    kept out of extraction, the first copy included: 49 entities against 207."""
    (tmp_path / "one").mkdir()
    (tmp_path / "five").mkdir()
    (tmp_path / "one" / "carol.txt").write_text(BODY, encoding="utf-8")
    for i in range(5):
        (tmp_path / "five" / f"carol-{i}.txt").write_text(
            f"Copy {i} of the book, as downloaded for reading group {i}.\n\n{BODY}",
            encoding="utf-8")
    _, one = build(tmp_path / "one", tmp_path / "index-one")
    manifest, five = build(tmp_path / "five", tmp_path / "index-five")
    assert len(titles(five) ^ titles(one)) <= 0.05 * len(titles(one))
    assert manifest.repeated_passages["content_passages"] > 100
    assert manifest.repeated_passages["boilerplate_passages"] == 0
    assert manifest.extraction.kept_out_share < 0.01
    documents = five.read_table(schema.DOCUMENTS).to_pylist()
    units = {u["id"]: u for u in five.read_table(schema.TEXT_UNITS).to_pylist()}
    assert len(documents) == 5
    # Every copy is linked to the text units that extracted its text.
    extracted = [u for u in units.values() if u["entity_ids"]]
    for document in documents:
        linked = [units[i] for i in document["text_unit_ids"] if units[i]["entity_ids"]]
        assert len(linked) >= 0.9 * len(extracted)
    scrooge = next(u for u in extracted if "Scrooge" in u["text"])
    assert len(scrooge["document_ids"]) == 5
    line = kept_out_line(manifest)
    assert "repeated text extracted once" in line


def test_a_file_mostly_kept_out_is_named(tmp_path):
    """A short book beside a long licence: the build says which file lost most of its
    text to boilerplate."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "short.txt").write_text(
        gutenberg_book("\nMarley was dead, said Scrooge to Bob Cratchit in London.\n", "Short"),
        encoding="utf-8")
    manifest, _ = build(tmp_path / "in", tmp_path / "index")
    warnings = manifest.input_warnings
    assert any("kept out of extraction" in w and "short.txt (" in w for w in warnings)
    assert kept_out_line(manifest).startswith("kept out of extraction: ")


def test_the_build_summary_says_what_was_kept_out_and_no_llm_table_offline(tmp_path, capsys):
    """The summary said `extraction: 227 chunks, 0 failed` while 56% of the tokens were never
    extracted (only the manifest knew); offline builds printed an LLM table of zeros."""
    from graphrag_ray.cli import main

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "carol.txt").write_text(CAROL, encoding="utf-8")
    assert main(["index", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "ix"),
                 "--set", "runtime.engine=local"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"kept out of extraction: [\d,]+ tokens \(\d+\.\d%\): boilerplate 2 text "
                     r"units", out), out
    assert "LLM usage" not in out
