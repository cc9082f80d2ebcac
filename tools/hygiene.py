"""Keep stored notebooks free of what changes from run to run: ``python -m tools.hygiene``.

A stored notebook is read on GitHub and diffed in review. Execution timestamps, the
Python patch version, papermill's run records, saved widget state or a widget's model id
change on every run without changing what a reader sees, and they bury the one line that
did change (a one-line edit of notebook 04 once showed as 216 changed lines of timestamps).

``python -m tools.hygiene`` checks ``notebooks/NN_*.ipynb`` (or the files named) and
exits 1 naming each volatile field; ``--fix`` removes them in place without touching
sources or outputs. :mod:`tools.execute` strips the same fields when it stores an
executed notebook, and the unit tests and the pre-commit hook run the check.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from tools.cells import add_notebooks_argument, chosen_notebooks

#: Cell metadata written by a run: nbclient's timestamps, the ExecuteTime extension's,
#: papermill's per-cell record, the classic notebook's trust flag.
VOLATILE_CELL_KEYS = ("execution", "ExecuteTime", "papermill", "trusted")
#: Notebook metadata written by a run: papermill's record and saved widget state.
VOLATILE_NOTEBOOK_KEYS = ("papermill", "widgets")
#: A displayed widget's output: a model id drawn afresh each run, and nothing a page without
#: a kernel can show (calculators draw their figure as a plain output beside it).
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The kernel every stored notebook names (an environment's own display name is local).
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


def is_widget_view(output: dict[str, Any]) -> bool:
    return WIDGET_VIEW in output.get("data", {})


def volatile_fields(nb: dict[str, Any]) -> list[str]:
    """Where ``nb`` (a notebook as JSON) holds run-to-run data, as readable locations."""
    found = [f"metadata.{key}" for key in VOLATILE_NOTEBOOK_KEYS if key in nb.get("metadata", {})]
    if "version" in nb.get("metadata", {}).get("language_info", {}):
        found.append("metadata.language_info.version")
    spec = nb.get("metadata", {}).get("kernelspec")
    if spec is not None and dict(spec) != KERNELSPEC:
        found.append(f"metadata.kernelspec ({spec.get('display_name')!r})")
    for index, cell in enumerate(nb.get("cells", [])):
        keys = [k for k in VOLATILE_CELL_KEYS if k in cell.get("metadata", {})]
        if keys:
            found.append(f"cell {index + 1} metadata: {', '.join(keys)}")
        if any(map(is_widget_view, cell.get("outputs", []))):
            found.append(f"cell {index + 1} output: a widget view")
    return found


def strip_volatile(nb: dict[str, Any]) -> None:
    """Remove, in place, everything :func:`volatile_fields` reports."""
    metadata = nb.setdefault("metadata", {})
    for key in VOLATILE_NOTEBOOK_KEYS:
        metadata.pop(key, None)
    if "language_info" in metadata:
        metadata["language_info"].pop("version", None)
    metadata["kernelspec"] = dict(KERNELSPEC)
    for cell in nb.get("cells", []):
        for key in VOLATILE_CELL_KEYS:
            cell.get("metadata", {}).pop(key, None)
        if "outputs" in cell:
            cell["outputs"] = [o for o in cell["outputs"] if not is_widget_view(o)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.hygiene",
                                     description=__doc__.splitlines()[0])
    add_notebooks_argument(parser, "check")
    parser.add_argument("--fix", action="store_true",
                        help="remove the volatile fields in place (sources and outputs stay)")
    args = parser.parse_args(argv)
    dirty = 0
    for path in chosen_notebooks(parser, args.notebooks):
        text = path.read_text()
        nb = json.loads(text)
        found = volatile_fields(nb)
        if not found:
            continue
        dirty += 1
        if args.fix:
            import nbformat  # noqa: PLC0415  (writes the file the way Jupyter does)

            strip_volatile(nb)
            nbformat.write(nbformat.from_dict(nb), path)
            print(f"{path.name}: removed {len(found)} volatile field(s)")
        else:
            shown = "; ".join(found[:4]) + (f"; and {len(found) - 4} more" if len(found) > 4
                                           else "")
            print(f"{path.name}: {shown}")
    if dirty and not args.fix:
        print(f"{dirty} notebook(s) hold volatile metadata: run `python -m tools.hygiene --fix`",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
