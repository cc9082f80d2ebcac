"""Measure what a copy costs as the copy grows: time and bandwidth against size.

One copy of a few kilobytes costs about as long as the framework takes to launch it and
to report it finished; one copy of hundreds of megabytes costs what the memory (or the
PCIe or NVLink link) can move per second. A sweep over sizes shows both regimes on one
plot, and putting a plain NumPy memory copy beside a framework's copy shows how far the
framework is from what the machine can do.

A route is three small functions the notebook writes itself, so the real API call stays
in view: ``make(n)`` allocates a source and a destination of ``n`` float32 elements
(untimed), ``copy(src, dst)`` performs one copy, and ``sync`` waits for it to finish
(``"mxnet"`` for MXNet's asynchronous engine, ``"none"`` for NumPy, which is done when
the call returns).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from helpers.checks import require_int
from helpers.measure.timing import TimingResult, benchmark, resolve_sync
from helpers.table import Table

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure

MB = 1e6  # bandwidths are in GB/s = 1e9 bytes/s, so sizes are decimal too
FLOAT32_BYTES = 4

#: From this size on a copy is timed fewer times: one copy of 256 MB already averages
#: over millions of cache lines, and repeating it costs seconds on a small machine.
BIG_BYTES = 64 * MB


def elements_for(size_mb: float, itemsize: int = FLOAT32_BYTES) -> int:
    """How many elements of ``itemsize`` bytes make ``size_mb`` megabytes (at least one)."""
    if isinstance(size_mb, bool) or not isinstance(size_mb, (int, float)) or not size_mb > 0:
        raise ValueError(f"a copy size is a number of megabytes > 0, not {size_mb!r}")
    if isinstance(itemsize, bool) or not isinstance(itemsize, int) or itemsize < 1:
        raise ValueError(f"itemsize must be an int >= 1 (bytes per element), not {itemsize!r}")
    return max(1, round(size_mb * MB / itemsize))


def repeats_for(nbytes: float, repeat: int, big_repeat: int = 2,
                big_bytes: float = BIG_BYTES) -> int:
    """``repeat`` timed copies for small sizes, ``big_repeat`` (if fewer) from ``big_bytes`` on."""
    require_int("repeat", repeat, 1)
    require_int("big_repeat", big_repeat, 1)
    return min(repeat, big_repeat) if nbytes >= big_bytes else repeat


@dataclass(frozen=True)
class CopyRoute:
    """One way of copying: how to allocate, how to copy, how to wait for the copy."""

    name: str
    make: Callable[[int], tuple[Any, Any]]
    copy: Callable[[Any, Any], Any]
    sync: str | Callable[[Any], None] = "none"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a copy route needs a non-empty name")
        for attr in ("make", "copy"):
            if not callable(getattr(self, attr)):
                raise ValueError(f"CopyRoute {self.name!r}: {attr} must be a function")
        resolve_sync(self.sync)  # rejects unknown sync names now, not mid-sweep


@dataclass
class Sweep:
    """Timings of every route at every size, as tables, rates and a plot."""

    sizes_bytes: list[float]
    results: dict[str, list[TimingResult]] = field(default_factory=dict)

    def seconds(self) -> dict[str, list[float]]:
        """Median seconds per copy, per route, in size order."""
        return {name: [r.median for r in rs] for name, rs in self.results.items()}

    def gbps(self) -> dict[str, list[float]]:
        """GB/s (1e9 bytes per second, from the median time), per route, in size order."""
        return {name: [r.gbps for r in rs] for name, rs in self.results.items()}

    def largest(self) -> dict[str, float]:
        """GB/s of each route at the largest size: the bandwidth regime."""
        return {name: rates[-1] for name, rates in self.gbps().items()}

    def table(self) -> Table:
        table = Table(["size", "route", "median", "spread", "GB/s"])
        for name, rs in self.results.items():
            for size, r in zip(self.sizes_bytes, rs, strict=True):
                table.append([_human_bytes(size), name, _human_seconds(r.median),
                              _human_seconds(r.spread), round(r.gbps, 3)])
        return table

    def plot(self, title: str = "") -> Figure:
        """Two panels against size (log-log): time per copy, and bandwidth."""
        import matplotlib.pyplot as plt  # noqa: PLC0415

        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
        for name, rs in self.results.items():
            left.plot(self.sizes_bytes, [r.median * 1e3 for r in rs], marker="o", label=name)
            right.plot(self.sizes_bytes, [r.gbps for r in rs], marker="o", label=name)
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xlabel("copy size (bytes)")
            ax.grid(True, which="major", alpha=0.3)
        left.set_yscale("log")
        left.set_ylabel("time per copy (ms, median)")
        right.set_yscale("log")
        right.set_ylabel("bandwidth (GB/s)")
        right.legend(fontsize="small")
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        return fig

    def to_dict(self) -> dict[str, Any]:
        return {"sizes_bytes": self.sizes_bytes,
                "routes": {n: [r.to_dict() for r in rs] for n, rs in self.results.items()}}


def _human_bytes(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes:g} B"


def _human_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def copy_sweep(
    routes: Sequence[CopyRoute],
    sizes_mb: Sequence[float],
    *,
    warmup: int = 1,
    repeat: int = 5,
    big_repeat: int = 2,
) -> Sweep:
    """Time one copy per sample for every route and size; arrays are freed after each size.

    Allocation happens in ``route.make`` and is never timed; the warm-up copies touch
    the destination's pages so the first timed copy does not pay for page faults.
    """
    if not routes:
        raise ValueError("copy_sweep needs at least one CopyRoute")
    names = [r.name for r in routes]
    if len(set(names)) != len(names):
        raise ValueError(f"route names must be distinct, got {names}")
    if not sizes_mb:
        raise ValueError("copy_sweep needs at least one size in megabytes")
    counts = [elements_for(s) for s in sizes_mb]
    sweep = Sweep([float(c * FLOAT32_BYTES) for c in counts], {n: [] for n in names})
    for count, nbytes in zip(counts, sweep.sizes_bytes, strict=True):
        for route in routes:
            src, dst = route.make(count)
            result = benchmark(lambda s=src, d=dst, r=route: r.copy(s, d), sync=route.sync,
                               warmup=warmup, repeat=repeats_for(nbytes, repeat, big_repeat),
                               nbytes=nbytes, label=route.name)
            sweep.results[route.name].append(result)
            del src, dst
            gc.collect()
    return sweep
