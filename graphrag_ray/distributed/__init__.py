"""The Ray layer, and the only place Ray is touched: the engine choice (`engine`), worker pools
and object-store blocks for the build (`workers`), the query-time fan-out (`fanout`), the
rate budget every worker of a job shares (`shared_budget`, opened by `services`), and the
query service's Ray Serve deployment (`serving`, imported by name: it needs the `serve` extra).
With `runtime.engine: local` the same classes run in-process and give the same rows."""

from graphrag_ray.distributed.engine import ensure_ray, ray_initialized, resolve_engine, warm_up
from graphrag_ray.distributed.fanout import FanOut
from graphrag_ray.distributed.workers import (
    PoolShape, WorkerPool, actors_that_fit, block_rows, io_pool_shape, map_items, map_table,
    open_worker_pool, split_table)

__all__ = ["FanOut", "PoolShape", "WorkerPool", "actors_that_fit", "block_rows", "ensure_ray",
           "io_pool_shape", "map_items", "map_table", "open_worker_pool", "ray_initialized",
           "resolve_engine", "split_table", "warm_up"]
