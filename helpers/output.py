"""What a notebook shows and keeps: tables, figures, source lines, and its numbers as JSON.

:class:`Table` renders as HTML in Jupyter and as aligned text under nbval; the charts the
series draws again and again have labelled axes and units (the roofline's model is written
in notebook 12, the ring's steps in notebook 11); :func:`save_results` writes a notebook's
numbers with the machine that produced them, for ``make run``'s report.

A lesson never hides the call it teaches: where that call lives in a worker program or a
shared helper, :func:`show_source` prints its lines, read from the file itself so they
never drift from what runs.
"""

from __future__ import annotations

import ast
import html
import inspect
import json
import os
import re
import textwrap
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure


from helpers.machine import describe_machine

# -- A small table that prints the same text everywhere and renders as HTML in Jupyter.

def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class Table:
    """Rows of values under named columns."""

    def __init__(self, columns: Sequence[str], rows: Iterable[Sequence[Any]] = ()) -> None:
        if not columns:
            raise ValueError("a Table needs at least one column name")
        self.columns = list(columns)
        self.rows: list[list[Any]] = []
        for row in rows:
            self.append(row)

    def append(self, row: Sequence[Any]) -> None:
        if len(row) != len(self.columns):
            raise ValueError(
                f"row has {len(row)} values but the table has {len(self.columns)} columns "
                f"({', '.join(self.columns)})"
            )
        self.rows.append(list(row))

    def column(self, name: str) -> list[Any]:
        """All values of one column, in row order."""
        if name not in self.columns:
            raise KeyError(f"no column {name!r}; columns are {', '.join(self.columns)}")
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def records(self) -> list[dict[str, Any]]:
        """The rows as dictionaries (handy for JSON)."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        cells = [self.columns] + [[_cell(v) for v in row] for row in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
            for row in self.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# -- Save each notebook's measurements as JSON, so runs on different machines can be compared.

ENV_VAR = "SERIES_RESULTS_DIR"
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def results_dir() -> Path:
    """``$SERIES_RESULTS_DIR``, else ``results/`` at the top of the series' checkout."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
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
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def save_results(name: str, data: dict[str, Any], directory: Path | str | None = None) -> Path:
    """Write ``data`` with machine information to ``<results>/<name>.json``; return the path."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"a results name uses letters, digits, '.', '_' and '-', not {name!r}")
    if not isinstance(data, dict):
        raise ValueError(f"results are a dict of measurements, not {type(data).__name__}")
    folder = Path(directory) if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    record = {"name": name, "saved_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "machine": describe_machine(), "results": _plain(data)}
    path.write_text(json.dumps(record, indent=2, sort_keys=True))
    return path


# -- Charts the series draws again and again, always with labelled axes and units.


def _check_lengths(xs: Sequence[float], ys: Sequence[float], what: str) -> None:
    if len(xs) != len(ys):
        raise ValueError(f"{what}: {len(xs)} x values but {len(ys)} y values")
    if not xs:
        raise ValueError(f"{what}: nothing to plot")


def line_speedup(
    counts: Sequence[int],
    speedups: Mapping[str, Sequence[float]],
    title: str = "",
    xlabel: str = "devices",
    ideal: bool = True,
) -> Figure:
    """Speed-up against device/worker count, one line per series, plus the ideal y = x."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, ys in speedups.items():
        _check_lengths(counts, ys, f"line_speedup {label!r}")
        ax.plot(counts, ys, marker="o", label=label)
    if ideal:
        ax.plot(counts, counts, linestyle="--", color="grey", label="ideal (linear)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("speed-up (x, vs 1)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def save_figure(fig: Figure, name: str, directory: Path | str | None = None) -> Path:
    """Save a figure as PNG beside the notebook's JSON results (for ``make run``'s report)."""
    folder = Path(directory) if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=100)
    return path


def plot_roofline(roof: Any, ops: Sequence[Any] = (), title: str = "") -> Figure:
    """Log-log roofline of ``roof`` (``Roofline``, written in notebook 12) with the
    operations placed by intensity and measured FLOP/s; operations with no FLOPs
    (copies) have no place on it."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    placed = [op for op in ops if op.flops > 0]
    xs = [op.intensity for op in placed] + [roof.ridge]
    low, high = min(xs) / 4, max(xs) * 4
    grid = [low * (high / low) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(grid, [roof.attainable(x) for x in grid], color="black", lw=2,
            label=f"roof: {roof.peak / 1e9:.3g} GFLOP/s, {roof.bandwidth / 1e9:.3g} GB/s")
    ax.axvline(roof.ridge, color="grey", ls=":", lw=1)
    ax.text(roof.ridge, roof.peak * 1.15, f" ridge {roof.ridge:.3g} FLOP/B", color="grey",
            fontsize=8)
    for op in placed:
        ax.plot(op.intensity, op.flops_per_second, "o")
        ax.annotate(op.name, (op.intensity, op.flops_per_second), fontsize=7,
                    xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(top=roof.peak * 3)
    ax.set_xlabel("arithmetic intensity (FLOP per byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(title or f"Roofline of {roof.name or 'this machine'}")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


# -- Draw ring all-reduce step by step: which device holds which part of which sum.

State = list[list[frozenset[int]]]  # state[device][chunk] = devices summed in that chunk


class Contributions:
    """The four operations of the ring on sets of device numbers instead of tensors."""

    @staticmethod
    def move(x: frozenset[int], src: Hashable, dst: Hashable) -> frozenset[int]:
        return x

    @staticmethod
    def add(a: frozenset[int], b: frozenset[int], device: Hashable) -> frozenset[int]:
        return a | b

    @staticmethod
    def split(x: frozenset[int], parts: int) -> list[frozenset[int]]:
        return [x] * parts

    @staticmethod
    def concat(chunks: Sequence[frozenset[int]], device: Hashable) -> list[frozenset[int]]:
        return list(chunks)


def contributions(devices: int) -> list[frozenset[int]]:
    """Device ``i`` starts with a value that contains only its own contribution."""
    return [frozenset({i}) for i in range(devices)]


@dataclass
class RingSnapshots:
    """An ``on_step(label, chunks)`` callback that keeps a copy of every state."""

    steps: list[tuple[str, State]] = field(default_factory=list)

    def __call__(self, label: str, chunks: Sequence[Sequence[Any]]) -> None:
        self.steps.append((label, [list(device) for device in chunks]))


def _text(chunk: frozenset[int], devices: int) -> str:
    """The devices summed in a chunk, ``"013"``; ``"all"`` once it holds every one."""
    return "all" if len(chunk) == devices else "".join(str(i) for i in sorted(chunk))


def draw_ring_steps(steps: Sequence[tuple[str, State]], title: str = "") -> Figure:
    """One row per recorded state, one column per device, one box per chunk."""
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.patches import Rectangle  # noqa: PLC0415

    if not steps:
        raise ValueError("draw_ring_steps needs at least one recorded step")
    n = len(steps[0][1])
    rows = len(steps)
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
                shade = cmap(0.15 + 0.8 * len(chunk) / n)
                ax.add_patch(Rectangle((x, y), 0.92, 0.8, facecolor=shade,
                                       edgecolor="red" if changed else "grey",
                                       linewidth=2 if changed else 0.5))
                ax.text(x + 0.46, y + 0.4, _text(chunk, n), ha="center", va="center",
                        fontsize=6 if n > 4 else 8,
                        color="white" if len(chunk) > n / 2 else "black")
        previous = state
    for d in range(n):
        ax.text(d * (n + 1) + n / 2, rows + 0.1, f"device {d}", ha="center", fontsize=9)
    ax.set_xlim(-0.3, n * (n + 1))
    ax.set_ylim(-0.2, rows + 0.6)
    ax.axis("off")
    ax.set_title(title or f"Ring all-reduce on {n} devices: each box is one chunk, labelled with "
                          "the devices\nwhose values it sums (red outline: changed in that step)",
                 fontsize=9)
    fig.tight_layout()
    return fig


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
