"""The in-process engine's worker processes, for the work that is Python from end to end.

In-process (`runtime.engine: local`) the stages run in threads, which suits what leaves the
interpreter (Arrow, Parquet, files, LLM calls) but not the offline reading: scanning files for
repeated passages, chunking and extracting them are pure Python, so on k cores a thread pool
ran them on one. A build that reads many files (`USE_PROCESSES_FROM_FILES`) opens this pool
(`local_processes`) while it lists its inputs; `map_items(python_bound=True)` and an offline
`map_table` then run their batches in it, the layout and the offline embeddings their work
(`submit`, `run`), and without it (few files, a query, a platform without fork) they run in
threads as before: the same rows either way.

The processes are forked from a server that imported the reading and extraction modules once
(`multiprocessing`'s forkserver): a worker starts in milliseconds and pays no imports, and,
unlike a fork of the driver, inherits none of its threads' locks.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
import types
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator

from graphrag_ray.config import RuntimeConfig

# What the fork server imports before it forks the workers: the reading, chunking, passage
# scanning and offline extraction, with pyarrow, numpy and tiktoken under them, and the
# offline embeddings. (The layout imports igraph in the worker that first makes one.)
PRELOAD = ["graphrag_ray.index.extract.stage", "graphrag_ray.llm.embeddings"]
# Files read by the build from which the pool pays off: its start (while the driver lists
# the inputs) against the Python each file read takes, shared by the cores.
USE_PROCESSES_FROM_FILES = 64

_open: tuple[ProcessPoolExecutor, int] | None = None  # the pool and its workers
_opening = threading.Lock()


# How often a worker looks for the process that opened it: a driver that is killed (SIGKILL,
# the OOM killer) never closes its pool, and its workers, which each hold a copy of the fork
# server's lifeline, would keep themselves and the server alive for good.
DRIVER_CHECK_S = 0.5


def _start_worker(encoding: str, driver: int) -> None:
    """Each worker: the tokenizer loaded, and a thread that ends the worker once `driver`
    is gone."""
    from graphrag_ray.tokens import get_encoding

    def watch() -> None:
        while True:
            time.sleep(DRIVER_CHECK_S)
            try:
                os.kill(driver, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # (alive, under another user: not ours to signal)
                continue

    threading.Thread(target=watch, name="driver-watch", daemon=True).start()
    get_encoding(encoding)


def _ready() -> int:
    return os.getpid()


@contextmanager
def _main_left_alone() -> Iterator[None]:
    """Workers started inside do not run the program's main script again. multiprocessing
    starts each worker by importing the parent's `__main__` from its file (as `__mp_main__`),
    for functions defined there; ours are all in the package, and a user's script that
    calls the Python API without an `if __name__ == "__main__"` guard would run again in
    every worker (and fail, starting processes while it bootstraps). A main module with
    neither a file nor a module name is left alone."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def processes_available(runtime: RuntimeConfig) -> int:
    """How many worker processes an in-process job may use: `runtime.num_workers`, at most
    the machine's cores; 0 where there is one core or no fork server (Windows)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return 0
    workers = min(runtime.num_workers, runtime.num_cpus or os.cpu_count() or 1)
    return workers if workers >= 2 else 0


@contextmanager
def local_processes(runtime: RuntimeConfig, files: int, encoding: str) -> Iterator[None]:
    """The worker processes for a job in-process that reads `files` files, open inside; none
    for a smaller job or one on Ray, and none of its own inside a job that holds them
    already. Started at once (each worker loads the `encoding` tokenizer) so that they are
    up by the time the first files are read."""
    global _open
    workers = processes_available(runtime)
    if runtime.engine != "local" or files < USE_PROCESSES_FROM_FILES or not workers \
            or open_workers():
        yield
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                               initargs=(encoding, os.getpid()))
    with _main_left_alone():
        for _ in range(workers):
            pool.submit(_ready)  # (a worker is started per task waiting for one: all here)
    with _opening:
        _open = (pool, workers)
    try:
        yield
    finally:
        with _opening:
            _open = None
        pool.shutdown(wait=True, cancel_futures=True)


def submit(fn: Callable, *args) -> Future | None:
    """`fn(*args)` in a worker process, or None when no pool is open (run it in a thread)."""
    with _opening:
        return _open[0].submit(fn, *args) if _open is not None else None


def submit_all(fn: Callable, calls: list[tuple]) -> list[Future]:
    """`fn(*args)` for each of `calls` in the worker processes, which must be open."""
    futures = [submit(fn, *args) for args in calls]
    if any(future is None for future in futures):  # (closed meanwhile: the job is ending)
        raise RuntimeError("the worker processes were closed while a stage ran")
    return futures


def run(fn: Callable, *args):
    """`fn(*args)`: in a worker process when a job opened them (the caller's thread waits
    without holding the interpreter), else here."""
    future = submit(fn, *args)
    return future.result() if future is not None else fn(*args)


def open_workers() -> int:
    """How many worker processes are open (0: none)."""
    with _opening:
        return _open[1] if _open is not None else 0
