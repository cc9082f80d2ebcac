"""How big the helper package is, and how much of it a notebook's imports reach.

``python -m tools.package_size`` prints the package's lines and files, the size of
``helpers.__all__``, any import cycle, and for each notebook the helpers modules its
``from helpers...`` imports reach (imports inside functions included) with their lines.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "helpers"
NOTEBOOKS = ROOT / "notebooks"


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _targets(tree: ast.AST, here: str, known: dict[str, Path]) -> set[str]:
    """The helpers modules that a parsed source imports, at any depth of nesting."""
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # The package uses absolute imports only.
            base = node.module or ""
            # `from helpers import mxnet_gpu` names the module, not the package's face.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                     for alias in node.names]
        # Python runs a package's __init__ before any module inside it; that edge is
        # left out, so a module's imports are the modules it names.
        found |= {name for name in names if name in known and name != here}
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the helpers modules it imports, function-local imports counted."""
    known = modules()
    return {
        name: _targets(ast.parse(path.read_text(encoding="utf-8")), name, known)
        for name, path in known.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as a list of modules (first repeated at the end), or []."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def closure(start: set[str], graph: dict[str, set[str]]) -> set[str]:
    """The modules reachable from ``start``, ``start`` included."""
    seen, todo = set(), list(start)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def face() -> dict[str, str]:
    """Each name ``helpers/__init__`` re-exports -> the module that defines it."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def notebook_imports(notebook: Path, *, through_face: bool = True) -> set[str]:
    """The helpers modules a notebook's code cells import directly.

    With ``through_face=False`` a name imported from ``helpers`` counts as the module
    that defines it, not as the package (whose ``__init__`` imports every module).
    """
    known = modules()
    names = face()
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found: set[str] = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        found |= _targets(tree, "", known)
        if not through_face:
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == "helpers":
                    found |= {
                        names.get(alias.name, f"helpers.{alias.name}") for alias in node.names
                    }
    if not through_face:
        found.discard("helpers")
    return found


def lines_of(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def report() -> str:
    known = modules()
    graph = import_graph()
    import helpers

    out = [
        f"helpers: {sum(lines_of(p) for p in known.values())} lines in {len(known)} .py files",
        f"helpers.__all__: {len(helpers.__all__)} names",
        f"import cycle: {' -> '.join(find_cycle(graph)) or 'none'}",
        "",
        "notebook: modules (lines) its imports reach: through helpers/__init__ | "
        "from the defining modules on, not counting helpers/__init__",
    ]
    lean = {name: targets - {"helpers"} for name, targets in graph.items()}
    lean["helpers"] = set()
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        row = []
        for reached in (
            closure(notebook_imports(notebook), graph),
            closure(notebook_imports(notebook, through_face=False), lean),
        ):
            row.append(f"{len(reached)} ({sum(lines_of(known[name]) for name in reached)})")
        out.append(f"{notebook.stem}: {row[0]} | {row[1]}")
    return "\n".join(out)


if __name__ == "__main__":
    print(report())
