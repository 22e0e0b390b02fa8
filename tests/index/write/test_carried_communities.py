"""An update's communities whose members it did not touch keep their rows in the previous
version's parts, linked; the table reads as the one the update writes without linking
(but the period: a linked row keeps the day it was made)."""

import os
import shutil
from pathlib import Path

from graphrag_ray import GraphIndex, schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_ray.index.write import tables
from graphrag_ray.storage import IndexStore
from graphrag_ray.testing.synthetic_corpus import generate_corpus


def _config():
    return load_config(None, ["runtime.engine=local", "output.rows_per_part=8"])


def _rows(url: str) -> dict[int, dict]:
    table = IndexStore(url).open().read_table(schema.COMMUNITIES)
    rows = {row.pop("community"): row for row in table.to_pylist()}
    assert len(rows) == table.num_rows  # each community once
    for row in rows.values():
        row.pop("period")
    return rows


def _inodes(url: str) -> dict[str, int]:
    return {path.rsplit("/", 1)[-1]: os.stat(path).st_ino
            for path in IndexStore(url).open().table_files(schema.COMMUNITIES)}


def test_untouched_communities_stay_in_the_linked_parts_of_before(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "COMMUNITIES_PER_PIECE", 8)  # the table in parts of 8
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 24_000, seed=3, tokens_per_document=1_500)
    index, unlinked = str(tmp_path / "index"), str(tmp_path / "unlinked")
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    shutil.copytree(index, unlinked)
    before = _inodes(index)
    assert len(before) > 2
    (corpus / "zz-new.txt").write_text(
        Path(sorted(corpus.glob("*.txt"))[4]).read_text()[:1200]
        + "\n\nJonas Pellew founded Quarry Lane Works in Harrowgate.")
    update_index(index, str(corpus), _config(), progress=lambda _: None)
    after = _inodes(index)
    assert [n for n in before if after.get(n) == before[n]]  # linked
    assert IndexStore(index).open().left_out(schema.COMMUNITIES)  # with rows left out
    # The same update, every community written again.
    monkeypatch.setattr(tables, "carried_communities",
                        lambda previous, staged, communities, cells, touched:
                        (set(), len(previous.table_files(schema.COMMUNITIES))))
    update_index(unlinked, str(corpus), _config(), progress=lambda _: None)
    assert _rows(index) == _rows(unlinked)
    answer = GraphIndex.open(index).search("global", "What are the main themes?")
    assert answer.answer.strip() and not answer.failures
