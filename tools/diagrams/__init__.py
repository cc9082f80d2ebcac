"""Concept diagrams of the notebooks: drawn here with matplotlib, stored inside the notebooks.

A diagram explains a mechanism before the code that runs it (placement of ops on devices,
a ring's steps, a pipeline's schedule); it is not a measurement. Each one is a function in
``tools/diagrams/nbNN.py`` registered with :func:`diagram`, which draws on a blank figure.
``python -m tools.diagrams`` renders every diagram to PNG and writes it into its notebook's
markdown cell (id ``diagram-<name>``, tag ``diagram``) as ``![alt text](data:image/png...)``:

* an image inside the markdown renders wherever the notebook opens: JupyterLab, Colab (which
  does not render cell attachments, colabtools#3836), Kaggle, GitHub and the site built
  from the stored notebooks; a relative path to a file would not load in Colab;
* the alt text is the diagram's description, for a screen reader and for a reader whose
  viewer shows no images;
* the PNG is drawn from code, so a diagram is changed by editing its function and running
  this command again. ``--check`` changes nothing and exits 1 when a notebook's image is not
  what its function draws (``tests/test_diagrams.py`` runs it).

To add a diagram: write the function in ``nbNN.py``, put an empty markdown cell with id
``diagram-<name>`` where the diagram belongs (before the code it explains), run the command.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import io
import json
import pkgutil
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
NOTEBOOKS = ROOT / "notebooks"
TAG = "diagram"
SITE_IMAGES = ROOT / "tools" / "site" / "static"  # notebook "site": the website's pictures
IMAGE = re.compile(r"!\[(?P<alt>[^\]]+)\]\(data:image/png;base64,(?P<data>[A-Za-z0-9+/=]+)\)")


@dataclass(frozen=True)
class Diagram:
    name: str          # the cell id is "diagram-" + name
    notebook: str      # "04": the notebook whose cell holds it
    alt: str           # what the picture shows, in words
    draw: Callable     # draw(fig) on a blank matplotlib figure
    size: tuple[float, float] = (8.0, 3.2)  # inches; rendered at 110 dpi


REGISTRY: dict[str, Diagram] = {}


def diagram(name: str, notebook: str, alt: str, size: tuple[float, float] = (8.0, 3.2)):
    """Register ``draw(fig)`` as the diagram ``name`` of ``notebook``."""
    if not re.fullmatch(r"[a-z0-9-]+", name):
        raise ValueError(f"a diagram name uses a-z, 0-9 and '-', not {name!r}")

    def register(draw: Callable) -> Callable:
        if name in REGISTRY:
            raise ValueError(f"two diagrams are named {name!r}")
        REGISTRY[name] = Diagram(name, notebook, " ".join(alt.split()), draw, size)
        return draw
    return register


def load_all() -> dict[str, Diagram]:
    """Import every module of this package (``nbNN``, ``site``), which registers its diagrams."""
    for module in pkgutil.iter_modules(__path__):
        if module.name not in ("draw", "__main__"):
            importlib.import_module(f"{__name__}.{module.name}")
    return REGISTRY


def render(d: Diagram) -> bytes:
    """The diagram as a PNG with a small palette: the same bytes on every run."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from PIL import Image  # noqa: PLC0415  (matplotlib's own dependency)

    with plt.rc_context({"font.family": "DejaVu Sans", "font.size": 10,
                         "svg.hashsalt": "series", "path.simplify": False}):
        fig = plt.figure(figsize=d.size, dpi=110)
        try:
            d.draw(fig)
            raw = io.BytesIO()
            fig.savefig(raw, format="png", dpi=110, facecolor="white",
                        metadata={"Software": None})
        finally:
            plt.close(fig)
    image = Image.open(io.BytesIO(raw.getvalue())).convert("RGB")
    small = io.BytesIO()
    image.quantize(colors=48, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        small, format="png", optimize=True)
    return small.getvalue()


def markdown(d: Diagram, png: bytes) -> str:
    """The cell's source: the image with its alt text, inline."""
    return f"![{d.alt}](data:image/png;base64,{base64.b64encode(png).decode()})"


def notebook_path(number: str) -> Path:
    found = sorted(NOTEBOOKS.glob(f"{number}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"no single notebook numbered {number} in {NOTEBOOKS.name}/")
    return found[0]


def sync(names: Sequence[str] = (), write: bool = True) -> list[str]:
    """Write (or only compare) the diagrams' cells; what was, or would be, changed."""
    found = load_all()
    chosen = [found[n] for n in names] if names else list(found.values())
    problems: list[str] = []
    by_notebook: dict[str, list[Diagram]] = {}
    for d in chosen:
        by_notebook.setdefault(d.notebook, []).append(d)
    for d in by_notebook.pop("site", []):  # the website's own pictures: files, not cells
        target = SITE_IMAGES / f"{d.name}.png"
        png = render(d)
        if not target.exists() or target.read_bytes() != png:
            problems.append(f"{target.relative_to(ROOT)} is not what its function draws")
            if write:
                target.write_bytes(png)
    for number, diagrams in sorted(by_notebook.items()):
        path = notebook_path(number)
        nb = json.loads(path.read_text())
        cells = {c.get("id"): c for c in nb["cells"]}
        changed = False
        for d in diagrams:
            cell = cells.get(f"diagram-{d.name}")
            if cell is None or cell["cell_type"] != "markdown":
                problems.append(f"{path.name}: no markdown cell with id diagram-{d.name}")
                continue
            wanted = markdown(d, render(d))
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "".join(cell["source"]) != wanted or TAG not in tags:
                problems.append(f"{path.name}: diagram-{d.name} is not what its function draws")
                cell["source"] = wanted
                if TAG not in tags:
                    tags.append(TAG)
                changed = True
        if changed and write:
            import nbformat  # noqa: PLC0415

            nbformat.write(nbformat.from_dict(nb), path)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.diagrams",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="diagrams to write (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a notebook's diagram is out of date")
    parser.add_argument("--png", type=Path,
                        help="also save each chosen diagram as NAME.png in this folder, to look at")
    args = parser.parse_args(argv)
    found = load_all()
    unknown = [n for n in args.names if n not in found]
    if unknown:
        parser.error(f"no diagram named {', '.join(unknown)}; known: {', '.join(sorted(found))}")
    if args.png:
        args.png.mkdir(parents=True, exist_ok=True)
        for name in args.names or found:
            (args.png / f"{name}.png").write_bytes(render(found[name]))
    problems = sync(args.names, write=not args.check)
    for p in problems:
        print(p, file=sys.stderr if args.check else sys.stdout)
    if args.check and problems:
        print("run `python -m tools.diagrams` to redraw them", file=sys.stderr)
        return 1
    return 0


