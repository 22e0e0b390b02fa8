"""The Ray Serve layer: the HTTP application (`http_api`) as a deployment whose replicas
each hold the index warm, fixed in number or autoscaled on ongoing requests, and one small
actor that sums the replicas' request counts for `/metrics`.

`app_builder` is the import path for `serve run` and KubeRay's RayService
(`cluster/serve.yaml`); `run_on_ray` is what `graphrag-ray serve` does with Ray.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid

import ray
from ray import serve

from graphrag_ray.config import ServeConfig
from graphrag_ray.errors import GraphRagError
from graphrag_ray.serve.http_api import API_KEYS_VARIABLE
from graphrag_ray.serve.runner import ServeSpec, limits_of, open_live

APP_NAME = "graphrag"
METRICS_ACTOR = "graphrag-serve-metrics"


@ray.remote(num_cpus=0)
class MetricsActor:
    """The service's request counts: each replica's, summed."""

    def __init__(self):
        from graphrag_ray.serve.metrics import ServeMetrics

        self.counts = ServeMetrics()
        self.switches: dict[str, int] = {}

    def record(self, *args) -> None:
        self.counts.record(*args)

    def switched(self, replica: str, switches: int) -> None:
        self.switches[replica] = switches

    def text(self, version: str | None) -> str:
        from graphrag_ray.serve.metrics import render

        snapshot = self.counts.snapshot()
        snapshot["switches"] = sum(self.switches.values())
        # Every replica that ever counted (one that was replaced keeps its share).
        return render(snapshot, version, replicas=len(self.switches))


def _metrics_actor(namespace: str):
    return MetricsActor.options(name=METRICS_ACTOR, namespace=namespace, get_if_exists=True,
                                lifetime="detached").remote()


@serve.deployment(name="graphrag-index")
@serve.ingress()
class IndexReplica:
    def __init__(self, spec: ServeSpec, metrics_namespace: str):
        from graphrag_ray.serve.http_api import Metrics, Service

        self.actor = _metrics_actor(metrics_namespace)
        live = open_live(spec)

        def record(*args):
            self.actor.record.remote(*args)  # fire and forget: a request never waits on it

        def text(version):
            self.actor.switched.remote(self.service.replica, live.switches)
            return ray.get(self.actor.text.remote(version))

        self.service = Service(live, limits_of(spec.settings), Metrics(record, text))
        self.actor.switched.remote(self.service.replica, 0)

    def __serve_build_asgi_app__(self):
        from graphrag_ray.serve.http_api import make_app

        return make_app(self.service)

    def check_health(self) -> None:
        if self.service.live.version is None:
            raise RuntimeError("the index is not loaded")

    def __del__(self):
        service = getattr(self, "service", None)
        if service is not None:
            service.close()


def deployment(spec: ServeSpec, namespace: str):
    settings = spec.settings
    options = {"ray_actor_options": {"num_cpus": settings.replica_cpus},
               # Admit more than the replica answers at once, so that a burst gets its
               # quick 429 from the replica instead of a queue at the proxy.
               "max_ongoing_requests": settings.max_concurrent_requests * 2,
               "health_check_period_s": 10}
    if settings.min_replicas is not None and settings.max_replicas is not None:
        options["autoscaling_config"] = {
            "min_replicas": settings.min_replicas, "max_replicas": settings.max_replicas,
            "initial_replicas": max(settings.min_replicas, 1),
            "target_ongoing_requests": max(1, settings.max_concurrent_requests // 2)}
    else:
        options["num_replicas"] = settings.replicas
    return IndexReplica.options(**options).bind(spec, namespace)


def app_builder(args: dict):
    """`serve run graphrag_ray.serve.ray_serve:app_builder index_url=s3://...` or a Serve
    config file's `import_path` with `args` (cluster/serve.yaml): index_url, config_path,
    overrides, version, metrics_namespace, without_keys, and any `serve` setting."""
    args = dict(args)
    if not os.environ.get(API_KEYS_VARIABLE) and not args.get("without_keys"):
        # A cluster's proxy listens beyond this machine: without keys, anyone who reaches it
        # spends the LLM budget. `without_keys: true` is the deliberate opt-out.
        raise GraphRagError(f"{API_KEYS_VARIABLE} is not set on this node: the service "
                            "would answer anyone (set keys, or pass without_keys: true)")
    settings = ServeConfig.model_validate(
        {k: v for k, v in args.items() if k in ServeConfig.model_fields})
    overrides = args.get("overrides") or ()
    spec = ServeSpec(index_url=args["index_url"], config_path=args.get("config_path"),
                     overrides=tuple(overrides.split(",") if isinstance(overrides, str)
                                     else overrides),
                     version=args.get("version"), settings=settings)
    return deployment(spec, namespace=args.get("metrics_namespace", "graphrag-serve"))


def _cause(exc: RuntimeError) -> str:
    """The replica's own error, from Serve's status message (its last traceback line)."""
    try:
        message = serve.status().applications[APP_NAME].deployments["graphrag-index"].message
    except Exception:  # noqa: BLE001 - the status is a courtesy; Serve's own error stands
        message = str(exc)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1] if lines else str(exc)


def run_on_ray(spec: ServeSpec, host: str, announce) -> None:
    """Serve on the attached cluster (or a local instance) until SIGINT/SIGTERM."""
    from graphrag_ray.config import RuntimeConfig
    from graphrag_ray.distributed import ensure_ray

    ensure_ray(RuntimeConfig(ray_address=os.environ.get("RAY_ADDRESS")))
    namespace = f"graphrag-serve-{uuid.uuid4().hex[:8]}"
    serve.start(http_options={"host": host, "port": spec.settings.port})
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT,
                                                                     signal.SIGTERM)}
    try:
        try:
            serve.run(deployment(spec, namespace), name=APP_NAME, route_prefix="/")
        except RuntimeError as exc:
            raise GraphRagError(f"the service's replicas did not start: {_cause(exc)} "
                                "(Ray Serve's replica logs: <session>/logs/serve/)") from None
        announce(host, spec.settings.port, None, bool(limits_of(spec.settings).api_keys))
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        serve.delete(APP_NAME)
        try:
            ray.kill(ray.get_actor(METRICS_ACTOR, namespace=namespace))
        except ValueError:
            pass
