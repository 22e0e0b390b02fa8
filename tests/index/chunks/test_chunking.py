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
