import json
import time

import pyarrow as pa
import pytest

from graphrag_ray.errors import IndexNotFoundError
from graphrag_ray.storage import IndexStore, Manifest
from graphrag_ray.storage.index_store import ABANDONED_AFTER_S, HEARTBEAT


def _publish(store: IndexStore, rows: int) -> str:
    staged = store.stage()
    staged.write_table("entities", pa.table({"id": [str(i) for i in range(rows)]}))
    store.publish(staged, Manifest(tables={"entities": rows}))
    return staged.version


def _stop_beating(store: IndexStore, staged) -> None:
    """As if its build was killed more than ABANDONED_AFTER_S ago."""
    stale = time.time() - ABANDONED_AFTER_S - 60
    store.fs.pipe_file(staged._path(HEARTBEAT), str(stale).encode())


def test_readers_open_only_the_published_version(tmp_path):
    store = IndexStore(str(tmp_path / "index"))
    with pytest.raises(IndexNotFoundError, match="no build has finished"):
        store.open()
    first = _publish(store, 2)
    # A second build that dies after writing its tables: nothing points at it.
    abandoned = store.stage()
    abandoned.write_table("entities", pa.table({"id": ["x"]}))
    assert store.open().version == first
    assert store.open().read_table("entities").num_rows == 2
    assert store.read_manifest().version == first
    with pytest.raises(IndexNotFoundError, match="never published"):
        store.open(abandoned.version)
    second = _publish(store, 3)
    assert store.open().read_table("entities").num_rows == 3
    assert store.open(first).read_table("entities").num_rows == 2  # older versions stay
    assert store.versions() == [first, second]


def test_prune_keeps_the_newest_versions_and_clears_abandoned_builds(tmp_path):
    store = IndexStore(str(tmp_path / "index"))
    first = _publish(store, 1)
    abandoned = store.stage()
    abandoned.write_table("entities", pa.table({"id": ["x"]}))
    _stop_beating(store, abandoned)
    second = _publish(store, 2)
    third = _publish(store, 3)
    assert sorted(store.prune(keep=2)) == sorted([first, abandoned.version])
    assert store.versions() == [second, third]
    assert store.open().version == third
    assert store.prune(keep=5) == []


def test_prune_clears_abandoned_builds_newer_than_the_current_but_not_running_ones(tmp_path):
    store = IndexStore(str(tmp_path / "index"))
    current = _publish(store, 1)
    killed, running = store.stage(), store.stage()  # both newer than the current version
    _stop_beating(store, killed)
    assert store.prune(keep=1) == [killed.version]
    assert store.fs.exists(running.root) and not store.fs.exists(killed.root)
    assert store.open().version == current


def test_a_failed_or_stopped_build_removes_its_unpublished_version_only(tmp_path):
    store = IndexStore(str(tmp_path / "index"))
    current = _publish(store, 1)
    for stop in (RuntimeError("a stage failed"), KeyboardInterrupt()):
        with pytest.raises(type(stop)):
            with store.building(store.stage()) as staged:
                staged.write_table("entities", pa.table({"id": ["x"]}))
                raise stop
        assert not store.fs.exists(staged.root)
    # Failing after publishing (pruning, say) never removes what readers now open.
    with pytest.raises(RuntimeError):
        with store.building(store.stage()) as staged:
            store.publish(staged, Manifest())
            raise RuntimeError("after publishing")
    assert store.open().version == staged.version
    assert store.versions() == [current, staged.version]


def test_pointer_is_a_small_json_object(tmp_path):
    store = IndexStore(str(tmp_path / "index"))
    version = _publish(store, 1)
    pointer = json.loads((tmp_path / "index" / "index.json").read_text())
    assert pointer["version"] == version
    assert not list((tmp_path / "index").glob("*.tmp"))  # the temporary file was renamed


def test_works_on_any_fsspec_filesystem():
    store = IndexStore("memory://graphrag-ray-test/index")
    version = _publish(store, 4)
    assert IndexStore("memory://graphrag-ray-test/index").open().version == version
    assert store.open().read_table("entities", columns=["id"]).num_rows == 4


def test_long_tables_are_written_in_parts_and_read_as_one(tmp_path):
    store = IndexStore(str(tmp_path / "index"))
    staged = store.stage()
    table = pa.table({"id": [f"e{i}" for i in range(25)], "n": list(range(25))})
    staged.write_table("entities", table, rows_per_part=10)
    store.publish(staged, Manifest(tables={"entities": 25}))
    parts = sorted(p.name for p in (tmp_path / "index" / "versions" / staged.version / "entities").iterdir())
    assert parts == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    opened = store.open()
    assert opened.has_table("entities")
    assert opened.read_table("entities").equals(table)
    assert opened.read_table("entities", columns=["n"]).column("n").to_pylist() == list(range(25))


def test_a_build_survives_its_working_directory_being_unpacked_again(tmp_path, monkeypatch,
                                                                    carol_excerpt):
    """What Ray's runtime env agent does to a `ray job submit` job's working_dir when a second
    node on the same machine sets the job up: removes the folder the driver runs in and
    extracts it again. Seen as a FileNotFoundError from os.getcwd() at the end of a build."""
    import shutil

    from graphrag_ray.config import load_config
    from graphrag_ray.index.build import build_index

    working_dir = tmp_path / "working_dir"
    working_dir.mkdir()
    monkeypatch.chdir(working_dir)
    shutil.rmtree(working_dir)
    working_dir.mkdir()
    manifest = build_index(str(carol_excerpt), str(tmp_path / "index"),
                           load_config(None, ["runtime.engine=local"]), progress=lambda _: None)
    assert IndexStore(str(tmp_path / "index")).versions() == [manifest.version]


def test_rows_without_reads_only_the_parts_holding_another_row(tmp_path):
    import pyarrow.parquet as pq

    staged = IndexStore(str(tmp_path / "index")).stage()
    table = pa.table({"id": [f"u{i}" for i in range(10)], "text": [f"t{i}" for i in range(10)]})
    staged.write_table("text_units", table, rows_per_part=4)  # parts of 4, 4 and 2 rows
    # A part all of whose rows are left out is read no further than its ids: without its
    # text column, reading more of it would fail.
    first = sorted((tmp_path / "index").rglob("part-00000.parquet"))[0]
    pq.write_table(pa.table({"id": table.column("id").to_pylist()[:4]}), first)
    others = [f"u{i}" for i in range(10) if i not in (5, 9)]
    rows = staged.iter_rows_without("text_units", ["id", "text"], pa.array(others))
    assert [r.to_pydict() for r in rows] == [{"id": ["u5"], "text": ["t5"]},
                                             {"id": ["u9"], "text": ["t9"]}]


def test_rows_a_tables_parts_leave_out_are_not_the_tables_for_any_reader(tmp_path):
    """An update links a part most of whose rows it keeps and lists the others
    (`left_out`): reading the table whole, part by part, without other rows, or by row
    number, none of them is there, and the row numbers skip them."""
    staged = IndexStore(str(tmp_path / "index")).stage()
    table = pa.table({"id": [f"u{i}" for i in range(10)], "n": list(range(10))})
    staged.write_table("vectors", table, rows_per_part=4)  # parts of 4, 4 and 2 rows
    staged.write_left_out("vectors", {"part-00000.parquet": pa.array(["u1", "u2"]),
                                      "part-00002.parquet": pa.array(["u9"]),
                                      "part-00001.parquet": pa.array([], pa.string())})
    assert {k: v.to_pylist() for k, v in staged.left_out("vectors").items()} == {
        "part-00000.parquet": ["u1", "u2"], "part-00002.parquet": ["u9"]}
    served = [0, 3, 4, 5, 6, 7, 8]
    assert staged.read_table("vectors", ["n"]).column("n").to_pylist() == served
    assert staged.read_table("vectors").column("id").to_pylist() == [f"u{i}" for i in served]
    without = staged.iter_rows_without("vectors", ["n"], pa.array(["u4", "u5", "u6", "u7"]))
    assert [part.column("n").to_pylist() for part in without] == [[0, 3], [8]]
    rows = staged.row_reader("vectors")
    assert len(rows) == 7
    assert rows.take([6, 0, 1, 2], ["n"]).column("n").to_pylist() == [8, 0, 3, 4]
    assert pa.concat_tables(rows.groups(["n"])).column("n").to_pylist() == served
    with pytest.raises(IndexError):
        rows.take([7], ["n"])
    # A table none of whose parts leaves anything out reads as it was written.
    staged.write_table("other", table, rows_per_part=4)
    assert staged.left_out("other") == {} and staged.read_table("other").equals(table)
