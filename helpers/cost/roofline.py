"""The roofline model: how fast an operation can run, from two ceilings of the machine.

A device does at most ``peak`` floating-point operations per second and moves at most
``bandwidth`` bytes per second between its memory and its cores. An operation that
performs ``F`` FLOPs on ``B`` bytes has an *arithmetic intensity* ``I = F / B`` and can
reach at most ``min(peak, bandwidth * I)`` FLOP/s: below the *ridge* intensity
``peak / bandwidth`` it waits for memory, above it for arithmetic. Both ceilings are
measured on the machine in the notebook (a large matrix product, a large copy); the
operations are placed on the plot from their own FLOP and byte counts
(:func:`matmul_cost`, :func:`elementwise_cost`) and measured times. Points far below
both roofs are limited by something else: for small operations, the fixed cost of
launching them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from helpers.checks import require_int, require_number, require_positive_number

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure


def matmul_cost(m: int, k: int, n: int, itemsize: int = 4) -> tuple[float, float]:
    """(FLOPs, bytes) of an (m x k) by (k x n) product: ``2 m k n`` FLOPs, and at least the
    two inputs read and the output written once."""
    for name, value in (("m", m), ("k", k), ("n", n), ("itemsize", itemsize)):
        require_int(name, value, 1)
    return 2.0 * m * k * n, float(itemsize * (m * k + k * n + m * n))


def elementwise_cost(elements: int, inputs: int, flops_per_element: float,
                     itemsize: int = 4) -> tuple[float, float]:
    """(FLOPs, bytes) of an element-wise op: every input read once, one output written."""
    require_int("elements", elements, 1)
    require_int("inputs", inputs, 1)
    require_number("flops_per_element", flops_per_element, minimum=0)
    require_int("itemsize", itemsize, 1)
    return float(elements * flops_per_element), float(itemsize * elements * (inputs + 1))


@dataclass(frozen=True)
class OpPoint:
    """One measured operation: its work, its traffic and its time."""

    name: str
    flops: float
    nbytes: float
    seconds: float

    def __post_init__(self) -> None:
        require_number("flops", self.flops, minimum=0)
        require_positive_number("nbytes", self.nbytes)
        require_positive_number("seconds", self.seconds)

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.nbytes

    @property
    def flops_per_second(self) -> float:
        return self.flops / self.seconds

    @property
    def bytes_per_second(self) -> float:
        return self.nbytes / self.seconds


@dataclass(frozen=True)
class Roofline:
    """A machine's two ceilings: ``peak`` FLOP/s and memory ``bandwidth`` in bytes/s."""

    peak: float
    bandwidth: float
    name: str = ""

    def __post_init__(self) -> None:
        require_positive_number("peak", self.peak)
        require_positive_number("bandwidth", self.bandwidth)

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the two ceilings meet."""
        return self.peak / self.bandwidth

    def attainable(self, intensity: float) -> float:
        """The most FLOP/s an operation of this intensity can reach."""
        require_number("intensity", intensity, minimum=0)
        return min(self.peak, self.bandwidth * intensity)

    def bound(self, intensity: float) -> str:
        """``"memory"`` left of the ridge, ``"compute"`` from it on."""
        return "memory" if intensity < self.ridge else "compute"

    def fraction(self, op: OpPoint) -> float:
        """How much of its ceiling an operation reached (0 to about 1)."""
        ceiling = self.attainable(op.intensity)
        return math.inf if ceiling == 0 else op.flops_per_second / ceiling

    def plot(self, ops: Sequence[OpPoint] = (), title: str = "") -> Figure:
        """Log-log roofline with the operations placed by intensity and measured FLOP/s.

        Operations with no FLOPs (copies) have no place on this plot; show their
        bandwidth against :attr:`bandwidth` instead.
        """
        import matplotlib.pyplot as plt  # noqa: PLC0415

        placed = [op for op in ops if op.flops > 0]
        xs = [op.intensity for op in placed] + [self.ridge]
        low, high = min(xs) / 4, max(xs) * 4
        grid = [low * (high / low) ** (i / 200) for i in range(201)]
        fig, ax = plt.subplots(figsize=(7, 4.2))
        ax.plot(grid, [self.attainable(x) for x in grid], color="black", lw=2,
                label=f"roof: {self.peak / 1e9:.3g} GFLOP/s, {self.bandwidth / 1e9:.3g} GB/s")
        ax.axvline(self.ridge, color="grey", ls=":", lw=1)
        ax.text(self.ridge, self.peak * 1.15, f" ridge {self.ridge:.3g} FLOP/B", color="grey",
                fontsize=8)
        for op in placed:
            ax.plot(op.intensity, op.flops_per_second, "o")
            ax.annotate(op.name, (op.intensity, op.flops_per_second), fontsize=7,
                        xytext=(4, -10), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(top=self.peak * 3)
        ax.set_xlabel("arithmetic intensity (FLOP per byte)")
        ax.set_ylabel("FLOP/s")
        ax.set_title(title or f"Roofline of {self.name or 'this machine'}")
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        return fig
