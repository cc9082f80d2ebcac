"""The timeline of a pipelined batch: what ran when, its measured bubble, a Gantt chart.

Notebook 13 writes GPipe's schedule (``run_gpipe``: one thread per stage, queues between
them) and records every forward and backward call as a :class:`Span`; the
:class:`Timeline` of those spans computes the idle share and draws the chart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Span:
    """One forward (``"F"``) or backward (``"B"``) call of a stage on a micro-batch."""

    stage: int
    microbatch: int
    phase: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Timeline:
    """Every span of one pipelined batch, with times relative to the first start."""

    stages: int
    microbatches: int
    spans: list[Span] = field(default_factory=list)

    @property
    def makespan(self) -> float:
        """Seconds from the first start to the last end."""
        return max(s.end for s in self.spans) - min(s.start for s in self.spans)

    def busy(self, stage: int) -> float:
        """Seconds ``stage`` spent computing."""
        return sum(s.seconds for s in self.spans if s.stage == stage)

    def bubble(self) -> float:
        """Measured idle share: ``1 - total busy / (stages x makespan)``."""
        busy = sum(self.busy(s) for s in range(self.stages))
        return 1.0 - busy / (self.stages * self.makespan)

    def plot(self, ax: Any = None, title: str = "") -> Figure:
        """A Gantt chart: one row per stage, one bar per span (forward solid, backward
        hatched), coloured by micro-batch."""
        import matplotlib.pyplot as plt  # noqa: PLC0415

        if ax is None:
            fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * self.stages))
        else:
            fig = ax.figure
        colors = plt.get_cmap("tab10")
        origin = min(s.start for s in self.spans)
        for s in self.spans:
            ax.barh(s.stage, (s.end - s.start) * 1e3, left=(s.start - origin) * 1e3,
                    color=colors(s.microbatch % 10), edgecolor="black", linewidth=0.5,
                    hatch="//" if s.phase == "B" else None)
        ax.set_yticks(range(self.stages), [f"stage {i}" for i in range(self.stages)])
        ax.invert_yaxis()
        ax.set_xlabel("time (ms)")
        ax.set_title(title or f"{self.microbatches} micro-batch(es): bubble {self.bubble():.0%}")
        fig.tight_layout()
        return fig
