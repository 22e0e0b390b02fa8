import time

import pyarrow as pa

from graphrag_ray.config import RuntimeConfig
from graphrag_ray.distributed import map_table, resolve_engine, split_table


class Doubler:
    def __init__(self, factor: int):
        self.factor = factor

    def __call__(self, batch: pa.Table) -> pa.Table:
        return pa.table({"key": batch.column("key"),
                         "value": [v * self.factor for v in batch.column("key").to_pylist()]})


SCHEMA = pa.schema([("key", pa.int64()), ("value", pa.int64())])


def test_resolve_engine(monkeypatch):
    from graphrag_ray.distributed import engine

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    # As in a fresh process (other tests of this session may have started Ray here).
    monkeypatch.setattr(engine, "ray_initialized", lambda: False)
    assert resolve_engine(RuntimeConfig(engine="local"), 10_000) == "local"
    assert resolve_engine(RuntimeConfig(engine="ray"), 1) == "ray"
    assert resolve_engine(RuntimeConfig(ray_address="ray://head:10001"), 1) == "ray"
    # On one machine: offline extraction (CPU-bound) goes to Ray sooner than LLM extraction,
    # the sooner the more cores Ray spreads it over; never on one core.
    assert resolve_engine(RuntimeConfig(num_cpus=2), 5_000) == "local"
    assert resolve_engine(RuntimeConfig(num_cpus=2), 6_000) == "ray"
    assert resolve_engine(RuntimeConfig(num_cpus=8), 3_500) == "ray"
    assert resolve_engine(RuntimeConfig(num_cpus=1), 10 ** 7) == "local"
    assert resolve_engine(RuntimeConfig(local_max_chunks=256), 1_000) == "ray"
    assert resolve_engine(RuntimeConfig(num_cpus=2), 6_000, llm_bound=True) == "local"
    assert resolve_engine(RuntimeConfig(), 30_000, llm_bound=True) == "ray"
    assert resolve_engine(RuntimeConfig()) == "local"  # queries
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    assert resolve_engine(RuntimeConfig(), 1) == "ray"


def test_split_table():
    blocks = split_table(pa.table({"key": list(range(10))}), 4)
    assert [b.num_rows for b in blocks] == [4, 4, 2]


def test_ray_and_local_give_the_same_rows(ray_session):
    table = pa.table({"key": pa.array(range(50), pa.int64())})
    local = map_table(table, Doubler, {"factor": 3}, RuntimeConfig(engine="local", batch_size=7),
                      output_schema=SCHEMA)
    on_ray = map_table(table, Doubler, {"factor": 3},
                       RuntimeConfig(engine="ray", batch_size=7, num_workers=2),
                       output_schema=SCHEMA)
    assert on_ray.sort_by("key").equals(local.sort_by("key"))
    assert local.column("value").to_pylist() == [3 * k for k in range(50)]


def split_off_block(item: int) -> tuple[int, pa.Table]:
    return item * 2, pa.table({"description": [f"text {item}"] * 3})


class BlockReader:
    """Reads the rows a batch names from the blocks it is given."""

    def __call__(self, batch: pa.Table, blocks: list[pa.Table]) -> pa.Table:
        return pa.table({"description": [
            blocks[b].column("description")[r].as_py()
            for b, r in zip(batch.column("block").to_pylist(), batch.column("row").to_pylist())]})


def test_blocks_stay_in_the_object_store_on_ray(ray_session):
    import ray

    from graphrag_ray.distributed import map_items, open_worker_pool

    runtime = RuntimeConfig(engine="ray", num_workers=2)
    results = map_items(split_off_block, [1, 2, 3], runtime, keep_blocks=True)
    assert [r for r, _ in results] == [2, 4, 6]
    handles = [block for _, block in results]
    assert all(isinstance(h, ray.ObjectRef) for h in handles)  # the driver got no text

    pool = open_worker_pool(runtime, num_cpus=0.5, concurrency=2)
    try:
        handles.append(pool.put_block(pa.table({"description": ["put by the driver"]})))
        assert isinstance(handles[-1], ray.ObjectRef)
        key = pool.bind(BlockReader, {})
        pool.submit(key, pa.table({"block": [2, 0, 3], "row": [1, 0, 0]}), blocks=handles)
        done = pool.drain()
        assert [(k, t.column("description").to_pylist()) for k, t in done] == [
            (key, ["text 3", "text 1", "put by the driver"])]
    finally:
        pool.close()
    # The local engine gives the same results, with the blocks in process.
    local = map_items(split_off_block, [1, 2, 3], RuntimeConfig(engine="local"), keep_blocks=True)
    assert [r for r, _ in local] == [2, 4, 6]
    assert local[0][1].equals(ray.get(handles[0]))


class Twice:
    def __call__(self, batch: pa.Table) -> pa.Table:
        return pa.table({"x": [2 * x for x in batch.column("x").to_pylist()]})


def test_an_idle_worker_pool_gives_its_actors_back_and_starts_them_again(ray_session,
                                                                          monkeypatch):
    """An idle pool holds no CPU (an autoscaler can then remove its nodes); work submitted
    later starts its actors again and gets the same results."""
    from graphrag_ray.distributed import workers

    monkeypatch.setattr(workers, "IDLE_RELEASE_S", 1.0)
    pool = workers.open_worker_pool(RuntimeConfig(engine="ray"), num_cpus=0.25, concurrency=2,
                                    size=2)
    try:
        key = pool.bind(Twice, {})
        pool.submit(key, pa.table({"x": [1, 2]}))
        assert [t.column("x").to_pylist() for _, t in pool.drain()] == [[2, 4]]
        assert pool.size == 2
        deadline = time.monotonic() + 60
        while pool.size and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pool.size == 0 and not pool.busy()
        for x in (3, 4, 5):
            pool.submit(key, pa.table({"x": [x]}))
        assert sorted(t.column("x")[0].as_py() for _, t in pool.drain()) == [6, 8, 10]
        assert pool.size >= 1
    finally:
        pool.close()


class SlowDoubler(Doubler):
    def __call__(self, batch: pa.Table) -> pa.Table:
        time.sleep(0.3)
        return super().__call__(batch)


def _gather(batch: pa.Table) -> pa.Table:
    return batch


def test_progress_on_ray_comes_from_the_workers_as_they_finish(ray_session):
    """The stage's output reaches the driver behind a `then` stage of 512-row batches, so
    progress fed from it moved once, at the end; the workers report each batch instead."""
    from graphrag_ray.progress import ProgressBar

    class Timed(ProgressBar):
        seen: list = []

        def add_rows(self, block) -> None:
            self.seen.append((time.monotonic(), block.num_rows))
            super().add_rows(block)

    import io

    bar = Timed("work", 12, stream=io.StringIO())
    out = map_table(pa.table({"key": list(range(12))}), SlowDoubler, {"factor": 2},
                    RuntimeConfig(engine="ray", num_workers=1), output_schema=SCHEMA,
                    batch_size=1, then=(_gather, {}, 512), progress=bar)
    ended = time.monotonic()
    assert out.num_rows == 12 and bar.done == 12
    assert sum(n for _, n in Timed.seen) == 12
    assert Timed.seen[0][0] < ended - 1.0  # the first rows came while the stage ran


class CountsCallsAtOnce:
    """A call that waits on I/O (sleeps) and says how many calls of its actor were running
    when it started, and how many rows it was given."""

    def __init__(self):
        import threading

        self.lock, self.running = threading.Lock(), 0

    def __call__(self, batch: pa.Table) -> pa.Table:
        with self.lock:
            self.running += 1
            at_start = self.running
        time.sleep(0.5)
        with self.lock:
            self.running -= 1
        return pa.table({"key": batch.column("key"),
                         "in_flight": pa.array([at_start] * batch.num_rows, pa.int64()),
                         "rows": pa.array([batch.num_rows] * batch.num_rows, pa.int64())})


def _yield_in_blocks(batch: pa.Table, rows: int):
    for start in range(0, batch.num_rows, rows):
        yield batch.slice(start, rows)


def test_an_io_bound_pool_runs_its_calls_at_once_in_blocks_of_several(ray_session):
    """On Ray an I/O-bound pool gets blocks of several calls' rows (Ray Data's cost per block
    was paid per LLM call), which an actor runs at once on the threads its shape gives it:
    the calls in flight are the shape's, no more, and each call still gets its batch."""
    from graphrag_ray.distributed import PoolShape, block_rows

    shape = PoolShape(1, 6)
    rows = block_rows(1, shape)
    assert rows > 1 and block_rows(1, PoolShape(2)) == 1
    out = map_table(pa.table({"key": pa.array(range(36), pa.int64())}), CountsCallsAtOnce, {},
                    RuntimeConfig(engine="ray"), batch_size=1, shape=shape,
                    output_schema=pa.schema([("key", pa.int64()), ("in_flight", pa.int64()),
                                             ("rows", pa.int64())]),
                    first=(_yield_in_blocks, {"rows": rows}, 36))
    assert sorted(out.column("key").to_pylist()) == list(range(36))
    assert set(out.column("rows").to_pylist()) == {1}
    assert max(out.column("in_flight").to_pylist()) == 6


def test_the_driver_joins_the_rows_an_io_bound_pool_sends_back(ray_session, monkeypatch):
    """Such a pool's output reaches the driver a row per block, and a one-row table of
    many columns holds tens of KB: the driver joins them as they come, so what it holds
    grows with the rows' bytes, not with the number of blocks."""
    from graphrag_ray.distributed import PoolShape, workers

    monkeypatch.setattr(workers, "COMPACT_BLOCKS", 50)
    out = map_table(pa.table({"key": pa.array(range(600), pa.int64())}), Doubler,
                    {"factor": 2}, RuntimeConfig(engine="ray"), batch_size=1,
                    shape=PoolShape(1, 4), output_schema=SCHEMA,
                    first=(_yield_in_blocks, {"rows": 8}, 600))
    assert sorted(out.column("value").to_pylist()) == [2 * k for k in range(600)]
    assert out.column("value").num_chunks <= 600 // 50 + 50


def add(item: int, shared: int) -> int:
    return item + shared


def test_one_item_with_a_shared_value_runs_in_process_without_starting_ray():
    """An engine left at auto (adoption's lexical index: one part, its titles shared) must not
    start a Ray instance in the caller's process for one call."""
    import sys

    from graphrag_ray.distributed import map_items

    ray = sys.modules.get("ray")
    running = ray is not None and ray.is_initialized()
    assert map_items(add, [1], RuntimeConfig(engine="auto"), shared=[2]) == [3]
    ray = sys.modules.get("ray")
    assert running or ray is None or not ray.is_initialized()
