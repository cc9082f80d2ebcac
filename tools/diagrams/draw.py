"""Drawing primitives shared by the diagrams, so that every notebook's pictures look alike.

Coordinates are the axes' data units on a canvas from :func:`canvas` (0..width, 0..height,
no ticks or frame). Colours name roles, not frameworks: a device, the host, data in flight,
a parameter server, an idle slot.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

COLOURS = {
    "device": "#dbe9f6",     # a GPU or a logical device
    "host": "#fde9c9",       # the CPU and its memory
    "server": "#e3f1dc",     # a parameter server, a scheduler
    "data": "#f6d5d5",       # a tensor, a gradient, a message in flight
    "idle": "#eeeeee",       # a bubble, waiting
    "accent": "#2b6cb0",     # arrows that carry the story
    "ink": "#222222",
    "muted": "#666666",
}


def canvas(fig: Figure, width: float = 10.0, height: float = 4.0) -> Axes:
    """One axes filling the figure, in units of ``width`` by ``height``, nothing drawn."""
    ax = fig.add_axes((0.01, 0.01, 0.98, 0.98))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return ax


def box(ax: Axes, x: float, y: float, w: float, h: float, text: str = "",
        role: str = "device", size: float = 10, bold: bool = False, dashed: bool = False) -> None:
    """A rounded box with its lower-left corner at (x, y) and ``text`` centred in it."""
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=COLOURS.get(role, role), edgecolor=COLOURS["ink"],
                                linewidth=1.0, linestyle="--" if dashed else "-"))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size,
                color=COLOURS["ink"], fontweight="bold" if bold else "normal")


def arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], text: str = "",
          colour: str = "accent", both: bool = False, curve: float = 0.0,
          size: float = 9, offset: tuple[float, float] = (0.0, 0.12)) -> None:
    """An arrow from ``start`` to ``end`` with an optional label at its middle."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="<|-|>" if both else "-|>",
                                 mutation_scale=12, linewidth=1.4,
                                 color=COLOURS.get(colour, colour),
                                 connectionstyle=f"arc3,rad={curve}"))
    if text:
        ax.text((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1], text,
                ha="center", va="bottom", fontsize=size, color=COLOURS["ink"])


def label(ax: Axes, x: float, y: float, text: str, size: float = 10, muted: bool = False,
          ha: str = "center", bold: bool = False) -> None:
    """Free text at (x, y)."""
    ax.text(x, y, text, ha=ha, va="center", fontsize=size,
            color=COLOURS["muted" if muted else "ink"], fontweight="bold" if bold else "normal")
