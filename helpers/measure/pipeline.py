"""Run a GPipe-style pipeline for real: one thread per stage, and a timeline of what ran when.

The notebook writes the stages (a forward and a backward function per stage, each
pinned to its device); this module only runs them in GPipe's order and times them.
Each stage is a Python thread: it takes micro-batches from the stage before through a
queue, runs its forward pass on each and passes the result on; once the last stage has
seen every micro-batch, the gradients flow back the same way, micro-batches in reverse.
Framework calls release Python's lock while they compute, so stages on different
devices really run at the same time; a stage waits only for its input. Every forward
and backward call is recorded as a :class:`Span` (stage, micro-batch, phase, start,
end), from which the :class:`Timeline` computes the measured bubble and draws a Gantt
chart.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure

Forward = Callable[[Any], tuple[Any, Any]]  # x -> (output, saved for backward)
Backward = Callable[[Any, Any], Any]  # (saved, output gradient) -> input gradient


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


class _Stop(Exception):
    """Another stage failed: stop waiting."""


def run_gpipe(forwards: Sequence[Forward], backwards: Sequence[Backward],
              microbatches: Sequence[Any], loss_gradient: Callable[[Any, int], Any],
              sync: Callable[[Any], Any] = lambda _: None, timeout: float = 120.0) -> Timeline:
    """Run one batch through the pipeline: every forward, then every backward.

    ``forwards[s](x)`` returns ``(y, saved)``; ``backwards[s](saved, dy)`` returns ``dx``
    (and accumulates the stage's weight gradients itself); ``loss_gradient(y, j)`` turns
    the last stage's output for micro-batch ``j`` into the gradient that starts its
    backward pass. ``sync(result)`` must wait until ``result`` is computed, for devices
    that return before they finish (GPUs); on a CPU the calls are synchronous. An error
    in any stage stops every stage and is raised here.
    """
    p, m = len(forwards), len(microbatches)
    if p < 1 or len(backwards) != p:
        raise ValueError(f"need one forward and one backward per stage, got {len(forwards)} "
                         f"and {len(backwards)}")
    if m < 1:
        raise ValueError("run_gpipe needs at least one micro-batch")
    # Queues carry (micro-batch index, tensor): a stage finds what it kept for that index.
    inputs: list[queue.Queue[tuple[int, Any]]] = [queue.Queue() for _ in range(p)]
    grads: list[queue.Queue[tuple[int, Any]]] = [queue.Queue() for _ in range(p)]
    for j, x in enumerate(microbatches):
        inputs[0].put((j, x))
    spans: list[Span] = []
    failed: list[BaseException] = []
    lock = threading.Lock()
    deadline = time.monotonic() + timeout

    def take(box: queue.Queue[tuple[int, Any]]) -> tuple[int, Any]:
        while True:
            if failed:
                raise _Stop
            try:
                return box.get(timeout=0.05)
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"pipeline stage waited more than {timeout:g} s") from None

    def timed(stage: int, j: int, phase: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = fn()
        sync(result[0] if phase == "F" else result)
        end = time.perf_counter()
        with lock:
            spans.append(Span(stage, j, phase, start, end))
        return result

    def stage_loop(s: int) -> None:
        try:
            saved, outputs = {}, {}
            for _ in range(m):
                j, x = take(inputs[s])
                y, saved[j] = timed(s, j, "F", lambda x=x: forwards[s](x))
                if s + 1 < p:
                    inputs[s + 1].put((j, y))
                else:
                    outputs[j] = y
            if s + 1 == p:  # the last stage turns round: last micro-batch first
                for j in reversed(range(m)):
                    grads[s].put((j, loss_gradient(outputs.pop(j), j)))
            for _ in range(m):
                j, dy = take(grads[s])
                dx = timed(s, j, "B", lambda j=j, dy=dy: backwards[s](saved.pop(j), dy))
                if s > 0:
                    grads[s - 1].put((j, dx))
        except _Stop:
            return
        except BaseException as error:  # noqa: BLE001  (re-raised in the caller)
            failed.append(error)

    threads = [threading.Thread(target=stage_loop, args=(s,), name=f"stage-{s}", daemon=True)
               for s in range(p)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    origin = min(s.start for s in spans)
    shifted = [Span(s.stage, s.microbatch, s.phase, s.start - origin, s.end - origin)
               for s in sorted(spans, key=lambda s: s.start)]
    return Timeline(p, m, shifted)
