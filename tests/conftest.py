"""Shared fixtures: one local Ray instance per session, the project's test LLM server."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_ray.config import GraphRagConfig, load_config
from graphrag_ray.testing.llm_server import run_test_server

DATA = Path(__file__).parent / "data"
CAROL_DIR = DATA / "christmas_carol"
SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def ray_session():
    import ray

    from graphrag_ray.config import RuntimeConfig
    from graphrag_ray.distributed import ensure_ray

    # Workers import test-defined worker classes from tests/ too.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    ensure_ray(RuntimeConfig())
    yield ray
    ray.shutdown()


@pytest.fixture
def llm_server():
    with run_test_server() as server:
        yield server


def llm_config(server, *overrides: str) -> GraphRagConfig:
    return load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                              "llm.model=test-model", "llm.max_retries=3", *overrides])


@pytest.fixture
def carol_excerpt(tmp_path: Path) -> Path:
    """The first ~12k tokens of A Christmas Carol: big enough for a real graph, fast to index."""
    text = (CAROL_DIR / "book.txt").read_text(encoding="utf-8")
    start = text.find("STAVE ONE")
    folder = tmp_path / "carol"
    folder.mkdir()
    (folder / "carol.txt").write_text(text[start:start + 50_000], encoding="utf-8")
    return folder
