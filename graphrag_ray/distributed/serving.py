"""Ray Serve for the query service, knowing nothing of what it serves: a deployment whose
replicas each build their ASGI application with a plain function (`serve/` gives it), a
small named actor holding one shared object (the replicas' summed metrics), and a run that
lasts until SIGINT or SIGTERM.

Replicas are fixed in number or autoscaled on ongoing requests; each is sent at most the
requests it answers at once, and the proxy holds a bounded queue beyond them (503 past it:
the client backs off instead of waiting in a queue that grows until every answer times out).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

import ray
from ray import serve

DEPLOYMENT = "graphrag-index"
QUEUED_PER_SLOT = 4


@ray.remote(num_cpus=0)
class _Shared:
    def __init__(self, factory: Callable[[], object]):
        self.target = factory()

    def call(self, method: str, *args):
        return getattr(self.target, method)(*args)


class Shared:
    """A handle on the object every replica shares: `call` waits for the answer, `cast`
    does not (a request never waits on its metrics)."""

    def __init__(self, name: str, namespace: str, factory: Callable[[], object]):
        # Detached: it outlives the replica that happened to create it (a killed replica
        # must not take the service's counts with it); `remove_shared` ends it.
        self._actor = _Shared.options(name=name, namespace=namespace, get_if_exists=True,
                                      lifetime="detached").remote(factory)

    def call(self, method: str, *args):
        return ray.get(self._actor.call.remote(method, *args))

    def cast(self, method: str, *args) -> None:
        self._actor.call.remote(method, *args)


def remove_shared(name: str, namespace: str) -> None:
    try:
        ray.kill(ray.get_actor(name, namespace=namespace))
    except ValueError:  # never created (no replica started)
        pass


@serve.deployment(name=DEPLOYMENT)
@serve.ingress()
class _Replica:
    """`build(*args)` returns an object with `app` (ASGI), `check_health()` and `close()`."""

    def __init__(self, build: Callable, *args):
        self.replica = build(*args)

    def __serve_build_asgi_app__(self):
        return self.replica.app

    def check_health(self) -> None:
        self.replica.check_health()

    def __del__(self):
        replica = getattr(self, "replica", None)
        if replica is not None:
            replica.close()


def deployment(build: Callable, args: tuple, *, replicas: int, min_replicas: int | None,
               max_replicas: int | None, replica_cpus: float, concurrent_requests: int):
    options = {"ray_actor_options": {"num_cpus": replica_cpus},
               # The proxy sends a replica no more than it answers at once (more were
               # refused 429 when the router's balance tipped, 3 in 501 requests at 32
               # clients on 2 replicas of 16); the rest wait at the proxy, at most
               # QUEUED_PER_SLOT per slot, beyond which Serve answers 503 (retried by
               # the `openai` client like the 429).
               "max_ongoing_requests": concurrent_requests,
               "max_queued_requests": concurrent_requests * QUEUED_PER_SLOT,
               "health_check_period_s": 10}
    if min_replicas is not None and max_replicas is not None:
        options["autoscaling_config"] = {
            "min_replicas": min_replicas, "max_replicas": max_replicas,
            "initial_replicas": max(min_replicas, 1),
            "target_ongoing_requests": max(1, concurrent_requests // 2)}
    else:
        options["num_replicas"] = replicas
    return _Replica.options(**options).bind(build, *args)


class ReplicasFailed(RuntimeError):
    """The replicas did not start; the message is a replica's own error."""


def _cause(app_name: str, exc: RuntimeError) -> str:
    """The replica's own error, from Serve's status message (its last traceback line)."""
    try:
        message = serve.status().applications[app_name].deployments[DEPLOYMENT].message
    except Exception:
        message = str(exc)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1] if lines else str(exc)


def run_until_stopped(application, app_name: str, host: str, port: int,
                      on_ready: Callable[[], None], on_stop: Callable[[], None]) -> None:
    """Deploy on the Ray this process is connected to, call `on_ready`, and serve until
    SIGINT/SIGTERM; then delete the application and call `on_stop`. Replicas that fail to
    start raise ReplicasFailed, naming their own error."""
    serve.start(http_options={"host": host, "port": port})
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set())
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            serve.run(application, name=app_name, route_prefix="/")
        except RuntimeError as exc:
            raise ReplicasFailed(_cause(app_name, exc)) from None
        on_ready()
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        serve.delete(app_name)
        on_stop()
