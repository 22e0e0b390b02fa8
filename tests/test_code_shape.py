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


# Whether a model is called is decided where a component is made (a strategy picked once:
# `_LLMSteps if config.uses_llm(...) else _OfflineSteps`); the rest of the code calls the
# pick's methods. A branch on it elsewhere is a second place that knows the difference.
LLM_WORDS = {"uses_llm", "calls_llm", "use_llm", "uses_chat_llm", "lazy_uses_llm"}
MOST_LLM_BRANCHES = 8


def _mentions_llm(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Name) and n.id in LLM_WORDS)
               or (isinstance(n, ast.Attribute) and n.attr in LLM_WORDS)
               for n in ast.walk(node))


def _is_pick(node: ast.IfExp) -> bool:
    """A conditional choosing between two classes (CamelCase names, or calls of them): a
    strategy picked."""
    def named(side: ast.AST) -> bool:
        side = side.func if isinstance(side, ast.Call) else side
        return isinstance(side, (ast.Name, ast.Attribute)) and \
            (side.id if isinstance(side, ast.Name) else side.attr).lstrip("_")[:1].isupper()
    return named(node.body) and named(node.orelse)


def llm_branches(root: Path = PACKAGE) -> tuple[list[str], list[str]]:
    """(branches on whether a model is called, strategy picks), as path:line."""
    branches, picks = [], []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            tests = [(node, node.test)] if isinstance(node, (ast.If, ast.IfExp)) else \
                [(node, t) for t in node.ifs] if isinstance(node, ast.comprehension) else []
            for owner, test in tests:
                if not _mentions_llm(test):
                    continue
                line = f"{where}:{test.lineno}"
                (picks if isinstance(owner, ast.IfExp) and _is_pick(owner)
                 else branches).append(line)
    return branches, picks


def test_whether_a_model_is_called_is_decided_in_few_places():
    branches, picks = llm_branches()
    assert len(branches) <= MOST_LLM_BRANCHES, branches
    assert picks  # (the count sees the package)


def test_a_branch_and_a_pick_are_told_apart(tmp_path):
    (tmp_path / "m.py").write_text(
        "steps = (LLMSteps if config.uses_llm(m) else OfflineSteps)(index)\n"
        "if steps.calls_llm:\n    pass\n"
        "n = 1 if worker.calls_llm else 0\n", encoding="utf-8")
    branches, picks = llm_branches(tmp_path)
    assert [b.rsplit(":", 1)[1] for b in branches] == ["2", "4"] and len(picks) == 1
