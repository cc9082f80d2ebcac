"""Draw ring all-reduce step by step: which device holds which part of which sum.

The notebook's ring all-reduce is written against four small operations (``move``,
``add``, ``split``, ``concat``) so the same code runs on TensorFlow devices and on
MXNet contexts. Run once more with :class:`Contributions` as those operations, it
computes no numbers at all: every chunk is the *set of devices* whose values it already
contains, ``add`` is set union and ``move`` hands the set on. Recording the chunks after
every step (:class:`RingSnapshots`, passed as the algorithm's ``on_step``) gives exactly
what the algorithm did, and :func:`draw_ring_steps` draws it: one row per step, one
column per device, one box per chunk, darker the more devices it sums, outlined when
that step changed it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure

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
