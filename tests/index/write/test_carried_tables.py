"""An update writes its documents and text units from the previous version's parts: a part
whose rows are all carried unchanged is the previous version's file (linked, not written),
a part that held a deleted file's rows is written again without them, and the new files'
rows follow in new parts, numbered after the previous largest number; carried rows keep their
numbers, and the tables hold what a full build's hold. An index kept before each document's
file number was is written whole by its first update; the next one links."""

import os
from pathlib import Path

import pytest

from graphrag_ray import schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.carry_over import READING
from graphrag_ray.index.extract import stage
from graphrag_ray.index.update import update_index
from graphrag_ray.index.write import carried_tables
from graphrag_ray.index.chunks.positions import DOCUMENT_FILES
from graphrag_ray.storage import IndexStore
from graphrag_testkit.synthetic_corpus import generate_corpus

TABLES = {schema.DOCUMENTS: ["title", "text", "text_unit_ids"],
          schema.TEXT_UNITS: ["text", "n_tokens", "document_ids", "entity_ids",
                              "relationship_ids", "document_id", "extraction_status"]}


@pytest.fixture
def corpus(tmp_path, monkeypatch) -> Path:
    # Read batches of 4 files and parts of a few rows: the tables come in several parts,
    # and a small last part is not written again with the new rows here.
    monkeypatch.setattr(stage, "FILES_PER_READ", 4)
    monkeypatch.setattr(carried_tables, "SMALL_PART_BYTES", 0)
    folder = tmp_path / "corpus"
    generate_corpus(folder, 24_000, seed=3, tokens_per_document=1_500)
    return folder


def _config():
    return load_config(None, ["runtime.engine=local", "output.rows_per_part=8"])


def _build(corpus: Path, url: str) -> None:
    build_index(str(corpus), url, _config(), progress=lambda _: None)


def _update(corpus: Path, url: str) -> None:
    update_index(url, str(corpus), _config(), progress=lambda _: None)


def _parts(url: str, name: str) -> dict[str, int]:
    """The table's stored files by name, with their inodes."""
    version = IndexStore(url).open()
    return {path.rsplit("/", 1)[-1]: os.stat(path).st_ino for path in version.table_files(name)}


def _numbers(url: str, name: str) -> dict[str, int]:
    table = IndexStore(url).open().read_table(name, ["id", "human_readable_id"])
    return dict(zip(*(table.column(c).to_pylist() for c in ("id", "human_readable_id"))))


def _contents(url: str) -> dict[str, dict]:
    """Both tables by id, list columns sorted (their order follows the part order)."""
    version = IndexStore(url).open()
    return {name: {row.pop("id"): {c: sorted(v) if isinstance(v, list) else v
                                   for c, v in row.items()}
                   for row in version.read_table(name, ["id", *columns]).to_pylist()}
            for name, columns in TABLES.items()}


@pytest.mark.slow  # whole builds and updates
def test_an_add_links_the_previous_parts_and_numbers_its_rows_after_them(corpus, tmp_path):
    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    _build(corpus, index)
    before = {name: _parts(index, name) for name in TABLES}
    numbers = {name: _numbers(index, name) for name in TABLES}
    assert all(len(parts) > 2 for parts in before.values())
    files = sorted(corpus.glob("*.txt"))
    (corpus / "aa-first.txt").write_text(files[4].read_text()[:2500] + "\n\nJonas Pellew "
                                         "founded Quarry Lane Works in Harrowgate.")
    _update(corpus, index)
    for name in TABLES:
        after = _parts(index, name)
        assert {n: after.get(n) for n in before[name]} == before[name], name  # all linked
        assert after.keys() - before[name].keys(), name  # and the new file's rows after them
        now = _numbers(index, name)
        assert {i: now[i] for i in numbers[name]} == numbers[name], name
        assert min(now[i] for i in now.keys() - numbers[name].keys()) > max(
            numbers[name].values()), name
    _build(corpus, full)
    assert _contents(index) == _contents(full)

    # A file deleted from the middle: the parts that held its rows are written again
    # without them, the others stay linked.
    before = {name: _parts(index, name) for name in TABLES}
    gone = files[6].read_text()
    files[6].unlink()
    _update(corpus, index)
    contents = _contents(index)
    assert not [d for d in contents[schema.DOCUMENTS].values() if d["text"] == gone]
    for name in TABLES:
        after = _parts(index, name)
        rewritten = [n for n in before[name] if after.get(n) != before[name][n]]
        assert 0 < len(rewritten) < len(before[name]) / 2, name
    _build(corpus, str(tmp_path / "full-after"))
    assert contents == _contents(str(tmp_path / "full-after"))


@pytest.mark.slow  # whole builds and updates
def test_an_index_without_document_file_numbers_is_written_whole_once(corpus, tmp_path):
    index = str(tmp_path / "index")
    _build(corpus, index)
    version = IndexStore(index).open()
    numbers = _numbers(index, schema.TEXT_UNITS)
    version.fs.rm(f"{version.root}/{READING}/{DOCUMENT_FILES}.parquet")
    (corpus / "zz-last.txt").write_text("Marta Quill joined Quarry Lane Works in Harrowgate.")
    _update(corpus, index)
    before = _parts(index, schema.TEXT_UNITS)
    assert not set(before.values()) & set(_parts_of(version, schema.TEXT_UNITS))
    # (Numbered in reading order as a build numbers them: the new file is listed last.)
    assert {i: _numbers(index, schema.TEXT_UNITS)[i] for i in numbers} == numbers
    (corpus / "zz-later.txt").write_text("Jonas Pellew left Quarry Lane Works for Dunmore.")
    _update(corpus, index)
    after = _parts(index, schema.TEXT_UNITS)
    assert {n: after.get(n) for n in before} == before


def _parts_of(version, name: str) -> list[int]:
    return [os.stat(path).st_ino for path in version.table_files(name)]
