"""What ships: every package folder is in the wheel (a `pip install .` lacked lazy search,
prompt-tune and adopt: listed nowhere), and nothing of the test kit is in it or imported by
it."""

import ast
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "graphrag_ray"


def _listed() -> set[str]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(setuptools["packages"])


def test_every_folder_with_modules_is_a_package_in_the_wheel():
    folders = {".".join(path.parent.relative_to(ROOT).parts)
               for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}
    assert folders - _listed() == set()
    for folder in folders:
        assert (ROOT / folder.replace(".", "/") / "__init__.py").is_file(), folder


def test_the_package_neither_ships_nor_imports_the_test_kit():
    assert not any("testkit" in name or name.endswith(".testing") for name in _listed())
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.startswith("graphrag_testkit") for n in names), path
