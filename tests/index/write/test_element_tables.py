"""An update's unchanged entities and relationships stay in the previous version's parts,
linked, with the rows those parts no longer serve left out: the tables read as a full build's
(each element once), numbers kept, queries answer, and the next update carries on."""

import os
from pathlib import Path

import pytest

from graphrag_ray import GraphIndex, schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_ray.index.write import element_tables
from graphrag_ray.storage import IndexStore
from graphrag_testkit.synthetic_corpus import generate_corpus

COMPARED = {schema.ENTITIES: ("title", ["type", "description", "text_unit_ids", "frequency",
                                        "degree"]),
            schema.RELATIONSHIPS: ("id", ["source", "target", "description", "weight",
                                          "combined_degree", "text_unit_ids"])}


@pytest.fixture
def corpus(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(element_tables, "ELEMENT_ROWS_PER_PART", 16)  # tables in parts
    folder = tmp_path / "corpus"
    generate_corpus(folder, 24_000, seed=3, tokens_per_document=1_500)
    return folder


def _config():
    return load_config(None, ["runtime.engine=local"])


def _contents(url: str) -> dict:
    version = IndexStore(url).open()
    contents = {}
    for name, (key, columns) in COMPARED.items():
        rows = version.read_table(name, [key, *columns]).to_pylist()
        assert len({row[key] for row in rows}) == len(rows), name  # each element once
        contents[name] = {row.pop(key): {c: sorted(v) if isinstance(v, list) else v
                                         for c, v in row.items()} for row in rows}
    return contents


def _inodes(url: str, name: str) -> dict[str, int]:
    return {path.rsplit("/", 1)[-1]: os.stat(path).st_ino
            for path in IndexStore(url).open().table_files(name)}


def _numbers(url: str, name: str) -> dict[str, int]:
    table = IndexStore(url).open().read_table(name, ["id", "human_readable_id"])
    return dict(zip(*(table.column(c).to_pylist() for c in ("id", "human_readable_id"))))


@pytest.mark.slow  # whole builds and updates
def test_unchanged_elements_stay_in_the_linked_parts_of_before(corpus, tmp_path):
    index = str(tmp_path / "index")
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    before = {name: _inodes(index, name) for name in COMPARED}
    numbers = {name: _numbers(index, name) for name in COMPARED}
    assert all(len(parts) > 2 for parts in before.values())
    # A file of new names only: every previous row is unchanged, every part linked.
    (corpus / "zz-new.txt").write_text("Jonas Pellew founded Quarry Lane Works in Harrowgate. "
                                       "Marta Quill joined Quarry Lane Works.")
    update_index(index, str(corpus), _config(), progress=lambda _: None)
    for name in COMPARED:
        after = _inodes(index, name)
        assert {n: after.get(n) for n in before[name]} == before[name], name
        assert after.keys() - before[name].keys(), name  # the new rows after them
        now = _numbers(index, name)
        assert {i: now[i] for i in numbers[name]} == numbers[name], name
    _assert_as_built(corpus, index, tmp_path / "full")
    answer = GraphIndex.open(index).search("local", "What did Jonas Pellew found?")
    assert answer.answer.strip() and not answer.failures

    # A file deleted: the entities it mentioned change in place; their parts stay linked
    # with those rows left out (the relationships too, unless the largest instance count,
    # which every weight divides by, moved).
    before = {name: _inodes(index, name) for name in COMPARED}
    sorted(corpus.glob("*.txt"))[7].unlink()
    update_index(index, str(corpus), _config(), progress=lambda _: None)
    version = IndexStore(index).open()
    assert version.left_out(schema.ENTITIES)
    after = _inodes(index, schema.ENTITIES)
    assert [n for n in before[schema.ENTITIES] if after.get(n) == before[schema.ENTITIES][n]]
    _assert_as_built(corpus, index, tmp_path / "full-after")

    # And one more: the summaries it keeps are read from parts that leave rows out.
    (corpus / "zz-later.txt").write_text("Marta Quill left Quarry Lane Works for Dunmore.")
    update_index(index, str(corpus), _config(), progress=lambda _: None)
    _assert_as_built(corpus, index, tmp_path / "full-later")


def _assert_as_built(corpus: Path, index: str, full: Path) -> None:
    build_index(str(corpus), str(full), _config(), progress=lambda _: None)
    assert _contents(index) == _contents(str(full))


def test_a_part_whose_left_out_rows_would_be_most_of_its_bytes_is_written_again(tmp_path):
    """Rows are weighed by their lists: one changed row of ten, mentioned in a hundred text
    units, is more than half of its part; the part is not linked (its unchanged rows are
    written again), while a part whose changed row is short is."""
    import numpy as np
    import pyarrow as pa

    from graphrag_ray.index.graph.unit_rows import with_unit_rows

    store = IndexStore(str(tmp_path / "index"))
    previous = store.stage()
    units = [[f"u{k}" for k in range(100)] if i == 3 else ["u0"] for i in range(20)]
    table = pa.table({"id": [f"e{i}" for i in range(20)], "text_unit_ids": units})
    previous.write_table(schema.ENTITIES, table, rows_per_part=10)
    staged = store.stage()
    unchanged = np.array([i not in (3, 14) for i in range(20)])
    numbered = with_unit_rows(table, pa.array([f"u{k}" for k in range(100)]))
    served, first = element_tables.carried_elements(previous, staged, schema.ENTITIES,
                                                    numbered, unchanged)
    assert first == 2 and served.tolist() == [False] * 10 + [i != 14 for i in range(10, 20)]
    assert {k: v.to_pylist() for k, v in staged.left_out(schema.ENTITIES).items()} == {
        "part-00001.parquet": ["e14"]}


@pytest.mark.slow
def test_an_update_on_s3_links_and_leaves_out_as_on_a_disk(corpus, tmp_path, monkeypatch,
                                                            s3_bucket):
    """The same carries on object storage (the store's own copy for a link, `_left_out` and
    the readers through s3fs): documents, text units, entities, relationships and vectors
    in parts, an update adding one file and deleting another, read as a full build's."""
    from graphrag_ray.index import carry_over
    from graphrag_ray.index.write import carried_tables

    monkeypatch.setattr(carried_tables, "SMALL_PART_BYTES", 0)
    monkeypatch.setattr(carry_over, "CARRIED_WHOLE_ROWS", 1)
    config = load_config(None, ["runtime.engine=local", "output.rows_per_part=8"])
    index, full = f"s3://{s3_bucket}/index", str(tmp_path / "full")
    build_index(str(corpus), index, config, progress=lambda _: None)
    (corpus / "zz-new.txt").write_text("Jonas Pellew founded Quarry Lane Works in Harrowgate.")
    sorted(corpus.glob("*.txt"))[7].unlink()
    update_index(index, str(corpus), config, progress=lambda _: None)
    version = IndexStore(index).open()
    assert version.left_out(schema.ENTITIES)
    assert version.left_out(schema.ENTITY_DESCRIPTION_EMBEDDINGS) or version.left_out(
        schema.TEXT_UNIT_EMBEDDINGS)
    build_index(str(corpus), full, config, progress=lambda _: None)
    assert _contents(index) == _contents(full)
    for name in (schema.TEXT_UNIT_EMBEDDINGS, schema.ENTITY_DESCRIPTION_EMBEDDINGS):
        ours, theirs = (IndexStore(url).open().read_table(name) for url in (index, full))
        assert dict(zip(*(ours.column(c).to_pylist() for c in ("id", "vector")))) == \
            dict(zip(*(theirs.column(c).to_pylist() for c in ("id", "vector")))), name
        assert ours.num_rows == theirs.num_rows, name
    answer = GraphIndex.open(index).search("local", "What did Jonas Pellew found?")
    assert answer.answer.strip() and not answer.failures
