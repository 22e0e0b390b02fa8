"""What `graphrag-ray serve` starts: the index opened for serving, the limits, and either
uvicorn in this process (`runtime.engine=local`) or a Ray Serve application (a local Ray
instance, or the cluster this process is attached to).

Replicas get a `ServeSpec` (plain data: where the index is, which settings, which limits),
never a config object: its API key would travel into Ray's stored deployment arguments. Each
replica reads keys from its own environment.
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass, field

from graphrag_ray.config import GraphRagConfig, ServeConfig, config_from_manifest, load_config
from graphrag_ray.errors import GraphRagError
from graphrag_ray.serve.live_index import LiveIndex

log = logging.getLogger("graphrag_ray.serve")

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ServeSpec:
    index_url: str
    config_path: str | None = None
    overrides: tuple[str, ...] = ()
    version: str | None = None  # pinned; None follows the published version
    settings: ServeConfig = field(default_factory=ServeConfig)

    def config(self) -> GraphRagConfig | None:
        """The settings to answer with: the file's (with overrides), or None for each
        version's own (its manifest's, with the overrides)."""
        if self.config_path is None:
            return None
        return load_config(self.config_path, list(self.overrides))


def serve_settings(config_path: str | None, overrides: list[str], **flags) -> ServeConfig:
    """The `serve` section of the config file (or the defaults), the `--set serve.*`
    overrides, then the command's flags (validated alike: errors name the key)."""
    given = [f"serve.{name}={value}" for name, value in flags.items() if value is not None]
    return load_config(config_path, [o for o in overrides if o.startswith("serve.")]
                       + given).serve


def bound_host(host: str, has_keys: bool) -> str:
    """Without API keys the service answers this machine only, whatever `host` asks."""
    if has_keys or host in LOOPBACK:
        return host
    warnings.warn(f"no API keys are set (GRAPHRAG_SERVE_API_KEYS): serving on 127.0.0.1 "
                  f"only, not {host}; set keys to serve other machines", stacklevel=2)
    return "127.0.0.1"


def open_live(spec: ServeSpec) -> LiveIndex:
    from graphrag_ray.api import GraphIndex
    from graphrag_ray.storage import IndexStore

    store = IndexStore(spec.index_url)
    config = spec.config()

    def open_version(version: str | None):
        opened = store.open(version)
        manifest = opened.read_manifest()
        index = GraphIndex(opened, manifest,
                           config or config_from_manifest(manifest, list(spec.overrides)))
        index.warm()
        return index

    return LiveIndex(open_version, store.published_version, spec.settings.poll_s,
                     pinned=spec.version).start()


def limits_of(settings: ServeConfig):
    from graphrag_ray.serve.http_api import API_KEYS_VARIABLE, Limits, api_keys_from

    return Limits(api_keys=api_keys_from(os.environ.get(API_KEYS_VARIABLE)),
                  max_body_bytes=settings.max_body_bytes,
                  max_concurrent_requests=settings.max_concurrent_requests,
                  request_timeout_s=settings.request_timeout_s)


APP_NAME = "graphrag"
METRICS_ACTOR = "graphrag-serve-metrics"


class Replica:
    """The service as one replica runs it: its live index, limits and app; `metrics` is the
    `ServiceMetrics` it counts into (its own, or a handle on the replicas' shared one, with
    `call` and `cast`)."""

    def __init__(self, spec: ServeSpec, metrics):
        from graphrag_ray.serve.http_api import Metrics, Service, make_app

        live = open_live(spec)

        def text(version: str | None) -> str:
            metrics.cast("switched", self.service.replica, live.switches)
            return metrics.call("text", version)

        self.service = Service(live, limits_of(spec.settings),
                               Metrics(lambda *figures: metrics.cast("record", *figures), text))
        metrics.cast("switched", self.service.replica, 0)
        self.app = make_app(self.service)

    def check_health(self) -> None:
        if self.service.live.version is None:
            raise RuntimeError("the index is not loaded")

    def close(self) -> None:
        self.service.close()


class _InProcess:
    """`ServiceMetrics` called as a shared one is."""

    def __init__(self):
        from graphrag_ray.serve.metrics import ServiceMetrics

        self.target = ServiceMetrics()

    def call(self, method: str, *args):
        return getattr(self.target, method)(*args)

    cast = call


def local_service(spec: ServeSpec):
    """The service in this process, counting its own requests."""
    return Replica(spec, _InProcess()).service


def ray_replica(spec: ServeSpec, metrics_namespace: str) -> Replica:
    """One Ray Serve replica (`distributed.serving` builds it on the replica's worker)."""
    from graphrag_ray.distributed.serving import Shared
    from graphrag_ray.serve.metrics import ServiceMetrics

    return Replica(spec, Shared(METRICS_ACTOR, metrics_namespace, ServiceMetrics))


def application(spec: ServeSpec, metrics_namespace: str):
    from graphrag_ray.distributed.serving import deployment

    settings = spec.settings
    return deployment(ray_replica, (spec, metrics_namespace), replicas=settings.replicas,
                      min_replicas=settings.min_replicas, max_replicas=settings.max_replicas,
                      replica_cpus=settings.replica_cpus,
                      concurrent_requests=settings.max_concurrent_requests)


def app_builder(args: dict):
    """`serve run graphrag_ray.serve.runner:app_builder index_url=s3://...`, or a Serve
    config file's `import_path` with `args` (cluster/serve.yaml): index_url, config_path,
    overrides, version, metrics_namespace, without_keys, and any `serve` setting."""
    from graphrag_ray.serve.http_api import API_KEYS_VARIABLE

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
    return application(spec, args.get("metrics_namespace", "graphrag-serve"))


def _run_on_ray(spec: ServeSpec, host: str, announce) -> None:
    """Serve on the attached cluster (or a local instance) until SIGINT/SIGTERM."""
    import uuid

    from graphrag_ray.config import RuntimeConfig
    from graphrag_ray.distributed import ensure_ray
    from graphrag_ray.distributed.serving import ReplicasFailed, remove_shared, run_until_stopped

    ensure_ray(RuntimeConfig(ray_address=os.environ.get("RAY_ADDRESS")))
    namespace = f"graphrag-serve-{uuid.uuid4().hex[:8]}"
    has_keys = bool(limits_of(spec.settings).api_keys)
    try:
        run_until_stopped(application(spec, namespace), APP_NAME, host, spec.settings.port,
                          on_ready=lambda: announce(host, spec.settings.port, None, has_keys),
                          on_stop=lambda: remove_shared(METRICS_ACTOR, namespace))
    except ReplicasFailed as exc:
        raise GraphRagError(f"the service's replicas did not start: {exc} (Ray Serve's "
                            "replica logs: the Ray session's logs/serve/)") from None


def serve_blocking(spec: ServeSpec, engine: str, announce) -> None:
    """Serve until interrupted: `engine` "local" (uvicorn here) or "ray" (Ray Serve)."""
    try:
        import fastapi  # noqa: F401
        import uvicorn
        if engine == "ray":
            import graphrag_ray.distributed.serving  # noqa: F401  (Ray Serve, or ImportError)
    except ImportError:
        raise GraphRagError("serving needs Ray Serve and FastAPI: pip install "
                            "'graphrag-ray[serve]' (from a checkout: pip install -e '.[serve]')"
                            ) from None
    from graphrag_ray.storage import IndexStore

    # A wrong URL or version is told here, in one line, before any replica starts.
    IndexStore(spec.index_url).open(spec.version).read_manifest()
    settings = spec.settings
    has_keys = bool(limits_of(settings).api_keys)
    host = bound_host(settings.host, has_keys)
    if engine == "ray":
        _run_on_ray(spec, host, announce)
        return
    from graphrag_ray.serve.http_api import make_app

    service = local_service(spec)
    try:
        announce(host, settings.port, service.live.version, has_keys)
        uvicorn.run(make_app(service), host=host, port=settings.port, log_level="warning")
    finally:
        service.close()
