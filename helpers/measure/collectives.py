"""Read the timings of collectives back from worker processes, and put ring and PS side by side.

The programs :mod:`helpers.workers.tf_allreduce` (ring all-reduce between TensorFlow
workers) and :mod:`helpers.workers.mx_ps_groups` (push and pull through a ps-lite
server) print one ``RESULT`` record per measurement and worker. A collective is
synchronous: it ends for everyone when the slowest member is done, so a group's time is
the *slowest* member's median, the figure a training step would wait for. This module
turns the records into ``{(workers, bytes): seconds}`` and draws the comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from helpers.table import Table

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure

Times = dict[tuple[int, int], float]


def slowest(records: Iterable[dict[str, Any]], kind: str, field: str = "seconds") -> Times:
    """``{(workers, bytes): seconds}`` of the records of ``kind``, slowest member per group.

    ``field`` picks which time of each record: ``"seconds"`` (the median of the repeats)
    or ``"best"`` (the fastest repeat, which a burst of load from other programs cannot
    inflate unless it hits every repeat).
    """
    times: Times = {}
    for r in records:
        if r.get("kind") == kind:
            key = (int(r["workers"]), int(r["bytes"]))
            times[key] = max(times.get(key, 0.0), float(r[field]))
    if not times:
        raise ValueError(f"no {kind!r} records: did the workers print their RESULT lines?")
    return times


def round_trips(records: Iterable[dict[str, Any]], field: str = "median_s") -> Times:
    """``{(workers, bytes): seconds}`` of push + pull round trips, slowest worker per group
    (``field``: ``"median_s"`` or ``"best_s"``, as for :func:`slowest`)."""
    times: Times = {}
    for r in records:
        for row in r.get("push_pull", []):
            key = (int(r["workers"]), int(row["bytes"]))
            times[key] = max(times.get(key, 0.0), float(row[field]))
    if not times:
        raise ValueError("no push_pull records: did the workers print their RESULT lines?")
    return times


def comparison_table(ring: Times, ps: Times) -> Table:
    """One row per (workers, bytes) measured both ways, in ms, with their ratio."""
    table = Table(["workers", "bytes", "ring all-reduce ms", "parameter server ms",
                   "PS / ring"])
    for key in sorted(set(ring) & set(ps)):
        table.append([key[0], key[1], 1e3 * ring[key], 1e3 * ps[key], ps[key] / ring[key]])
    return table


def plot_comparison(ring: Times, ps: Times, workers: Sequence[int], title: str = "") -> Figure:
    """Time against message size, one colour per worker count: ring solid, PS dashed."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    colors = plt.get_cmap("tab10")
    for i, n in enumerate(workers):
        for times, style, name in ((ring, "-o", "ring"), (ps, "--s", "PS")):
            sizes = sorted(b for w, b in times if w == n)
            if sizes:
                ax.plot(sizes, [1e3 * times[(n, b)] for b in sizes], style, color=colors(i),
                        label=f"{name}, {n} worker(s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes per worker")
    ax.set_ylabel("time (ms, slowest worker's median)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
