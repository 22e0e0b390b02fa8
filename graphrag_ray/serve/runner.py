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


def local_service(spec: ServeSpec):
    """The service in this process, counting its own requests."""
    from graphrag_ray.serve.http_api import Metrics, Service
    from graphrag_ray.serve.metrics import ServeMetrics, render

    counts = ServeMetrics()
    live = open_live(spec)

    def text(version):
        snapshot = counts.snapshot()
        snapshot["switches"] = live.switches
        return render(snapshot, version, replicas=1)

    return Service(live, limits_of(spec.settings), Metrics(counts.record, text))


def serve_blocking(spec: ServeSpec, engine: str, announce) -> None:
    """Serve until interrupted: `engine` "local" (uvicorn here) or "ray" (Ray Serve)."""
    try:
        import fastapi  # noqa: F401
        import uvicorn
        if engine == "ray":
            import ray.serve  # noqa: F401
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
        from graphrag_ray.serve.ray_serve import run_on_ray

        run_on_ray(spec, host, announce)
        return
    from graphrag_ray.serve.http_api import make_app

    service = local_service(spec)
    try:
        announce(host, settings.port, service.live.version, has_keys)
        uvicorn.run(make_app(service), host=host, port=settings.port, log_level="warning")
    finally:
        service.close()
