"""Rows of a stored table by number: a question's few units read from their row groups, in
the order asked, across a table's parts; old single-group files still read; the cache
bounded."""

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphrag_ray.errors import IndexNotFoundError
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import row_group_rows, write_parquet
from graphrag_ray.storage.row_reader import RowReader


def units(count: int, start: int = 0) -> pa.Table:
    return pa.table({"id": [f"u{i}" for i in range(start, start + count)],
                     "text": [f"passage {i} " + "word " * 400 for i in range(start, start + count)]})


@pytest.fixture(params=["file", "memory"])
def version(request, tmp_path):
    fs = fsspec.filesystem(request.param)
    root = str(tmp_path) if request.param == "file" else f"/rows-{tmp_path.name}"
    return IndexVersion(fs, root, "", "")


def test_a_text_table_is_written_in_row_groups_of_about_a_megabyte(tmp_path):
    table = units(2000)
    fs = fsspec.filesystem("file")
    write_parquet(fs, str(tmp_path / "t.parquet"), table)
    metadata = pq.read_metadata(str(tmp_path / "t.parquet"))
    assert metadata.num_row_groups == -(-2000 // row_group_rows(table)) > 1
    assert row_group_rows(pa.table({"n": list(range(10))})) >= 64  # narrow: big groups


def test_rows_come_in_the_order_asked_across_parts(version):
    version.write_table("text_units", pa.concat_tables([units(1500)]), rows_per_part=600)
    reader = version.row_reader("text_units")
    assert len(reader) == 1500 and len(reader.paths) == 3
    rows = [1499, 3, 600, 3, 599, 1200]
    taken = reader.take(rows, ["id", "text"])
    assert taken.column("id").to_pylist() == [f"u{r}" for r in rows]
    assert taken.column("text")[0].as_py().startswith("passage 1499 ")
    assert reader.take([], ["id"]).num_rows == 0
    with pytest.raises(IndexError):
        reader.take([1500], ["id"])
    whole = pa.concat_tables(list(reader.groups(["id"])))
    assert whole.column("id").to_pylist() == [f"u{i}" for i in range(1500)]


def test_a_table_written_in_one_row_group_still_reads(tmp_path):
    pq.write_table(units(300), str(tmp_path / "old.parquet"))  # one group, as before
    reader = RowReader(fsspec.filesystem("file"), [str(tmp_path / "old.parquet")])
    assert reader.take([299, 0], ["id"]).column("id").to_pylist() == ["u299", "u0"]


def test_the_cache_keeps_at_most_its_bytes_and_always_the_last_group(tmp_path):
    fs = fsspec.filesystem("file")
    write_parquet(fs, str(tmp_path / "t.parquet"), units(3000))
    reader = RowReader(fs, [str(tmp_path / "t.parquet")], cache_bytes=3 * 2 ** 20)
    for row in np.linspace(0, 2999, 40).astype(int):
        assert reader.take([row], ["text"]).column("text")[0].as_py().startswith(f"passage {row} ")
    held = sum(t.nbytes for t in reader._cache.values())
    assert 0 < held <= 3 * 2 ** 20 and len(reader._cache) >= 1


def test_a_missing_table_is_said():
    version = IndexVersion(fsspec.filesystem("memory"), "/no-such-version", "memory://x", "v1")
    with pytest.raises(IndexNotFoundError, match="text_units"):
        version.row_reader("text_units")
