"""Query-time fan-out of independent LLM calls (global map batches, report ratings, DRIFT
follow-ups): across Ray actors when connected to a cluster, in-process asyncio otherwise.

Either way the results come back in the order of the items, and each item's function is the
same plain function, so both give the same answer. Items travel to actors whole: a function
takes one picklable task (config, prompt inputs, services) and builds its own client.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Callable, TypeVar

from graphrag_ray.config import RuntimeConfig
from graphrag_ray.distributed.engine import ensure_ray, resolve_engine

Item = TypeVar("Item")
Out = TypeVar("Out")


class _QueryActor:
    def call(self, fn: Callable, item):
        return fn(item)


class FanOut:
    """Runs `fn` over items with at most `concurrency` at once. Ray actors start on first use
    and serve every later query of the same index."""

    def __init__(self, runtime: RuntimeConfig):
        self.runtime = runtime
        self.use_ray = resolve_engine(runtime) == "ray"
        self._actors: list = []
        self._starting = threading.Lock()

    def map(self, fn: Callable[[Item], Out], items: list[Item], concurrency: int) -> list[Out]:
        if not items:
            return []
        if self.use_ray:
            return self._map_ray(fn, items)
        return _run_coroutine(_map_asyncio(fn, items, concurrency))

    def start(self) -> None:
        """Start the actors now rather than at the first map (a served index: its first
        question would wait seconds for their processes)."""
        if not self.use_ray:
            return
        import ray

        with self._starting:
            if not self._actors:
                ensure_ray(self.runtime)
                # I/O-bound calls: a quarter CPU each, many calls at once per actor.
                actor = ray.remote(_QueryActor).options(num_cpus=0.25, max_concurrency=16,
                                                        scheduling_strategy="SPREAD")
                self._actors = [actor.remote() for _ in range(self.runtime.num_workers)]
                ray.get([a.call.remote(len, ()) for a in self._actors])  # their processes up

    def _map_ray(self, fn, items):
        import ray

        self.start()
        actors = itertools.cycle(self._actors)
        return ray.get([next(actors).call.remote(fn, item) for item in items])

    def close(self) -> None:
        if self._actors:
            import ray

            for actor in self._actors:
                ray.kill(actor)
            self._actors = []


async def _map_asyncio(fn, items, concurrency: int):
    gate = asyncio.Semaphore(concurrency)

    async def one(item):
        async with gate:
            return await asyncio.to_thread(fn, item)

    return await asyncio.gather(*(one(item) for item in items))


def _run_coroutine(coroutine):
    """asyncio.run, also from code already inside an event loop (a notebook): then in a
    thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    result: dict = {}

    def run() -> None:
        try:
            result["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed to the caller below
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]
