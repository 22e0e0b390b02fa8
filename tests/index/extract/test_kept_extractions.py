import pyarrow as pa

from graphrag_ray.index.extract.kept_extractions import (
    KEPT_COLUMNS, KeptExtractions, text_hash, write_kept)
from graphrag_ray.index.extract.stage import EXTRACTION_SCHEMA


def _kept_rows(texts_and_titles: list[tuple[str, str]], hashes: list[str] | None = None):
    rows = [{"text_hash": h, "entities": [{"title": title, "type": "PERSON",
                                           "description": f"{title} is named"}],
             "relationships": [], "claims": [], "malformed_records": 0, "malformed_reasons": []}
            for h, (_, title) in zip(hashes or [text_hash(t) for t, _ in texts_and_titles],
                                     texts_and_titles)]
    return pa.Table.from_pylist(rows, schema=pa.schema(
        [EXTRACTION_SCHEMA.field(name) for name in KEPT_COLUMNS]))


def test_kept_rows_are_found_by_text_across_files(tmp_path):
    url = str(tmp_path / "_extractions")
    chunks = [(f"chunk number {i} of the corpus", f"PERSON {i}") for i in range(300)]
    write_kept(_kept_rows(chunks[:150]), url, "batch-a.parquet")
    write_kept(_kept_rows(chunks[150:]), url, "batch-b.parquet")
    kept = KeptExtractions(url)
    for text, title in [chunks[0], chunks[149], chunks[150], chunks[299]]:
        row = kept.get(text)
        assert row["entities"][0]["title"] == title and "text_hash" not in row
    assert kept.get("a chunk no version extracted") is None


def test_hashes_that_share_their_first_bytes_are_told_apart(tmp_path):
    """The index keys rows by the hash's first 8 bytes: a row with the same first bytes but
    another hash (sorted before the one asked) is not taken for it."""
    url = str(tmp_path / "_extractions")
    real = text_hash("the chunk asked for")
    impostor = real[:16] + "0" * 48
    write_kept(_kept_rows([("", "IMPOSTOR"), ("", "THE ONE")], [impostor, real]), url,
               "batch-a.parquet")
    assert KeptExtractions(url).get("the chunk asked for")["entities"][0]["title"] == "THE ONE"


def test_no_kept_files_finds_nothing(tmp_path):
    assert KeptExtractions(str(tmp_path / "missing")).get("any text") is None
