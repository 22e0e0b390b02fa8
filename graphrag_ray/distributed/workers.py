"""Running a stage's worker class over a table or a stream of batches: Ray Data actor pools
(`map_table`), Ray tasks (`map_items`) and long-lived threaded actors (`WorkerPool`), or the
same classes in-process (`runtime.engine: local`). Both give the same rows."""

from __future__ import annotations

import copy
import sys
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, as_completed, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import pyarrow as pa

from graphrag_ray import stopping
from graphrag_ray.config import RuntimeConfig
from graphrag_ray import processes
from graphrag_ray.distributed.engine import ensure_ray, ray_initialized
from graphrag_ray.progress import ProgressBar


def split_table(table: pa.Table, rows_per_block: int) -> list[pa.Table]:
    return [table.slice(start, rows_per_block) for start in range(0, table.num_rows, rows_per_block)]


FollowUp = tuple[Callable[..., pa.Table], dict, int]  # (fn(batch, **kwargs), kwargs, batch size)


@dataclass(frozen=True)
class PoolShape:
    """How a stage's work is spread: `actors` (Ray) each running `per_actor` batches at once
    (threads). In-process there is one worker, running `actors * per_actor` batches at once."""
    actors: int
    per_actor: int = 1

    @property
    def in_flight(self) -> int:
        return self.actors * self.per_actor


# An I/O-bound pool on Ray gets its rows in blocks of this many worker calls' worth, which
# an actor runs on its threads at once: Ray Data's cost per block (the reader's yield, the
# block's serialization, its dispatch from the driver) would otherwise be paid per LLM call.
IO_CALLS_PER_BLOCK = 8


def io_pool_shape(in_flight: int, per_actor: int) -> PoolShape:
    """`in_flight` batches at once for I/O-bound work (LLM calls), `per_actor` to an actor:
    the actor count follows the demand, so a larger rate limit asks a cluster for more."""
    per_actor = max(1, min(per_actor, in_flight))
    return PoolShape(-(-in_flight // per_actor), per_actor)


def _in_threads(table: pa.Table, worker_cls: type, constructor_kwargs: dict,
                batch_size: int, in_flight: int, first: FollowUp | None, then: FollowUp | None,
                progress: ProgressBar | None = None) -> list[pa.Table]:
    """`map_table` in this process: `first` over the table, the worker over its output in
    `in_flight` threads, then `then` over theirs."""
    if first is not None:
        fn, kwargs, first_batch = first
        made = [out for block in split_table(table, first_batch)
                for out in _tables(fn(block, **kwargs))]
        if not made:
            return []
        table = pa.concat_tables(made)
    worker = worker_cls(**constructor_kwargs)
    results = []
    threads = ThreadPoolExecutor(in_flight)
    try:
        # As they finish, not in input order: one slow batch holds no progress back.
        for future in as_completed([threads.submit(worker, block)
                                    for block in split_table(table, batch_size)]):
            results.append(future.result())
            if progress:
                progress.add_rows(results[-1])
    finally:
        _close_threads(threads)
    if then is not None and results:
        fn, kwargs, then_batch = then
        results = [fn(block, **kwargs)
                   for block in split_table(pa.concat_tables(results), then_batch)]
    return results


def _close_threads(threads: ThreadPoolExecutor) -> None:
    """Batches not yet started never start once the stage ends (a failure, a stop); those
    running are waited for, but not after a stop: a call in flight to a slow model must not
    hold the exit, and its reply is not needed (it is cached if it comes in time)."""
    threads.shutdown(wait=not stopping.stop_requested(), cancel_futures=True)


def _chain(table: pa.Table, worker_cls: type, constructor_kwargs: dict, batch_size: int,
           first: FollowUp, then: FollowUp | None, output_schema: pa.Schema) -> pa.Table:
    """One worker process's share of `map_table`: its rows' whole chain, as one table."""
    return _as_schema(_in_threads(table, worker_cls, constructor_kwargs, batch_size, 1,
                                  first, then), output_schema)


# Shares of a process-run `map_table` per worker process: a few, so that one share of large
# files does not leave the other processes idle at the end, and few, so that each share's
# `then` still writes batches of its full size.
SHARES_PER_PROCESS = 2


def _in_processes(table: pa.Table, worker_cls: type, constructor_kwargs: dict,
                  output_schema: pa.Schema, batch_size: int, first: FollowUp,
                  then: FollowUp | None, progress: ProgressBar | None) -> list[pa.Table]:
    """`map_table` for Python-bound work (`first` reads the input, the worker extracts
    offline) in the in-process engine's worker processes (`processes.py`): the input's rows
    in shares, each share's whole chain in one process."""
    share = max(first[2], -(-table.num_rows // (SHARES_PER_PROCESS * processes.open_workers())))
    futures = processes.submit_all(_chain, [
        (part, worker_cls, constructor_kwargs, batch_size, first, then, output_schema)
        for part in split_table(table, share)])
    results = []
    for future in as_completed(futures):
        results.append(future.result())
        if progress:
            progress.add_rows(results[-1])
    return results


def map_table(table: pa.Table, worker_cls: type, constructor_kwargs: dict, runtime: RuntimeConfig,
              *, output_schema: pa.Schema, num_cpus: float = 1.0,
              batch_size: int | None = None, shape: PoolShape | None = None,
              first: FollowUp | None = None, then: FollowUp | None = None,
              progress: ProgressBar | None = None) -> pa.Table:
    """Apply `worker_cls(**constructor_kwargs)` to every batch of `table`; rows come back in
    arbitrary order (callers join by key). `progress` advances as output blocks arrive.

    `shape`: actors and batches at once per actor (threads; the worker must be thread-safe),
    for I/O-bound work, so that as many batches are in flight as the stage needs whatever the
    input's structure; by default `runtime.num_workers` actors, one batch each.
    `first` runs a plain function over `table` to make the workers' input (it may yield several
    tables: each becomes a block of its own), and `then` one over the workers' output, each in
    batches of its own size: at most `runtime.num_workers` Ray tasks at a time that hold no CPU
    (they must not wait behind actors that hold them all).
    """
    try:
        return _map_table(table, worker_cls, constructor_kwargs, runtime,
                          output_schema=output_schema, num_cpus=num_cpus,
                          batch_size=batch_size, shape=shape, first=first, then=then,
                          progress=progress)
    finally:
        if progress:
            progress.stop()  # a stage that failed leaves no ticker behind


def _map_table(table: pa.Table, worker_cls: type, constructor_kwargs: dict,
               runtime: RuntimeConfig, *, output_schema: pa.Schema, num_cpus: float,
               batch_size: int | None, shape: PoolShape | None, first: FollowUp | None,
               then: FollowUp | None, progress: ProgressBar | None) -> pa.Table:
    if table.num_rows == 0:
        return output_schema.empty_table()
    batch_size = batch_size or runtime.batch_size
    if runtime.engine == "auto":
        raise ValueError("resolve runtime.engine before calling map_table")
    if runtime.engine == "local":
        if first is not None and shape is None and num_cpus >= 1 \
                and table.num_rows > first[2] and processes.open_workers():
            results = _in_processes(table, worker_cls, constructor_kwargs, output_schema,
                                    batch_size, first, then, progress)
        else:
            results = _in_threads(table, worker_cls, constructor_kwargs, batch_size,
                                  shape.in_flight if shape else 1, first, then, progress)
    else:
        results = _on_ray(table, worker_cls, constructor_kwargs, runtime,
                          output_schema=output_schema, num_cpus=num_cpus,
                          batch_size=batch_size, shape=shape, first=first, then=then,
                          progress=progress)
    if progress:
        progress.close()
    return _as_schema(results, output_schema)


def _on_ray(table: pa.Table, worker_cls: type, constructor_kwargs: dict,
            runtime: RuntimeConfig, *, output_schema: pa.Schema, num_cpus: float,
            batch_size: int, shape: PoolShape | None, first: FollowUp | None,
            then: FollowUp | None, progress: ProgressBar | None) -> list[pa.Table]:
    """A Ray Data pipeline: light tasks for `first`, an actor pool of `worker_cls`, light
    tasks for `then`; the output's blocks, compacted as they arrive."""
    import ray
    from ray.data import ActorPoolStrategy, TaskPoolStrategy

    ensure_ray(runtime)
    shape = shape or PoolShape(runtime.num_workers)
    io_bound = shape.per_actor > 1
    # Blocks an actor runs at once: an I/O-bound actor's threads are shared by its blocks
    # (`_calls_at_once`), twice as many blocks as fill them, so that a block waiting on its
    # slowest call leaves no thread idle.
    blocks_at_once = 2 * -(-shape.per_actor // IO_CALLS_PER_BLOCK) if io_bound else 1
    rows_at_once = shape.per_actor * batch_size  # per actor
    if io_bound:
        worker_cls = _calls_at_once(worker_cls, batch_size, shape.per_actor)
        batch_size = block_rows(batch_size, shape)

    def light_tasks(dataset, follow_up: FollowUp):
        fn, kwargs, size = follow_up
        return dataset.map_batches(fn, fn_kwargs=kwargs, batch_size=size, batch_format="pyarrow",
                                   num_cpus=0, compute=TaskPoolStrategy(size=runtime.num_workers))

    # Progress comes from the workers as each batch finishes (a small actor they report to,
    # drained by a thread here), not from the stage's output: that arrives behind the `then`
    # stage, in batches of hundreds of chunks, and reached the user at the stage's end.
    inbox = ray.remote(_ProgressInbox).options(num_cpus=0).remote() if progress else None
    if inbox is not None:
        worker_cls = _reporting(worker_cls, inbox, progress.columns)
    worker_cls = _stoppable(worker_cls)
    drain = _Drain(inbox, progress) if inbox is not None else None
    with _io_bound_pipeline(io_bound), ClusterDemand(num_cpus) as demand:
        if first is not None:
            dataset = light_tasks(ray.data.from_arrow(split_table(table, first[2])), first)
            pool_size = shape.actors
        else:
            dataset = ray.data.from_arrow(split_table(table, batch_size))
            pool_size = max(1, min(shape.actors, -(-table.num_rows // rows_at_once)))
        # Every actor that fits starts at once (an LLM-bound pool that grows one actor at a
        # time leaves the rate budget idle); the rest are asked of the cluster, and Ray Data
        # adds them as nodes join. A cluster that cannot grow keeps the pool that fits.
        demand.want(pool_size)
        starting = min(pool_size, actors_that_fit(num_cpus))
        dataset = dataset.map_batches(
            worker_cls,
            fn_constructor_kwargs=constructor_kwargs,
            compute=ActorPoolStrategy(
                min_size=starting, max_size=pool_size,
                # Ray Data adds an actor when its actors hold 175% of what they run at once:
                # a pool that may grow queues a batch behind each running one, so it can.
                max_tasks_in_flight_per_actor=2 * blocks_at_once if starting < pool_size
                else max(2, blocks_at_once),
                max_concurrent_calls_per_actor=blocks_at_once,
                enable_true_multi_threading=io_bound),
            batch_size=batch_size,
            batch_format="pyarrow",
            num_cpus=num_cpus,
        )
        if then is not None:
            dataset = light_tasks(dataset, then)
        try:
            return _collected(dataset, output_schema)
        finally:
            if drain is not None:
                drain.stop()
                ray.kill(inbox)


def _collected(dataset, output_schema: pa.Schema) -> list[pa.Table]:
    results: list[pa.Table] = []
    arrived: list[pa.Table] = []
    for block in _output_blocks(dataset):
        if block.num_rows:
            arrived.append(block)
        if len(arrived) >= COMPACT_BLOCKS:
            results.append(_compacted(arrived, output_schema))
            arrived = []
    return results + arrived


def _output_blocks(dataset) -> Iterator[pa.Table]:
    """The pipeline's output blocks as they come, read from their references. Not
    `iter_batches`: it sends the run's whole statistics (every block's, growing with the
    run) to Ray Data's stats actor every few seconds, and an I/O-bound pipeline's small
    blocks made them larger than the actor could take in time, filling the object store."""
    import ray

    for bundle in dataset.iter_internal_ref_bundles():
        for entry, piece in zip(bundle.blocks, bundle.slices):
            block = ray.get(entry.ref)
            yield block if piece is None else block.slice(piece.start_offset, piece.num_rows)


class _ProgressInbox:
    """Where a pool's workers report their finished rows (the columns progress reads)."""

    def __init__(self):
        self.blocks: list[pa.Table] = []

    def put(self, block: pa.Table) -> None:
        self.blocks.append(block)

    def take(self) -> list[pa.Table]:
        blocks, self.blocks = self.blocks, []
        return blocks


class _Drain:
    """A thread feeding a progress bar from the workers' inbox, twice a second."""

    def __init__(self, inbox, progress: ProgressBar):
        self.inbox, self.progress = inbox, progress
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-drain", daemon=True)
        self._thread.start()

    def _take(self) -> None:
        import ray

        for block in ray.get(self.inbox.take.remote()):
            self.progress.add_rows(block)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self._take()
            except Exception:  # noqa: BLE001 - progress must never fail the stage
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        try:
            self._take()  # what the last batches reported
        except Exception:  # noqa: BLE001
            pass


def block_rows(batch_size: int, shape: PoolShape | None) -> int:
    """Rows per block that `map_table` hands a pool of `shape` on Ray (a `first` stage
    yields blocks of this size): `IO_CALLS_PER_BLOCK` calls' worth for I/O-bound work."""
    return batch_size * IO_CALLS_PER_BLOCK if shape and shape.per_actor > 1 else batch_size


def _calls_at_once(worker_cls: type, batch_size: int, threads: int) -> type:
    """`worker_cls` that runs a block's `batch_size`-row slices at once, on `threads` threads
    the actor's concurrent blocks share (so its calls in flight stay those its shape
    planned); the rows come back in the block's order."""
    class CallsAtOnce(worker_cls):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._threads = ThreadPoolExecutor(threads, thread_name_prefix="calls")

        def __call__(self, batch: pa.Table) -> pa.Table:
            call = super().__call__
            if batch.num_rows <= batch_size:
                return call(batch)
            return pa.concat_tables(self._threads.map(call, split_table(batch, batch_size)))

    CallsAtOnce.__name__ = CallsAtOnce.__qualname__ = worker_cls.__name__
    return CallsAtOnce


def _stoppable(worker_cls: type) -> type:
    """`worker_cls` whose batch ends quietly when the job was stopped: its driver is unwinding
    and reads nothing more from the pool, which Ray would otherwise log as an unhandled
    error per batch."""
    class Stoppable(worker_cls):
        def __call__(self, batch: pa.Table) -> pa.Table:
            try:
                return super().__call__(batch)
            except stopping.StopRequested:
                return pa.table({})

    Stoppable.__name__ = Stoppable.__qualname__ = worker_cls.__name__
    return Stoppable


def _reporting(worker_cls: type, inbox, columns: tuple[str, ...]) -> type:
    """`worker_cls` whose every call also reports its rows' `columns` to `inbox`."""
    class Reporting(worker_cls):
        def __call__(self, batch: pa.Table) -> pa.Table:
            result = super().__call__(batch)
            wanted = [c for c in columns if c in result.column_names]
            # A table of no columns loses its row count on the way: send one then.
            inbox.put.remote(result.select(wanted) if wanted else
                             pa.table({"rows": pa.nulls(result.num_rows, pa.int8())}))
            return result

    Reporting.__name__ = Reporting.__qualname__ = worker_cls.__name__
    return Reporting


# What an I/O-bound pipeline's blocks may hold in the object store at once. Its blocks are
# small (a few chunks) and Ray Data backpressures by bytes, so without a limit the readers
# ran the whole corpus ahead of the LLM calls, and the driver held every waiting block's
# reference and metadata, growing all the while.
IO_BOUND_OBJECT_STORE_BYTES = 128 * 2 ** 20


@contextmanager
def _io_bound_pipeline(enabled: bool):
    """Every table a `first` stage yields stays a block of its own and goes on at once. Ray
    Data otherwise merges a task's small yields into blocks of up to `target_max_block_size`
    (128 MiB), and holds a generator a few blocks ahead of its consumer: a read task's
    one-chunk blocks reached the extraction pool as one block, which one actor task ran chunk
    after chunk (1 call in flight under any budget). The generator buffer has no public
    setting (Ray 2.x): its private attribute is set for the pipeline and restored after. The
    pipeline's object store use is capped (`IO_BOUND_OBJECT_STORE_BYTES`), so its readers
    stay a bounded distance ahead of the calls."""
    if not enabled:
        yield
        return
    from ray.data import DataContext

    context = DataContext.get_current()
    saved = (context.target_max_block_size, context._max_num_blocks_in_streaming_gen_buffer,
             context.execution_options)
    context.target_max_block_size = 1
    context._max_num_blocks_in_streaming_gen_buffer = None
    options = copy.deepcopy(context.execution_options)
    options.resource_limits = options.resource_limits.copy(
        object_store_memory=IO_BOUND_OBJECT_STORE_BYTES)
    context.execution_options = options
    try:
        yield
    finally:
        (context.target_max_block_size, context._max_num_blocks_in_streaming_gen_buffer,
         context.execution_options) = saved


class ClusterDemand:
    """What this job's pools ask of an autoscaling cluster: one bundle of `num_cpus` per actor
    each pool wants (`want`), asked as one request (`ray.autoscaler.sdk.request_resources`,
    which replaces the job's previous one) while the pool lives. The autoscaler adds nodes
    until the bundles fit and removes them once they are idle after the request is withdrawn.
    A cluster that cannot grow takes the request as a hint and nothing changes."""

    _wanted: dict[int, tuple[float, int]] = {}
    _lock = threading.Lock()

    def __init__(self, num_cpus: float):
        self.num_cpus = num_cpus

    def __enter__(self) -> "ClusterDemand":
        return self

    def __exit__(self, *exc) -> None:
        self.withdraw()

    def want(self, actors: int) -> None:
        if self.num_cpus > 0:
            with self._lock:
                self._wanted[id(self)] = (self.num_cpus, actors)
                self._publish()

    def withdraw(self) -> None:
        with self._lock:
            if self._wanted.pop(id(self), None) is not None:
                self._publish()

    @classmethod
    def _publish(cls) -> None:
        from ray.autoscaler.sdk import request_resources

        if ray_initialized():
            request_resources(bundles=[{"CPU": cpus} for cpus, actors in cls._wanted.values()
                                       for _ in range(actors)])


def actors_that_fit(num_cpus: float) -> int:
    """Actors of `num_cpus` each that the cluster can hold now (at least one, which a
    cluster whose head has no CPU places once a worker joins): more would wait for resources
    a fixed cluster never gets. An autoscaling cluster's pools grow as it does."""
    import ray

    if num_cpus <= 0:
        return 1 << 30
    return max(1, int(ray.cluster_resources().get("CPU", 0) / num_cpus))


def _tables(result) -> list[pa.Table]:
    """A function stage's result: a table, or (a generator's) several."""
    return [result] if isinstance(result, pa.Table) else list(result)


# The driver joins the blocks it receives into one table every this many: an I/O-bound
# pool's output reaches it a row per block (blocks of one byte's target size), and each
# one-row table holds its buffers, padding and schema whole.
COMPACT_BLOCKS = 256


def _compacted(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    return _as_schema(tables, schema).combine_chunks()


def _as_schema(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    if not tables:
        return schema.empty_table()
    return pa.concat_tables([t.select(schema.names).cast(schema) for t in tables])


def map_items(fn: Callable, items: list, runtime: RuntimeConfig, *, num_cpus: float = 1.0,
              keep_blocks: bool = False, shared: list = (), python_bound: bool = False) -> list:
    """`[fn(item, *shared) for item in items]`, as parallel Ray tasks when the engine is Ray.

    `keep_blocks`: `fn` returns (result, block); the block stays where the task put it (Ray's
    object store) and comes back as a handle for later workers (`WorkerPool.submit(blocks=)`,
    or `shared=` here), so a large table passes from stage to stage without going through the
    driver. (Ray returns values under 100 KB inline to the caller: a block that small does sit
    in the driver.) `shared`: what every call reads besides its item: block handles, or
    values put in the object store once (not copied into every task). In-process, the calls
    run in `runtime.num_workers` threads: the tasks read, decode and write Arrow and Parquet,
    which leave the interpreter; `python_bound` calls, which do not, run in the
    engine's worker processes when a job opened them (`processes.py`; `fn`, the items and
    `shared` must then pickle)."""
    if runtime.engine == "local" or (len(items) <= 1 and not keep_blocks
                                     and not _holds_handles(shared)):
        if len(items) <= 1:
            return [fn(item, *shared) for item in items]
        if python_bound and processes.open_workers():
            return [future.result() for future in processes.submit_all(
                fn, [(item, *shared) for item in items])]
        with ThreadPoolExecutor(min(runtime.num_workers, len(items)),
                                thread_name_prefix="map-items") as pool:
            return list(pool.map(lambda item: fn(item, *shared), items))
    import ray

    ensure_ray(runtime)
    shared = [value if isinstance(value, ray.ObjectRef) else ray.put(value) for value in shared]
    if not keep_blocks:
        task = ray.remote(num_cpus=num_cpus)(fn)
        return ray.get([task.remote(item, *shared) for item in items])
    task = ray.remote(num_cpus=num_cpus, num_returns=2)(fn)
    pairs = [task.remote(item, *shared) for item in items]
    return list(zip(ray.get([result for result, _ in pairs]), [block for _, block in pairs]))


def _holds_handles(values) -> bool:
    """Whether any of `values` is a Ray object handle (only a Ray task can read it)."""
    return ray_initialized() and any(isinstance(v, sys.modules["ray"].ObjectRef)
                                     for v in values)


class _WorkerHost:
    """One pool actor: builds each bound worker class once, then runs its batches."""

    def __init__(self):
        self.workers: dict[str, object] = {}
        self._building = threading.Lock()  # the actor runs batches in several threads

    def run(self, key: str, worker_cls: type, constructor_kwargs: dict, batch: pa.Table,
            reads_blocks: bool = False, *blocks: pa.Table):
        """`blocks` come as top-level arguments, which Ray resolves before the call: a block
        in the object store is read zero-copy. (A small block held inline by the driver is
        copied into every call that reads it: hence `put_block` for blocks the driver makes.)"""
        with self._building:
            if key not in self.workers:
                self.workers[key] = worker_cls(**constructor_kwargs)
        worker = self.workers[key]
        try:
            return worker(batch, list(blocks)) if reads_blocks else worker(batch)
        except stopping.StopRequested:
            return None  # the job was stopped: its driver is unwinding and reads no result


# Seconds a WorkerPool waits with nothing to do before it releases its actors.
IDLE_RELEASE_S = 30.0


class WorkerPool:
    """Long-lived workers that take batches as they come and hand back results as they finish:
    for stages whose work appears step by step (a parent community's report can start when its
    children's are done), where a dataset per step would pay Ray Data's start-up and a barrier
    each time. One pool serves several stages (`bind` a worker class per stage), so workers
    start once. `open_worker_pool` makes the engine's: `RayWorkerPool` (`size` threaded actors
    spread over the cluster, `concurrency` batches at once each) or `LocalWorkerPool`
    (in-process threads, as many as the actors' batches together). Either way the workers
    must be thread-safe."""

    def __init__(self):
        self._host = _WorkerHost()
        self._bound: dict[str, tuple[type, object]] = {}
        self._pending: dict = {}  # future or object ref -> (worker index, bound key)

    def bind(self, worker_cls: type, constructor_kwargs: dict) -> str:
        key = f"{worker_cls.__module__}.{worker_cls.__qualname__}:{len(self._bound)}"
        self._bound[key] = (worker_cls, self._held(constructor_kwargs))
        return key

    def _held(self, constructor_kwargs: dict) -> object:
        """The constructor's arguments as the workers receive them."""
        return constructor_kwargs

    def _arguments(self, key: str, batch: pa.Table | list, blocks: list | None) -> tuple:
        worker_cls, kwargs = self._bound[key]
        return (key, worker_cls, kwargs, batch, blocks is not None, *(blocks or []))

    def submit(self, key: str, batch: pa.Table | list, blocks: list | None = None) -> None:
        """`batch`: a table or a list of work items (plain Python values); `blocks`: handles
        (`map_items(keep_blocks=True)`, `put_block`) of tables the worker reads; it is then
        called as `worker(batch, tables)`. `completed` hands the result back with `key`."""
        raise NotImplementedError

    def put_block(self, table: pa.Table):
        """A table for later workers, held where they read it (the object store on Ray):
        its handle is what `submit(blocks=...)` takes."""
        return table

    @property
    def size(self) -> int:
        """Workers running (actors; 1 in-process)."""
        raise NotImplementedError

    @property
    def capacity(self) -> int:
        """Batches the pool runs at once."""
        raise NotImplementedError

    def pending(self) -> int:
        """Batches submitted and not handed back by `completed` yet."""
        return len(self._pending)

    def busy(self) -> bool:
        return self.pending() > 0

    def completed(self, timeout: float | None = None) -> list[tuple[str, object]]:
        """(bound key, result) of the batches finished so far; waits for at least one if none
        is ready (at most `timeout` seconds when given; none when nothing is pending)."""
        raise NotImplementedError

    def drain(self) -> list[tuple[str, object]]:
        """Waits for every batch submitted; their (key, result), in completion order."""
        results = []
        while self._pending:
            results += self.completed()
        return results

    def close(self) -> None:
        raise NotImplementedError


def open_worker_pool(runtime: RuntimeConfig, *, num_cpus: float, concurrency: int,
                     size: int | None = None) -> WorkerPool:
    """The engine's pool: `size` workers (default `runtime.num_workers`) of `num_cpus`
    CPUs, `concurrency` batches at once each."""
    size = size or runtime.num_workers
    if runtime.engine == "local":
        return LocalWorkerPool(size * concurrency)
    return RayWorkerPool(runtime, num_cpus=num_cpus, concurrency=concurrency, size=size)


class LocalWorkerPool(WorkerPool):
    """In-process threads, `capacity` batches at once, through one worker host."""

    def __init__(self, capacity: int):
        super().__init__()
        self._capacity = capacity
        self._threads = ThreadPoolExecutor(capacity)

    def submit(self, key: str, batch: pa.Table | list, blocks: list | None = None) -> None:
        future = self._threads.submit(self._host.run, *self._arguments(key, batch, blocks))
        self._pending[future] = (0, key)

    @property
    def size(self) -> int:
        return 1

    @property
    def capacity(self) -> int:
        return self._capacity

    def completed(self, timeout: float | None = None) -> list[tuple[str, object]]:
        if not self._pending:
            return []
        ready, _ = wait(list(self._pending), timeout, return_when=FIRST_COMPLETED)
        return [(self._pending.pop(future)[1], future.result()) for future in ready]

    def close(self) -> None:
        _close_threads(self._threads)


class RayWorkerPool(WorkerPool):
    """Threaded actors spread over the cluster. Batches wait on the driver and go to the
    least-loaded actor, so actors started later (the cluster grew) get work; a pool idle for
    `IDLE_RELEASE_S` gives its actors back (an autoscaler can remove the idle nodes)."""

    def __init__(self, runtime: RuntimeConfig, *, num_cpus: float, concurrency: int, size: int):
        import ray

        super().__init__()
        ensure_ray(runtime)
        self._concurrency = concurrency
        # A lost actor (its node died) restarts elsewhere and its pending batches run again:
        # workers are idempotent, and finished LLM calls come back from the cache.
        self._actor_cls = ray.remote(_WorkerHost).options(
            num_cpus=num_cpus, max_concurrency=concurrency, scheduling_strategy="SPREAD",
            max_restarts=-1, max_task_retries=-1)
        self._num_cpus, self._wanted = num_cpus, size
        self._actors, self._load = [], []
        # Batches wait here, not in an actor's queue, so actors that join later get work.
        self._queue: deque = deque()
        self._next_growth_check = 0.0
        # The embedding feed submits from a thread of its own.
        self._lock = threading.RLock()
        self._idle_since: float | None = time.monotonic()
        self._closed = threading.Event()
        self._demand = ClusterDemand(num_cpus)
        self._demand.want(size)
        self._grow()
        threading.Thread(target=self._release_when_idle, daemon=True).start()

    def _held(self, constructor_kwargs: dict) -> object:
        import ray

        return ray.put(constructor_kwargs)

    def submit(self, key: str, batch: pa.Table | list, blocks: list | None = None) -> None:
        with self._lock:
            self._queue.append(self._arguments(key, batch, blocks))
            self._idle_since = None
            self._dispatch()

    def _dispatch(self) -> None:
        """Queued batches to the least-loaded actors, up to twice their threads each (a batch
        ready behind each running one)."""
        if not self._actors:  # released while idle: ask for them again
            self._demand.want(self._wanted)
            self._next_growth_check = 0.0
        self._grow()
        while self._queue:
            index = min(range(len(self._actors)), key=self._load.__getitem__)
            if self._load[index] >= 2 * self._concurrency:
                return
            arguments = self._queue.popleft()
            self._pending[self._actors[index].run.remote(*arguments)] = (index, arguments[0])
            self._load[index] += 1

    def _release_when_idle(self) -> None:
        """A pool with nothing to do for `IDLE_RELEASE_S` gives its actors and its claim on
        the cluster back; the next `submit` starts them again."""
        while not self._closed.wait(1.0):
            with self._lock:
                if self._actors and self._idle_since is not None \
                        and time.monotonic() - self._idle_since >= IDLE_RELEASE_S:
                    self._release()

    def _release(self) -> None:
        import ray

        self._demand.withdraw()
        for actor in self._actors:
            ray.kill(actor)
        self._actors, self._load = [], []

    def _grow(self, every_s: float = 2.0) -> None:
        """Start the actors the pool wants that the cluster now holds (it may have grown)."""
        if len(self._actors) >= self._wanted or time.monotonic() < self._next_growth_check:
            return
        self._next_growth_check = time.monotonic() + every_s
        for _ in range(min(self._wanted, actors_that_fit(self._num_cpus)) - len(self._actors)):
            self._actors.append(self._actor_cls.remote())
            self._load.append(0)

    def put_block(self, table: pa.Table):
        import ray

        return ray.put(table)

    @property
    def size(self) -> int:
        return len(self._actors)

    @property
    def capacity(self) -> int:
        # A pool released while idle counts one actor: the next submit starts it.
        return max(1, len(self._actors)) * self._concurrency

    def pending(self) -> int:
        return len(self._pending) + len(self._queue)

    def completed(self, timeout: float | None = None) -> list[tuple[str, object]]:
        import ray

        if not self._pending:
            return []
        with self._lock:
            self._dispatch()
            waiting = list(self._pending)
        ready, _ = ray.wait(waiting, num_returns=1, timeout=timeout)
        if not ready:
            return []
        ready, _ = ray.wait(waiting, num_returns=len(waiting), timeout=0)
        finished = []
        with self._lock:
            for ref in ready:
                index, key = self._pending.pop(ref)
                self._load[index] -= 1
                finished.append((key, ref))
            self._dispatch()
            if not self._pending and not self._queue:
                self._idle_since = time.monotonic()
        return [(key, ray.get(ref)) for key, ref in finished]

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._release()
