"""The formulas and mechanisms a notebook teaches, read from its own code cells.

The series writes them in the notebook that derives them (d2l's way); the tests here
find each ``def NAME`` / ``class NAME`` in a code cell and run the cell's definitions
(imports, functions and classes only, nothing else) so their values can be checked.
"""

from __future__ import annotations

import ast
import json
import symtable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def notebook(number: str) -> Path:
    return next(NOTEBOOKS.glob(f"{number}_*.ipynb"))


def cell_source(cell: dict[str, Any]) -> str:
    """A code cell's Python: its source without IPython magics and shell lines."""
    return "\n".join(line for line in "".join(cell["source"]).splitlines()
                     if not line.lstrip().startswith(("%", "!")))


def parse_cell(cell: dict[str, Any]) -> ast.Module:
    """A code cell's source, parsed (IPython magics and shell lines left out)."""
    return ast.parse(cell_source(cell))


def code_sources(number: str) -> list[str]:
    """The Python of the notebook's code cells, in order."""
    cells = json.loads(notebook(number).read_text(encoding="utf-8"))["cells"]
    return [cell_source(cell) for cell in cells if cell["cell_type"] == "code"]


def code_cells(number: str) -> list[ast.Module]:
    """The notebook's code cells, parsed."""
    return [ast.parse(source) for source in code_sources(number)]


def defined_in_cells(number: str) -> set[str]:
    """Names a code cell of the notebook defines at its top level with def or class."""
    return {node.name for tree in code_cells(number) for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)}


def lesson(number: str, *names: str, **context: Any) -> SimpleNamespace:
    """Every top-level definition of the notebook's code cells, run in one namespace; with
    ``names``, only the definitions so named, without the cells' imports.

    ``context`` supplies what the definitions use from the notebook's other cells.
    """
    namespace: dict[str, Any] = dict(context)
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    for tree in code_cells(number):
        body = [node for node in tree.body if isinstance(node, kinds) and not (
            isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers"))
            and (not names or getattr(node, "name", None) in names)]
        if any(isinstance(node, ast.FunctionDef | ast.ClassDef) for node in body):
            exec(compile(ast.Module(body, []), str(notebook(number)), "exec"), namespace)  # noqa: S102
    return SimpleNamespace(**namespace)





def _defines(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds: imports, def, class, and plain assignments to
    names (``a, b = ...``; not ``d[k] = ...``, which changes ``d``)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        flat = [e for t in targets
                for e in (t.elts if isinstance(t, ast.Tuple | ast.List) else [t])]
        return {t.id for t in flat if isinstance(t, ast.Name)}
    return set()


#: The methods of list, dict and set that change the container in place.
MUTATORS = {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "sort",
            "reverse", "update", "setdefault", "add", "discard"}


def _changes(node: ast.stmt) -> set[str]:
    """Names a statement (not a def or class) binds or changes anywhere in it: loop and
    ``with`` targets, ``+=``, ``d[k] = v``, ``x.attr = v``, ``ops.append(...)``."""
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return set()
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            found.add(n.id)
        stored = isinstance(n, ast.Subscript | ast.Attribute) and not isinstance(n.ctx, ast.Load)
        called = (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr in MUTATORS)
        base = n.value if stored else n.func.value if called else None
        if isinstance(base, ast.Name):
            found.add(base.id)
    return found


def _uses(source: str) -> set[str]:
    """The global names ``source`` reads: at its top level, and inside its functions the
    names that are neither their own locals nor an enclosing function's."""
    def walk(table: symtable.SymbolTable, top: bool) -> set[str]:
        names = {s.get_name() for s in table.get_symbols()
                 if s.is_referenced() and (top or s.is_global())}
        return names.union(*(walk(child, False) for child in table.get_children()))

    return walk(symtable.symtable(source, "cell", "exec"), True)


def _segment(source: str, node: ast.stmt) -> str:
    """A top-level statement's own source, with its decorators."""
    return "".join(f"@{ast.get_source_segment(source, d)}\n"
                   for d in getattr(node, "decorator_list", [])
                   ) + ast.get_source_segment(source, node)


def cell_with_context(number: str, marker: str) -> str:
    """The first code cell containing ``marker``, after the earlier definitions it needs,
    followed name by name (each name's last binding before it), in cell order: what that
    cell runs on without the rest of the notebook.

    Only imports, functions, classes and assignments computed without a call may be needed,
    and none of them changed later: ValueError names a statement that breaks this (a cell
    that needs a measurement must run after the notebook's own cells, not here)."""
    sources = code_sources(number)
    target = next(i for i, s in enumerate(sources) if marker in s)
    earlier = [(_segment(s, node), node) for s in sources[:target] for node in ast.parse(s).body]
    own = set().union(*map(_defines, ast.parse(sources[target]).body))
    wanted, chosen = _uses(sources[target]) - own, set()
    while found := {i for i, (_, node) in enumerate(earlier) if i not in chosen
                    and any(name in _defines(node) and not any(
                        name in _defines(later) for _, later in earlier[i + 1:])
                        for name in wanted)}:
        chosen |= found
        wanted |= set().union(*(_uses(earlier[i][0]) for i in found))
    data = set()  # names bound by the chosen assignments
    for i in sorted(chosen):
        text, node = earlier[i]
        if isinstance(node, ast.Assign | ast.AnnAssign):
            if any(isinstance(n, ast.Call) for n in ast.walk(node)):
                raise ValueError(f"notebook {number}'s {marker!r} cell needs `{text}`, "
                                 "computed with a call: a measurement, not a definition")
            data |= _defines(node)
    for i, (text, node) in enumerate(earlier):
        if i not in chosen and _changes(node) & data:
            raise ValueError(f"notebook {number}'s {marker!r} cell needs "
                             f"{sorted(_changes(node) & data)}, which `{text}` changes")
    return "\n\n".join([*(earlier[i][0] for i in sorted(chosen)), sources[target]])
