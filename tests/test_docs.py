"""Docs that cannot rot: the generated references are what the code says, every
configuration key says what it is for, the site builds with `--strict` (broken links and
references fail it), every `graphrag-ray` command the docs name exists, and the README's
offline quick start runs as written."""

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from graphrag_ray.cli import build_parser
from graphrag_ray.config import GraphRagConfig

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _reference_script():
    spec = importlib.util.spec_from_file_location("docs_reference",
                                                  REPO / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_pages_are_what_the_code_says():
    script = _reference_script()
    for name, text in script.pages().items():
        assert script.PAGES[name].read_text(encoding="utf-8") == text, \
            f"{script.PAGES[name]} is stale: run python scripts/docs_reference.py"


def test_every_configuration_key_has_a_description():
    rows = _reference_script().described_fields(GraphRagConfig)
    assert len(rows) > 200
    assert [key for key, _, _, text in rows if not text] == []


def test_every_command_the_docs_name_exists():
    commands = set(next(a for a in build_parser()._actions
                        if a.__class__.__name__ == "_SubParsersAction").choices)
    named = {(path.name, word) for path in DOC_FILES
             for word in re.findall(r"graphrag-ray ([a-z][a-z-]+)",
                                    path.read_text(encoding="utf-8"))}
    assert named and {(page, word) for page, word in named if word not in commands} == set()


def _bash_block(text: str, heading: str) -> list[str]:
    """The lines of the first bash block under `heading`."""
    section = text[text.index(heading):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


@pytest.mark.slow  # builds an index in subprocesses
def test_the_readme_offline_quick_start_runs_as_written(tmp_path):
    lines = _bash_block((REPO / "README.md").read_text(encoding="utf-8"),
                        "## Quick start, offline")
    guide = _bash_block((REPO / "docs" / "getting-started.md").read_text(encoding="utf-8"),
                        "## Offline")
    assert lines == guide and len(lines) == 2
    (tmp_path / "tests").symlink_to(REPO / "tests")
    for line in lines:
        words = shlex.split(line)
        assert words[0] == "graphrag-ray"
        done = subprocess.run([sys.executable, "-m", "graphrag_ray", *words[1:]],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    assert "theme" in done.stdout.lower() or len(done.stdout) > 200, done.stdout


@pytest.mark.slow  # runs mkdocs in a subprocess
def test_the_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="the docs extra (pip install -e '.[docs]')")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                           str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={**__import__("os").environ,
                                            "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "configuration" / "index.html").exists()
