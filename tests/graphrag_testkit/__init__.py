"""The test kit: the test LLM server, the fake Batch API, local clusters, corpora and labels.
It lives with the tests, not in the package: `tests/` on `sys.path` imports it (pytest puts
it there; scripts add it), and a child process gets it through `kit_env`."""

import os
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent


def kit_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with the tests folder first on PYTHONPATH, for a
    child process that runs a kit module (`python -m graphrag_testkit...`)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS_DIR), env.get("PYTHONPATH")]))
    return env
