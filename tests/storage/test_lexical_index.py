"""The lexical index: BM25 scores as the reference implementation (bm25s) computes them, on
storage; and an index kept by updates (added, changed and deleted units) answering as one
written anew."""

import shutil

import fsspec
import pytest

from graphrag_ray import schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_ray.storage import IndexStore
from graphrag_ray.storage.lexical_index import (
    LEXICAL, open_lexical, unit_terms, write_catalog, write_segment)
from graphrag_testkit.synthetic_corpus import generate_corpus

TEXTS = ["Scrooge keeps his counting-house in the City of London.",
         "Marley's ghost warns Scrooge of the three spirits to come.",
         "Bob Cratchit keeps Christmas with his family in Camden Town.",
         "The Ghost of Christmas Past shows Scrooge his schooldays.",
         "Fezziwig's ball is the merriest of Christmas Eve's evenings."]
TITLES = ["Stave 1", "Stave 1", "Stave 3", "Stave 2", "Stave 2"]


def test_scores_are_the_reference_bm25s(tmp_path):
    bm25s = pytest.importorskip("bm25s")
    fs = fsspec.filesystem("file")
    ids = [f"u{i}" for i in range(len(TEXTS))]
    # Two segments, one unit deleted: the statistics are the live units'.
    write_catalog(fs, str(tmp_path), [
        write_segment(fs, str(tmp_path), "a", ids[:3], TITLES[:3], TEXTS[:3]),
        write_segment(fs, str(tmp_path), "b", ids[3:] + ["gone"], TITLES[3:] + ["x"],
                      TEXTS[3:] + ["Scrooge Scrooge Scrooge Christmas"])], ["gone"], 4)
    index = open_lexical(fs, str(tmp_path))
    reference = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    reference.index([unit_terms(t, x) for t, x in zip(TITLES, TEXTS)], show_progress=False)
    for question in ("Who warns Scrooge?", "Christmas with the family", "ghost of the past"):
        found = dict(index.search(question, 10))
        # Lucene's scores leave out Robertson's constant factor k1 + 1 (it ranks alike).
        expected = reference.get_scores(unit_terms("", question)) * (1.2 + 1)
        assert found == pytest.approx({ids[i]: s for i, s in enumerate(expected) if s > 0},
                                      rel=1e-5)
    assert index.score_units(unit_terms("", "Scrooge"), ["u0", "u2", "gone"]).keys() == {"u0"}


def test_questions_searched_at_once_get_what_each_gets_alone(tmp_path):
    """A served index's lexical index is read by many threads: each question's postings are
    its own (one shared Parquet reader mixed reads up: 'ReadRangeCache did not find
    matching cache entry')."""
    from concurrent.futures import ThreadPoolExecutor

    fs = fsspec.filesystem("file")
    words = [f"w{i:04d}" for i in range(3000)]
    texts = [" ".join(words[(i * 37 + j * 11) % 3000] for j in range(60)) for i in range(400)]
    ids = [f"u{i}" for i in range(len(texts))]
    write_catalog(fs, str(tmp_path), [write_segment(fs, str(tmp_path), "a", ids,
                                                    [""] * len(ids), texts)], [], len(ids))
    questions = [" ".join(words[(q * 101 + j * 7) % 3000] for j in range(12))
                 for q in range(64)]
    alone = [open_lexical(fs, str(tmp_path)).search(q, 10) for q in questions]
    index = open_lexical(fs, str(tmp_path))
    index.CACHE_GROUPS = 0  # nothing kept: every question's thread reads
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(lambda q: index.search(q, 10), questions)) == alone


def _search_all(url: str, questions: list[str]) -> list[list[tuple[str, float]]]:
    version = IndexStore(url).open()
    index = open_lexical(version.fs, f"{version.root}/{LEXICAL}")
    return [index.search(q, 20) for q in questions]


@pytest.mark.slow
def test_an_updated_index_answers_as_one_written_anew(tmp_path):
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 20_000, seed=11, tokens_per_document=1_500)
    files = sorted(corpus.glob("*.txt"))
    config = load_config(None, ["runtime.engine=local"])
    index, fresh = str(tmp_path / "index"), str(tmp_path / "fresh")
    build_index(str(corpus), index, config, progress=lambda _: None)
    generate_corpus(tmp_path / "more", 3_000, seed=12, tokens_per_document=1_500)
    for path in (tmp_path / "more").glob("*.txt"):
        shutil.copy(path, corpus / f"added-{path.name}")
    files[1].write_text(files[1].read_text() + "\n\nA new closing line about Zanfind.")
    files[2].unlink()
    updated = update_index(index, str(corpus), config, progress=lambda _: None)
    build_index(str(corpus), fresh, config, progress=lambda _: None)
    lexical = updated.lexical
    assert lexical["segments"] == 2 and lexical["deleted_units"] > 0
    assert not lexical["rewritten"]
    units = IndexStore(index).open().read_table(schema.TEXT_UNITS, ["text"]).column(
        "text").to_pylist()
    questions = [" ".join(text.split()[:12]) for text in units[::7]] + ["Zanfind"]
    assert _search_all(index, questions) == [
        [(u, pytest.approx(s)) for u, s in found] for found in _search_all(fresh, questions)]
