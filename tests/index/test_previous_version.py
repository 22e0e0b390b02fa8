"""The input fingerprints an update compares (`previous_version.input_fingerprints`): a
local file of the size and settled time recorded keeps its recorded hash unread; any other
is read and hashed. The previous tables an update reads ahead (`PreviousTables`) are the
tables as read when asked for."""

import hashlib
import os
import time

import fsspec
import pyarrow as pa

from graphrag_ray.config import InputConfig
from graphrag_ray.index.previous_version import (
    INPUT_FILES_SCHEMA, PreviousTables, diff_inputs, input_fingerprints)
from graphrag_ray.input.loader import load_file
from graphrag_ray.storage import IndexStore


def _settled(path, text: str, age_s: float = 60.0) -> None:
    path.write_text(text)
    then = time.time() - age_s
    os.utime(path, (then, then))


def test_a_settled_file_of_the_same_size_and_time_keeps_its_hash_unread(tmp_path):
    fs = fsspec.filesystem("file")
    root = str(tmp_path)
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    _settled(a, "alpha text")
    _settled(b, "beta text")
    _settled(c, "gamma text")
    files = [str(a), str(b), str(c)]
    # What the readers record: the time, because the file is settled.
    recorded = [load_file(fs, root, path, InputConfig()).files[0] for path in files]
    assert all(r["modified"] == os.stat(p).st_mtime for r, p in zip(recorded, files))
    previous = pa.Table.from_pylist(recorded, schema=INPUT_FILES_SCHEMA)
    # A recorded hash stands for a file not read again: a wrong one shows it was taken.
    previous = previous.set_column(2, "sha256", pa.array(["taken", *previous.column(
        "sha256").to_pylist()[1:]]))
    # b rewritten with other bytes of the same size, at another time: read again.
    _settled(b, "BETA TEXT", age_s=30.0)
    now = input_fingerprints(fs, root, files, previous)
    digests = dict(zip(now.column("path").to_pylist(), now.column("sha256").to_pylist()))
    assert digests["a.txt"] == "taken"
    assert digests["b.txt"] == hashlib.sha256(b"BETA TEXT").hexdigest()
    assert diff_inputs(previous, now)["changed"] == ["b.txt"]
    # Without the times (an index from before they were kept), every file is read.
    assert input_fingerprints(fs, root, files, previous.drop_columns(["modified"])).column(
        "sha256")[0].as_py() == hashlib.sha256(b"alpha text").hexdigest()


def test_a_file_written_a_moment_ago_records_no_time(tmp_path):
    path = tmp_path / "fresh.txt"
    path.write_text("just written")
    recorded = load_file(fsspec.filesystem("file"), str(tmp_path), str(path), InputConfig())
    assert recorded.files[0]["modified"] is None


def test_tables_read_ahead_are_the_tables_read_when_asked(tmp_path):
    version = IndexStore(str(tmp_path / "index")).stage()
    entities = pa.table({"id": ["a", "b", "c"], "human_readable_id": [0, 1, 2],
                         "x": [0.5, 1.5, 2.5], "title": ["A", "B", "C"]})
    version.write_table("entities", entities, rows_per_part=2)
    version.write_table("relationships", pa.table({"id": ["r"], "human_readable_id": [0]}))
    tables = PreviousTables(version)
    tables.read_ahead({"entities": ["id", "human_readable_id", "x"], "missing": ["id"]})
    assert tables.read_table("entities", ["id", "x"]).equals(entities.select(["id", "x"]))
    assert tables.read_table("entities", ["human_readable_id", "id"]).equals(
        entities.select(["human_readable_id", "id"]))
    # Columns it did not read ahead, and a table it did not: read now.
    assert tables.read_table("entities", ["id", "title"]).equals(
        entities.select(["id", "title"]))
    assert tables.read_table("relationships", ["id"]).column("id").to_pylist() == ["r"]
    assert tables.has_table("entities") and not tables.has_table("missing")
