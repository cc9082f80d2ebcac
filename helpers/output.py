"""What a notebook shows and keeps: tables, the source lines a lesson is about, figures, and
its numbers saved as JSON.

:class:`Table` renders as HTML in Jupyter and as aligned text under nbval. :func:`show_source`
prints the lines of a worker program or a shared helper that a lesson teaches, read from the
file itself so they never drift from what runs. :func:`save_results` writes a notebook's
numbers with the machine that produced them, for ``make run``'s report."""

from __future__ import annotations

import ast
import html
import inspect
import json
import os
import re
import textwrap
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from helpers.machine import describe_machine

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure

# -- A small table that prints the same text everywhere and renders as HTML in Jupyter.
def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


class Table:
    def __init__(self, columns: Sequence[str], rows: Iterable[Sequence[Any]] = ()) -> None:
        self.columns = list(columns)
        self.rows: list[list[Any]] = []
        for row in rows:
            self.append(row)

    def append(self, row: Sequence[Any]) -> None:
        if len(row) != len(self.columns):
            raise ValueError(f"row has {len(row)} values but the table has {len(self.columns)} "
                             f"columns ({', '.join(self.columns)})")
        self.rows.append(list(row))

    def column(self, name: str) -> list[Any]:
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        cells = [self.columns] + [[_cell(v) for v in row] for row in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        lines = ["  ".join(map(str.ljust, r, widths)).rstrip() for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row)
                       + "</tr>" for row in self.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# -- Show the lines a lesson is about, from the running code itself.
def source_of(obj: Any, start: str | None = None, end: str | None = None) -> str:
    """The source of a function, class or module (a function or class without its docstring: the
    notebook's text replaces it), or from the first line with ``start`` to the next with ``end``."""
    text = textwrap.dedent(inspect.getsource(obj))
    lines = text.splitlines(keepends=True)
    if start is None and end is None:
        body = getattr(ast.parse(text).body[0], "body", None)
        if inspect.ismodule(obj) or not body or not isinstance(body[0], ast.Expr) or not (
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            return text
        return "".join(lines[:body[0].lineno - 1] + lines[body[0].end_lineno:])
    first, last = 0, len(lines)
    if start is not None:
        if not (found := [i for i, line in enumerate(lines) if start in line]):
            raise ValueError(f"no line of {getattr(obj, '__name__', obj)} contains {start!r}")
        first = found[0]
    if end is not None:
        if not (found := [i for i, line in enumerate(lines[first:], first) if end in line]):
            raise ValueError(f"no line after {start!r} contains {end!r}")
        last = found[0] + 1
    return textwrap.dedent("".join(lines[first:last]))


def show_source(obj: Any, start: str | None = None, end: str | None = None) -> None:
    print(source_of(obj, start, end).rstrip("\n"))


# -- Save each notebook's measurements as JSON, so runs on different machines can be compared.
def results_dir() -> Path:
    """``$SERIES_RESULTS_DIR``, else ``results/`` at the top of the series' checkout."""
    if os.environ.get("SERIES_RESULTS_DIR"):
        return Path(os.environ["SERIES_RESULTS_DIR"])
    top = Path(__file__).resolve().parent.parent
    return (top if (top / "notebooks").is_dir() else Path.cwd()) / "results"


def _plain(value: Any) -> Any:
    """Make numpy numbers, TimingResults and Tables JSON-friendly."""
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if hasattr(value, "records"):
        return _plain(value.records())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.tolist() if hasattr(value, "tolist") else value


def save_results(name: str, data: dict[str, Any], directory: Path | str | None = None) -> Path:
    """Write ``data`` with machine information to ``<results>/<name>.json``, say so in one line
    (the file's name, never this machine's path), and return the path."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", str(name)):  # a file name, not a path
        raise ValueError(f"a results name uses letters, digits, '.', '_' and '-', not {name!r}")
    folder = Path(directory) if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    record = {"name": name, "saved_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "machine": describe_machine(), "results": _plain(data)}
    path.write_text(json.dumps(record, indent=2))  # unsorted: a headline keeps its order
    print("saved", path.name)
    return path


def save_figure(fig: Figure, name: str, directory: Path | str | None = None) -> Path:
    """Save a figure as PNG beside the notebook's JSON results (for ``make run``'s report)."""
    folder = Path(directory) if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=100)
    return path


# -- Charts the series draws more than once, with labelled axes and units.
def line_speedup(counts: Sequence[int], speedups: Mapping[str, Sequence[float]],
                 title: str = "", xlabel: str = "devices") -> Figure:
    """Speed-up against device/worker count, one line per series, plus the ideal y = x."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, ys in speedups.items():
        ax.plot(counts, ys, marker="o", label=label)
    ax.plot(counts, counts, linestyle="--", color="grey", label="ideal (linear)")
    ax.set(xlabel=xlabel, ylabel="speed-up (x, vs 1)", title=title)
    ax.legend()
    fig.tight_layout()
    return fig


# -- Draw ring all-reduce step by step: which device holds which part of which sum (11).
State = list[list[frozenset[int]]]  # state[device][chunk] = devices summed in that chunk
Contributions = SimpleNamespace(  # the ring's four operations on sets of devices, not tensors
    move=lambda x, src, dst: x, add=lambda a, b, device: a | b,
    split=lambda x, parts: [x] * parts, concat=lambda chunks, device: list(chunks))


def contributions(devices: int) -> list[frozenset[int]]:
    """Device ``i`` starts with a value that contains only its own contribution."""
    return [frozenset({i}) for i in range(devices)]


@dataclass
class RingSnapshots:
    """An ``on_step(label, chunks)`` callback that keeps a copy of every state."""
    steps: list[tuple[str, State]] = field(default_factory=list)

    def __call__(self, label: str, chunks: Sequence[Sequence[Any]]) -> None:
        self.steps.append((label, [list(device) for device in chunks]))


def draw_ring_steps(steps: Sequence[tuple[str, State]], title: str = "") -> Figure:
    """One row per recorded state, one column per device, one box per chunk, labelled with
    the devices it sums (``all`` once it holds every one)."""
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.patches import Rectangle  # noqa: PLC0415

    n, rows = len(steps[0][1]), len(steps)
    fig, ax = plt.subplots(figsize=(1.6 * n + 1.8, 0.55 * rows + 0.9))
    cmap = plt.get_cmap("Blues")
    previous: State | None = None
    for r, (label, state) in enumerate(steps):
        y = rows - 1 - r
        ax.text(-0.2, y + 0.4, label, ha="right", va="center", fontsize=8)
        for d, chunks in enumerate(state):
            for c, chunk in enumerate(chunks):
                x = d * (n + 1) + c
                changed = previous is not None and previous[d][c] != chunk
                ax.add_patch(Rectangle((x, y), 0.92, 0.8, linewidth=2 if changed else 0.5,
                                       facecolor=cmap(0.15 + 0.8 * len(chunk) / n),
                                       edgecolor="red" if changed else "grey"))
                text = "all" if len(chunk) == n else "".join(str(i) for i in sorted(chunk))
                ax.text(x + 0.46, y + 0.4, text, fontsize=6 if n > 4 else 8, ha="center",
                        va="center", color="white" if len(chunk) > n / 2 else "black")
        previous = state
    for d in range(n):
        ax.text(d * (n + 1) + n / 2, rows + 0.1, f"device {d}", ha="center", fontsize=9)
    ax.set(xlim=(-0.3, n * (n + 1)), ylim=(-0.2, rows + 0.6))
    ax.axis("off")
    ax.set_title(title or f"Ring all-reduce on {n} devices: each box is one chunk, labelled with "
                          "the devices\nwhose values it sums (red outline: changed in that step)",
                 fontsize=9)
    fig.tight_layout()
    return fig
