"""Show the lines of a helper or a worker program that a lesson is about, in the notebook.

A lesson must never hide the call it teaches inside ``helpers``. When the call lives in
a program that runs in another process (a worker) or in a helper that several notebooks
share, the notebook prints those lines instead, read from the file itself so they can
never drift from what runs: a whole function (without its docstring, which the notebook's
text replaces), or the lines of a module between two markers.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from types import ModuleType
from typing import Any


def _without_docstring(source: str) -> str:
    """``source`` (one function or class) with its docstring removed."""
    tree = ast.parse(source)
    node = tree.body[0] if tree.body else None
    body = getattr(node, "body", None)
    if not body or not isinstance(body[0], ast.Expr) or not isinstance(
            getattr(body[0], "value", None), ast.Constant) or not isinstance(
            body[0].value.value, str):
        return source
    lines = source.splitlines(keepends=True)
    first, last = body[0].lineno - 1, body[0].end_lineno
    return "".join(lines[:first] + lines[last:])


def source_of(obj: Any, start: str | None = None, end: str | None = None,
              docstring: bool = False) -> str:
    """The source of a function, class or module, optionally cut to a part.

    ``start`` and ``end`` are texts: the part begins at the first line containing
    ``start`` and ends after the first later line containing ``end``. Without them a
    function or class is shown whole, without its docstring unless ``docstring=True``.
    """
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)
            or isinstance(obj, ModuleType)):
        raise ValueError(f"source_of shows a function, class or module, not {obj!r}")
    text = textwrap.dedent(inspect.getsource(obj))
    if start is None and end is None:
        return text if docstring or isinstance(obj, ModuleType) else _without_docstring(text)
    lines = text.splitlines(keepends=True)
    first = 0
    if start is not None:
        found = [i for i, line in enumerate(lines) if start in line]
        if not found:
            raise ValueError(f"no line of {getattr(obj, '__name__', obj)} contains {start!r}")
        first = found[0]
    last = len(lines)
    if end is not None:
        found = [i for i, line in enumerate(lines[first:], first) if end in line]
        if not found:
            raise ValueError(f"no line after {start!r} contains {end!r}")
        last = found[0] + 1
    return textwrap.dedent("".join(lines[first:last]))


def show_source(obj: Any, start: str | None = None, end: str | None = None,
                docstring: bool = False) -> None:
    """Print :func:`source_of` ``obj`` (see there), as the lines a reader should look at."""
    print(source_of(obj, start, end, docstring).rstrip("\n"))
