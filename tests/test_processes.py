"""The in-process engine's worker processes (`processes.py`): what runs in them
gives the rows threads give, a program's main script is not run again in them, they end
when their driver is killed, and a build that reads many files uses them and writes the
tables a build in threads writes."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import descendants

from graphrag_ray.config import RuntimeConfig, load_config
from graphrag_ray import processes
from graphrag_ray.distributed import map_items, map_table
from graphrag_ray.index.build import build_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.synthetic_corpus import generate_corpus

LOCAL = RuntimeConfig(engine="local", num_workers=2, num_cpus=2)


def pid_of(item: int) -> tuple[int, int]:
    return item, os.getpid()


def rows_from_files(files: pa.Table) -> pa.Table:
    """A stand-in for reading: each file index becomes two rows."""
    keys = [k for k in files.column("file_index").to_pylist() for _ in range(2)]
    return pa.table({"key": keys})


class Tripler:
    def __init__(self, factor: int):
        self.factor = factor

    def __call__(self, batch: pa.Table) -> pa.Table:
        return pa.table({"key": batch.column("key"),
                         "value": [k * self.factor for k in batch.column("key").to_pylist()],
                         "pid": [os.getpid()] * batch.num_rows})


SCHEMA = pa.schema([("key", pa.int64()), ("value", pa.int64()), ("pid", pa.int64())])


def test_nothing_opens_for_a_small_job_or_on_ray():
    with processes.local_processes(LOCAL, processes.USE_PROCESSES_FROM_FILES - 1,
                                   "cl100k_base"):
        assert processes.open_workers() == 0
    with processes.local_processes(RuntimeConfig(engine="ray"), 10_000, "cl100k_base"):
        assert processes.open_workers() == 0
    assert processes.processes_available(RuntimeConfig(num_workers=1)) == 0


@pytest.mark.slow
def test_python_bound_work_runs_in_the_workers_and_gives_the_same_rows():
    files = pa.table({"file_index": list(range(100))})
    in_threads = map_table(files, Tripler, {"factor": 3}, LOCAL, output_schema=SCHEMA,
                           first=(rows_from_files, {}, 8))
    with processes.local_processes(LOCAL, 100, "cl100k_base"):
        assert processes.open_workers() == 2
        in_processes = map_table(files, Tripler, {"factor": 3}, LOCAL, output_schema=SCHEMA,
                                 first=(rows_from_files, {}, 8))
        items = map_items(pid_of, list(range(6)), LOCAL, python_bound=True)
        threaded = map_items(pid_of, list(range(6)), LOCAL)
    assert processes.open_workers() == 0  # closed on the way out
    assert in_processes.drop(["pid"]).sort_by("key").equals(
        in_threads.drop(["pid"]).sort_by("key"))
    assert set(in_threads.column("pid").to_pylist()) == {os.getpid()}
    assert os.getpid() not in set(in_processes.column("pid").to_pylist())
    assert [item for item, _ in items] == list(range(6))
    assert os.getpid() not in {pid for _, pid in items}
    assert {pid for _, pid in threaded} == {os.getpid()}


@pytest.mark.slow
def test_a_script_without_a_main_guard_runs_once(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        from graphrag_ray.config import RuntimeConfig
        from graphrag_ray import processes
        print("the script's body", flush=True)
        with processes.local_processes(RuntimeConfig(engine="local", num_workers=2,
                                                     num_cpus=2), 100, "cl100k_base"):
            print("worker", processes.submit(os.getpid).result() != os.getpid(), flush=True)
        """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["the script's body", "worker True"]


@pytest.mark.slow
def test_a_build_of_many_files_reads_them_in_processes_and_writes_the_same_tables(
        tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 80_000, seed=3, tokens_per_document=1_000)
    assert len(list(corpus.iterdir())) >= processes.USE_PROCESSES_FROM_FILES
    config = load_config(None, ["runtime.engine=local", "runtime.num_cpus=2"])
    opened = []
    real_submit = processes.submit

    def counting_submit(fn, *args):
        opened.append(fn.__name__)
        return real_submit(fn, *args)

    monkeypatch.setattr(processes, "submit", counting_submit)
    build_index(str(corpus), str(tmp_path / "in_processes"), config)
    assert {"scan_passages", "_chain", "positions", "hashing_embed"} <= set(opened)
    monkeypatch.setattr(processes, "USE_PROCESSES_FROM_FILES", 10 ** 9)
    opened.clear()
    build_index(str(corpus), str(tmp_path / "in_threads"), config)
    # Asked, and made in the driver: no pool was open.
    assert set(opened) == {"positions", "hashing_embed"}
    a = IndexStore(str(tmp_path / "in_processes")).open()
    b = IndexStore(str(tmp_path / "in_threads")).open()
    for name, key in (("entities", "id"), ("relationships", "id"), ("communities", "id"),
                      ("community_reports", "id"), ("text_units", "id"), ("documents", "id")):
        assert a.read_table(name).sort_by(key).equals(b.read_table(name).sort_by(key)), name


@pytest.mark.slow
def test_the_workers_go_when_their_driver_is_killed(tmp_path):
    """A driver killed outright (SIGKILL, the OOM killer) never closes its pool: its worker
    processes, and the fork server they keep alive, end by themselves."""
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent("""
        import os, time
        from graphrag_ray.config import RuntimeConfig
        from graphrag_ray import processes
        with processes.local_processes(RuntimeConfig(engine="local", num_workers=2,
                                                     num_cpus=2), 100, "cl100k_base"):
            print(processes.submit(os.getpid).result(), flush=True)
            time.sleep(600)
        """))
    driver = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              cwd=tmp_path)
    try:
        worker = int(driver.stdout.readline())
        below = descendants(driver.pid)
        assert worker in below and any("forkserver" in c for c in below.values())
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=60)
    deadline = time.monotonic() + 60
    while (alive := [pid for pid in below if os.path.exists(f"/proc/{pid}")
                     and "multiprocessing" in Path(f"/proc/{pid}/cmdline").read_text(
                         errors="replace")]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive == []
    driver.stdout.close()
