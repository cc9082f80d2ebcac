"""Student copies of the notebooks, without solutions: ``make student``.

The stored notebooks show every exercise's solution right under it, executed, with
its answer. For a class, ``python -m tools.student --output build/student`` writes a
copy of each notebook in which:

* every solution cell is gone: a code cell tagged ``solution`` (the convention is a
  first line ``# Solution N``) becomes an empty cell that says which exercise it is for,
  with no output; a markdown cell tagged ``solution`` is removed;
* the Colab/Kaggle badges cell is removed (its links open the full notebook, solutions
  included); the setup cell stays, so the copy still runs on Colab and Kaggle;
* everything else (the lesson, its outputs, the exercises' statements) is unchanged.

Then it checks the copies and exits 1 if anything leaked: a cell still tagged or
headed as a solution, a solution's source, or any output that a solution cell produced
in the original. A code cell headed ``# Solution`` but not tagged counts as a leak too,
so an untagged solution fails loudly instead of reaching students
(``python -m tools.notebook_setup --tag-solutions`` tags them).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.cells import (
    BADGES_ID,
    SOLUTION_LINE,
    add_notebooks_argument,
    cell_source,
    chosen_notebooks,
    first_line,
    is_solution,
)

ROOT = Path(__file__).resolve().parent.parent


def placeholder(cell: dict[str, Any]) -> dict[str, Any]:
    """The empty code cell that takes a solution's place."""
    match = SOLUTION_LINE.match(first_line(cell))
    number = match["number"] if match and match["number"] else ""
    text = f"# Exercise {number}: your solution" if number else "# Your solution"
    return {"cell_type": "code", "execution_count": None, "id": cell.get("id", "solution"),
            "metadata": {}, "outputs": [], "source": text}


def student_copy(nb: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``nb`` (a notebook as JSON) with its solutions and badges removed."""
    out = copy.deepcopy(nb)
    cells = []
    for cell in out.get("cells", []):
        if cell.get("id") == BADGES_ID:
            continue
        if is_solution(cell):
            if cell.get("cell_type") == "code":
                cells.append(placeholder(cell))
            continue
        cells.append(cell)
    out["cells"] = cells
    return out


def _output_fingerprints(cell: dict[str, Any]) -> list[str]:
    """Each output of a cell as comparable text (streams, results, images, errors)."""
    found = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            text = output.get("text", "")
            found.append("".join(text) if isinstance(text, list) else text)
        elif kind in ("execute_result", "display_data"):
            found += [json.dumps(v, sort_keys=True) for v in output.get("data", {}).values()]
        elif kind == "error":
            found.append(f"{output.get('ename')}: {output.get('evalue')}")
    return [f for f in found if f.strip()]


def leaks(original: dict[str, Any], student: dict[str, Any]) -> list[str]:
    """What of ``original``'s solutions is still in ``student``; empty when nothing is.

    An output counts as a solution's when a solution cell of the original shows it and
    no other cell of the original does (a lesson cell may print the same line).
    """
    cells = original.get("cells", [])
    solutions = [c for c in cells if is_solution(c)]
    sources = {cell_source(c).strip() for c in solutions if cell_source(c).strip()}
    lesson = {f for c in cells if not is_solution(c) for f in _output_fingerprints(c)}
    outputs = {f for c in solutions for f in _output_fingerprints(c)} - lesson
    found = []
    for index, cell in enumerate(student.get("cells", []), start=1):
        if is_solution(cell):
            found.append(f"cell {index} is a solution cell ({first_line(cell)[:40]!r})")
        if cell_source(cell).strip() in sources:
            found.append(f"cell {index} holds a solution's source")
        if any(f in outputs for f in _output_fingerprints(cell)):
            found.append(f"cell {index} shows a solution's output")
    return found


def write_copies(notebooks: Sequence[Path], output: Path) -> dict[str, list[str]]:
    """Write the student copies into ``output``; return the leaks found, by file name."""
    import nbformat  # noqa: PLC0415  (writes the files the way Jupyter does)

    output.mkdir(parents=True, exist_ok=True)
    problems: dict[str, list[str]] = {}
    for path in notebooks:
        original = json.loads(path.read_text())
        student = student_copy(original)
        target = output / path.name
        nbformat.write(nbformat.from_dict(student), target)
        found = leaks(original, json.loads(target.read_text()))
        if found:
            problems[path.name] = found
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.student",
                                     description=__doc__.splitlines()[0])
    add_notebooks_argument(parser, "copy")
    parser.add_argument("--output", type=Path, default=ROOT / "build" / "student",
                        help="folder for the copies (default: build/student)")
    args = parser.parse_args(argv)
    notebooks = chosen_notebooks(parser, args.notebooks)
    if args.output.resolve() in {p.parent.resolve() for p in notebooks}:
        parser.error("--output must not be the notebooks' own folder (the copies would "
                     "overwrite the originals)")
    problems = write_copies(notebooks, args.output)
    for name, found in problems.items():
        print(f"{name}: {'; '.join(found)}", file=sys.stderr)
    if problems:
        print(f"solutions leaked into {len(problems)} student copy(ies) in {args.output}",
              file=sys.stderr)
        return 1
    print(f"{len(notebooks)} student copies written to {args.output}, no solution left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
