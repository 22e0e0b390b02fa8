"""A served index for the tests: the HTTP application under uvicorn in a thread of the test
process, on a port picked free, stopped at the end (no subprocess, no Ray)."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest
from conftest import carol_input, free_port


@contextlib.contextmanager
def running(app, lifespan: str = "off"):
    """`app` under uvicorn in a thread of this process, on a port picked free; yields its
    base URL and stops it at the end."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def serving(service):
    from graphrag_ray.serve.http_api import make_app

    try:
        with running(make_app(service)) as url:
            yield url
    finally:
        service.close()


@pytest.fixture(autouse=True)
def no_serve_keys(monkeypatch):
    """A developer's own service keys never reach a test."""
    monkeypatch.delenv("GRAPHRAG_SERVE_API_KEYS", raising=False)


def publish_again(index: Path, chars: int, folder: Path) -> str:
    """A new version of `index` built offline from the first `chars` characters of Carol
    (another corpus than the first build's, so its answers differ); returns its id."""
    from graphrag_ray.config import load_config
    from graphrag_ray.index.build import build_index

    manifest = build_index(str(carol_input(folder, chars)), str(index),
                           load_config(None, ["runtime.engine=local"]), progress=lambda _: None)
    return manifest.version
