"""The formulas and mechanisms a notebook teaches, read from its own code cells.

The series writes them in the notebook that derives them (d2l's way); the tests here
find each ``def NAME`` / ``class NAME`` in a code cell and run the cell's definitions
(imports, functions and classes only, nothing else) so their values can be checked.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def notebook(number: str) -> Path:
    return next(NOTEBOOKS.glob(f"{number}_*.ipynb"))


def parse_cell(cell: dict[str, Any]) -> ast.Module:
    """A code cell's source, parsed (IPython magics and shell lines left out)."""
    source = "".join(cell["source"])
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


def code_cells(number: str) -> list[ast.Module]:
    """The notebook's code cells, parsed."""
    cells = json.loads(notebook(number).read_text(encoding="utf-8"))["cells"]
    return [parse_cell(cell) for cell in cells if cell["cell_type"] == "code"]


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
