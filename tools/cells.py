"""The series' notebooks, and how the maintainers' tools recognise their cells.

The conventions the notebook authors follow, in one place: a solution is a code cell
whose first line is ``# Solution N`` and whose tags include ``solution``; the badges
and setup cells written by :mod:`tools.notebook_setup` have the ids ``badges`` and
``setup``. Cells here are plain notebook JSON (dicts), as read from an ``.ipynb`` file.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SOLUTION_TAG = "solution"
SOLUTION_LINE = re.compile(r"^#\s*Solution\b\s*(?P<number>[\w.]*)")
BADGES_ID = "badges"
SETUP_ID = "setup"


def cell_source(cell: dict[str, Any]) -> str:
    """A cell's text (files store it as a list of lines or as one string)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def first_line(cell: dict[str, Any]) -> str:
    """The cell's first non-blank line, '' for an empty cell."""
    lines = cell_source(cell).lstrip().splitlines()
    return lines[0] if lines else ""


def headed_as_solution(cell: dict[str, Any]) -> bool:
    """A code cell whose first line is ``# Solution ...``."""
    return cell.get("cell_type") == "code" and bool(SOLUTION_LINE.match(first_line(cell)))


def is_solution(cell: dict[str, Any]) -> bool:
    """Tagged ``solution``, or headed as one."""
    return SOLUTION_TAG in cell.get("metadata", {}).get("tags", []) or headed_as_solution(cell)


def stored_notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    """The series' notebooks, ``notebooks/NN_name.ipynb``, in order."""
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def add_notebooks_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """The positional ``notebooks`` argument every notebook tool takes."""
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help=f"notebooks to {what} (default: notebooks/NN_*.ipynb)")


def chosen_notebooks(parser: argparse.ArgumentParser, paths: Sequence[Path]) -> list[Path]:
    """The notebooks named, else the series' own; a usage error for a missing file."""
    notebooks = list(paths) or stored_notebooks()
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing or not notebooks:
        parser.error(f"no such notebook: {', '.join(missing) or 'notebooks/NN_*.ipynb'}")
    return notebooks
