"""Which engine a job runs on, and joining Ray: the one place either is decided."""

from __future__ import annotations

import logging
import math
import os
import signal
import sys
import threading
import warnings
from typing import Callable, TypeVar

from graphrag_ray.config import RuntimeConfig

T = TypeVar("T")


# Ray keeps as many idle workers as the node has CPUs and kills the others after one idle
# second. The pools' actors hold the CPUs, so every reading and spilling task (num_cpus=0)
# ran in a worker started for it and killed after it: on a large build a new Python
# process every few seconds, each paying its imports. An idle worker now lives
# a minute, long enough for the next task of its stage.
LOCAL_SYSTEM_CONFIG = {"idle_worker_killing_time_threshold_ms": 60_000}


def ensure_ray(runtime: RuntimeConfig) -> None:
    """Join the cluster we run in (ray job submit / RAY_ADDRESS / runtime.ray_address) or start
    a local instance; reuse one that is already initialised."""
    import ray
    from ray.data import DataContext

    if not ray_initialized():
        address = runtime.ray_address or os.environ.get("RAY_ADDRESS")
        kwargs = {"include_dashboard": False, "log_to_driver": False,
                  "logging_level": logging.WARNING}
        # ray.init replaces the process's SIGTERM handler with a bare exit; the caller's
        # handlers (the CLI's: stop paying, clean up, say so) are put back.
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)} \
            if threading.current_thread() is threading.main_thread() else {}
        if address:
            ray.init(address=address, **kwargs)
        else:
            # A new instance of our own: never whatever cluster this machine last knew of
            # (/tmp/ray/ray_current_cluster), which may be someone else's, or dead. Its
            # token is generated for it and nobody else joins it: Ray's warning that token
            # auth is on asks nothing of the user here.
            logging.getLogger("ray._private.authentication.authentication_token_setup"
                              ).setLevel(logging.ERROR)
            ray.init(address="local", num_cpus=runtime.num_cpus,
                     _system_config=LOCAL_SYSTEM_CONFIG, **kwargs)
        for sig, handler in handlers.items():
            if callable(handler):
                signal.signal(sig, handler)
        _spend_the_actor_argument_warning()

    logging.getLogger("ray.data").setLevel(logging.WARNING)
    # A worker's exception reaches the driver as an exception, which the CLI tells once (a
    # message for the environment's failures, the traceback for a bug); Ray Data also logs
    # it with its stack, twice, as an error "in Ray Data or Ray Core internal code".
    for name in ("ray.data.exceptions", "ray.data._internal.execution.streaming_executor_state"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # We turn Ray Data's progress bars off (ours show the stage's progress); its warning
    # that they are off is noise on every run.
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
    # Ray Data counts a generator's input as one input and warns that a pool "only received
    # 1 input(s)"; the blocks it yields do reach every actor (tests/index/test_throughput.py).
    warnings.filterwarnings("ignore", message=r".*only received 1 input\(s\)", category=UserWarning)
    context = DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False


def _spend_the_actor_argument_warning() -> None:
    """Ray's driver logs, once per process and at error level, that an actor whose
    constructor takes an object-store argument may fail to restart (ray-project/ray#53727).
    Every Ray Data actor pool passes such arguments of its own (its data context and map
    function), so every build printed an error line though nothing was wrong. The one line
    is spent here, creating a throwaway actor of that kind while the driver's stderr is
    captured; anything else written meanwhile is passed on."""
    import ray

    @ray.remote(num_cpus=0, max_restarts=1)
    class _Throwaway:
        def __init__(self, value):
            pass

        def ready(self) -> bool:
            return True

    sys.stderr.flush()
    read_end, write_end = os.pipe()
    captured: list[bytes] = []

    def drain() -> None:  # read as it comes: a full pipe would block the writer
        while chunk := os.read(read_end, 65536):
            captured.append(chunk)

    reader = threading.Thread(target=drain, name="stderr-capture", daemon=True)
    reader.start()
    saved = os.dup(2)
    os.dup2(write_end, 2)
    try:
        actor = _Throwaway.remote(ray.put(b""))
        ray.get(actor.ready.remote(), timeout=60)
        ray.kill(actor)
    except Exception:  # noqa: BLE001 - a cosmetic line must never fail the job
        logging.getLogger(__name__).debug("could not spend Ray's actor-argument warning",
                                          exc_info=True)
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(write_end)
        reader.join()
        os.close(read_end)
    others = [line for line in b"".join(captured).decode("utf-8", "replace").splitlines(
        keepends=True) if "has constructor arguments in the object store" not in line]
    if others:
        sys.stderr.write("".join(others))


def resolve_engine(runtime: RuntimeConfig, n_chunks: int | None = None,
                   llm_bound: bool = False) -> str:
    """The one place the engine is chosen: `runtime.engine` when set (ray or local); for auto,
    Ray when this process is attached to one (`runtime.ray_address`, RAY_ADDRESS, Ray already
    initialised: a `ray job submit` job, a notebook), else Ray for a build that extracts more
    chunks (`n_chunks`) than `runtime.local_max_chunks` (`local_chunk_limit`), or
    `runtime.local_max_llm_chunks` when its extraction waits on an LLM (`llm_bound`); local
    for anything smaller and for queries (`n_chunks` None)."""
    if runtime.engine != "auto":
        return runtime.engine
    if runtime.ray_address or os.environ.get("RAY_ADDRESS") or ray_initialized():
        return "ray"
    limit = runtime.local_max_llm_chunks if llm_bound else local_chunk_limit(runtime)
    return "ray" if n_chunks is not None and n_chunks > limit else "local"


# What starting a local Ray costs an offline build, in chunks extracted in-process: its start,
# and each pool's actors importing the package, against the time a chunk takes in-process
# (the benchmark pages have the figures).
RAY_START_IN_CHUNKS = 2_700


def local_chunk_limit(runtime: RuntimeConfig) -> float:
    """`runtime.local_max_chunks`, or where in-process and Ray meet on this machine's k
    cores: Ray divides the per-chunk work by up to k for a fixed start, so from
    `RAY_START_IN_CHUNKS` x k / (k - 1) chunks (2 cores: 5,400; 4: 3,600; 8: 3,086; one
    core: never)."""
    if runtime.local_max_chunks is not None:
        return runtime.local_max_chunks
    cores = runtime.num_cpus or os.cpu_count() or 1
    return math.inf if cores < 2 else RAY_START_IN_CHUNKS * cores / (cores - 1)


# Python's switch interval while Ray starts beside the caller's busy threads (the default
# starves the joining interpreter while a thread is busy).
WARM_UP_SWITCH_INTERVAL_S = 0.0002


def warm_up(runtime: RuntimeConfig, meanwhile: Callable[[], T] | None = None) -> T | None:
    """Ray joined now, when the job runs on it, while `meanwhile()` starts the caller's work
    that needs none (threads: an update reads its carried passage scans) and returns its
    handle. Joining is mostly the driver's interpreter (Ray's imports, connecting), which a
    busy thread starves at Python's default switch interval, a turn of 5 ms each time the
    joining waits on a file or a socket. So Ray's modules are imported before `meanwhile`
    starts, and the interval is short while Ray starts."""
    if runtime.engine != "ray":
        return meanwhile() if meanwhile is not None else None
    import ray.data  # noqa: F401 - (imported alone: see above)

    started = meanwhile() if meanwhile is not None else None
    interval = sys.getswitchinterval()
    sys.setswitchinterval(WARM_UP_SWITCH_INTERVAL_S)
    try:
        ensure_ray(runtime)
    finally:
        sys.setswitchinterval(interval)
    return started


def ray_initialized() -> bool:
    """Whether this process has initialised Ray (without importing it when it has not)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()
