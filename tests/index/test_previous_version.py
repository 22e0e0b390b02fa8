"""The input fingerprints an update compares (`previous_version.input_fingerprints`): a
local file of the size and settled time recorded keeps its recorded hash unread; any other
is read and hashed."""

import hashlib
import os
import time

import fsspec
import pyarrow as pa

from graphrag_ray.config import InputConfig
from graphrag_ray.index.previous_version import (
    INPUT_FILES_SCHEMA, diff_inputs, input_fingerprints)
from graphrag_ray.input.loader import load_file


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
