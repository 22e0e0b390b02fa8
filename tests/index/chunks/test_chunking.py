import pyarrow as pa
import pytest

from graphrag_ray.config import ChunksConfig
from graphrag_ray.index.chunks.chunking import chunk_documents, token_windows
from graphrag_ray.tokens import get_encoding


def test_windows_overlap_and_cover_the_end():
    assert token_windows(0, 10, 2) == []
    assert token_windows(5, 10, 2) == [(0, 5)]
    assert token_windows(10, 10, 2) == [(0, 10)]
    assert token_windows(25, 10, 2) == [(0, 10), (8, 18), (16, 25)]


def test_a_last_window_of_little_more_than_overlap_extends_the_one_before():
    # 1 and 2 new tokens (<= overlap): the previous window takes them.
    assert token_windows(19, 10, 2) == [(0, 10), (8, 19)]
    assert token_windows(20, 10, 2) == [(0, 10), (8, 20)]
    assert token_windows(21, 10, 2) == [(0, 10), (8, 18), (16, 21)]
    # Podcast-shaped documents: 600-628 tokens at 600/100 are one chunk each.
    for n_tokens in (600, 610, 628, 700):
        assert token_windows(n_tokens, 600, 100) == [(0, n_tokens)]
    assert token_windows(701, 600, 100) == [(0, 600), (500, 701)]


def test_chunks_never_span_documents_and_keep_their_document():
    words = " ".join(f"word{i}" for i in range(400))
    docs = pa.table({"id": ["d1", "d2"], "text": [words, "short document"]})
    chunks = chunk_documents(docs, ChunksConfig(size=100, overlap=20), "cl100k_base")
    encoding = get_encoding()
    d1 = [c for c in chunks.to_pylist() if c["document_id"] == "d1"]
    d2 = [c for c in chunks.to_pylist() if c["document_id"] == "d2"]
    assert [c["text"] for c in d2] == ["short document"]
    assert all(c["n_tokens"] <= 100 for c in d1)
    # Consecutive chunks share exactly `overlap` tokens.
    first, second = (encoding.encode_ordinary(c["text"]) for c in d1[:2])
    assert first[-20:] == second[:20]
    # Together the chunks reproduce the document.
    total = len(encoding.encode_ordinary(words))
    assert sum(c["n_tokens"] for c in d1) - 20 * (len(d1) - 1) == total


def test_ids_are_deterministic_and_distinct():
    docs = pa.table({"id": ["d1"], "text": ["alpha beta gamma " * 200]})
    a = chunk_documents(docs, ChunksConfig(size=50, overlap=10), "cl100k_base").column("id").to_pylist()
    b = chunk_documents(docs, ChunksConfig(size=50, overlap=10), "cl100k_base").column("id").to_pylist()
    assert a == b and len(set(a)) == len(a)


@pytest.mark.slow
def test_the_papers_podcast_corpus_is_one_chunk_per_file_at_600_100():
    from conftest import SHARED

    folder = SHARED / "corpora" / "podcast" / "input"
    if not folder.is_dir():
        pytest.skip("the podcast corpus is not in ../shared")
    from graphrag_ray.config import load_config
    from graphrag_ray.input.loader import load_documents

    config = load_config(None, ["chunks.size=600", "chunks.overlap=100"])
    documents = load_documents(str(folder), config.input).documents
    chunks = chunk_documents(documents, config.chunks, config.tokenizer.encoding)
    assert documents.num_rows == 1_669 and chunks.num_rows == 1_669


def test_windows_never_cut_a_character_in_cjk_arabic_or_emoji():
    """Byte-level tokens split these characters; a window decodes whole characters only, and
    the windows still cover the text in order."""
    text = ("東京は日本の首都です。" * 60) + ("مرحبا بالعالم " * 40) + ("🎉👩‍👩‍👧‍👦 emoji " * 40)
    docs = pa.table({"id": ["d"], "title": ["t"], "text": [text]})
    units = chunk_documents(docs, ChunksConfig(size=50, overlap=10), "cl100k_base")
    texts = units.column("text").to_pylist()
    assert len(texts) > 10
    assert not any("\ufffd" in t for t in texts)
    assert all(t in text for t in texts)
    assert text.startswith(texts[0]) and text.endswith(texts[-1])
    assert max(units.column("n_tokens").to_pylist()) <= 50 + 6  # a character's tokens more


def _paragraphs(n: int, words: int = 30) -> list[str]:
    return [" ".join(f"p{i}w{j}" for j in range(words)) for i in range(n)]


def _words(chunks: list[dict], universe: set[str]) -> set[str]:
    """The whole words of `universe` the chunks hold (a window may cut a word at its ends:
    its pieces are no word of the universe)."""
    return {w for chunk in chunks for w in chunk["text"].split() if w in universe}


def test_cuts_mask_the_windows_of_the_whole_text_and_never_move_them():
    """A passage the corpus repeats is left out of the windows' text; the windows are those
    of the document's own text, so the chunks without it are the same chunks as before."""
    paragraphs = _paragraphs(12)
    text = "\n\n".join(paragraphs)
    docs = pa.table({"id": ["d"], "text": [text]})
    config = ChunksConfig(size=100, overlap=20)
    plain = {c["window"]: c for c in chunk_documents(docs, config, "cl100k_base").to_pylist()}
    start = text.index(paragraphs[5])
    masked = chunk_documents(docs, config, "cl100k_base",
                             {"d": [(start, start + len(paragraphs[5]))]}).to_pylist()
    assert {c["window"] for c in masked} <= set(plain)
    for after in masked:
        before = plain[after["window"]]
        if after["char_start"] < start + len(paragraphs[5]) and start < after["char_end"]:
            assert "p5w" not in after["text"] and after["id"] != before["id"]
            assert after["n_tokens"] < before["n_tokens"]
        else:
            same = ("id", "text", "n_tokens")  # untouched: the same chunk
            assert [after[k] for k in same] == [before[k] for k in same]
    universe = {w for p in paragraphs for w in p.split()}
    assert _words(masked, universe) == {w for i, p in enumerate(paragraphs) if i != 5
                                        for w in p.split()}
    # A document that the repeated passages leave whole is cut as without any.
    whole = chunk_documents(docs, config, "cl100k_base", {"d": []}).to_pylist()
    assert [(c["id"], c["text"]) for c in whole] == [(c["id"], c["text"])
                                                    for c in plain.values()]


def test_a_window_left_with_only_what_its_neighbour_holds_is_dropped():
    """A long cut (a copied document quoted whole) leaves slivers at its edges that the
    windows beside them hold already: those windows go, and nothing of the text is lost."""
    paragraphs = _paragraphs(20)
    text = "\n\n".join(paragraphs)
    start, end = text.index(paragraphs[3]), text.index(paragraphs[16]) + len(paragraphs[16])
    docs = pa.table({"id": ["d"], "text": [text]})
    config = ChunksConfig(size=100, overlap=20)
    chunks = chunk_documents(docs, config, "cl100k_base", {"d": [(start, end)]}).to_pylist()
    kept = [w for i, p in enumerate(paragraphs) if i < 3 or i > 16 for w in p.split()]
    universe = {w for p in paragraphs for w in p.split()}
    assert _words(chunks, universe) == set(kept)
    windows = [c["window"] for c in chunks]
    assert windows == sorted(set(windows))
    # Each chunk holds words no other chunk holds whole: no window of slivers was kept.
    for chunk in chunks:
        others = _words([c for c in chunks if c is not chunk], universe)
        assert _words([chunk], universe) - others
