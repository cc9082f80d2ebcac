"""Charts the series draws again and again, always with labelled axes and units."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers.measure import TimingResult

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure


def _check_lengths(xs: Sequence[float], ys: Sequence[float], what: str) -> None:
    if len(xs) != len(ys):
        raise ValueError(f"{what}: {len(xs)} x values but {len(ys)} y values")
    if not xs:
        raise ValueError(f"{what}: nothing to plot")


def bar_timings(results: Sequence[TimingResult], title: str = "", unit: str = "ms") -> Figure:
    """Median time per result as bars, with the min-max spread as error bars."""
    if not results:
        raise ValueError("bar_timings: no results to plot")
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6}
    if unit not in scale:
        raise ValueError(f"unit must be one of {list(scale)}, not {unit!r}")
    k = scale[unit]
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6, 3.5))
    medians = [r.median * k for r in results]
    lower = [(r.median - r.best) * k for r in results]
    upper = [(max(r.samples) - r.median) * k for r in results]
    ax.bar([r.label for r in results], medians, yerr=[lower, upper], capsize=4, color="tab:blue")
    ax.set_ylabel(f"time ({unit}, median; bars: min-max)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


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
    from helpers.results import results_dir  # noqa: PLC0415

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
