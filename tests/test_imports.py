"""The package's import graph has no circle: a module that imports another is never imported
back by it, directly or through others (imports inside functions included, as they tie the
modules as much). A circle is where a module's job has been split wrongly; break it by moving
the shared part down (see docs/architecture.md)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "graphrag_ray"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (`from a import b` is a.b when b is a
    module, else a)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                    + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_sees_the_package():
    graph = import_graph()
    assert "graphrag_ray.index.build" in graph["graphrag_ray.index.update"]
    assert "graphrag_ray.llm.client" in graph["graphrag_ray.llm.embeddings"]


def test_no_module_imports_itself_back():
    assert circles(import_graph()) == []


def test_a_circle_is_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The layers, bottom first (docs/architecture.md draws them): a module imports from its own layer
# and the ones below, never from above. A package not listed here fails the test until it
# is given its place.
LAYERS = [
    ["errors", "stopping"],
    ["config", "schema", "tokens", "terms", "sentences", "resources", "progress",
     "tokenizers", "grouped", "arrow_rows", "plugins", "processes", "languages"],
    ["storage", "prompts_loader"],
    ["llm", "input"],
    ["distributed"],
    ["index"],
    ["query"],
    ["api", "explore"],
    ["eval", "serve", "tune", "retrievers"],
    ["cli", "__main__", ""],  # "": the package's own __init__ (the public names)
]
LAYER_OF = {package: number for number, packages in enumerate(LAYERS) for package in packages}


def _package(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def test_every_package_has_a_layer():
    assert {_package(m) for m in import_graph()} - set(LAYER_OF) == set()


def test_no_import_reaches_up_a_layer():
    upward = sorted((a, b) for a, targets in import_graph().items() for b in targets
                    if LAYER_OF[_package(b)] > LAYER_OF[_package(a)])
    assert upward == []


def test_only_the_ray_layer_imports_ray():
    """`distributed/` is the Ray layer: everything else runs the same on the local engine
    without knowing Ray."""
    importers = set()
    for name, path in _modules().items():
        if name.startswith("graphrag_ray.distributed"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(n == "ray" or n.startswith("ray.") for n in names):
                importers.add(name)
    assert importers == set()


def _room(module: str) -> str | None:
    """A module's room inside `index/`: its folder, or itself for a module at the top."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 and parts[1] == "index" else None


def test_no_folder_inside_index_imports_itself_back():
    """The pipeline's folders (chunks, extract, graph, resolve, reports, write, embed, adopt)
    and index/'s own modules stand in one order: none imports a folder that imports it."""
    rooms: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        room = _room(module)
        if room is not None:
            rooms.setdefault(room, set()).update(
                r for r in map(_room, targets) if r is not None and r != room)
    assert circles(rooms) == []
