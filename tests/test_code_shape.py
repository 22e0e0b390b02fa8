"""The package's functions are short enough to read at once: none over 80 lines (a longer one
is several jobs; split it into functions, or an object whose methods each do one)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "graphrag_ray"
MOST_LINES = 80


def long_functions(root: Path = PACKAGE, most: int = MOST_LINES) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > most:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} "
                                 f"{node.name} ({lines} lines)")
    return found


def test_no_function_is_longer_than_a_screen():
    assert long_functions() == []


def test_a_long_function_is_found(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MOST_LINES))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n", encoding="utf-8")
    (tmp_path / "short.py").write_text("def short():\n    return 1\n", encoding="utf-8")
    assert [f.split(" ", 1)[1] for f in long_functions(tmp_path)] == [
        f"long ({MOST_LINES + 1} lines)"]
