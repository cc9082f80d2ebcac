"""Notebook 10's diagrams: Amdahl's law, the cost of one message, and who carries the bytes
in a parameter server and in a ring."""

import math

from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, arrow, box, canvas, label


@diagram("amdahl", "10", alt=(
    "One step's time as a bar, on one worker and on four. On one worker the bar is a serial "
    "part followed by a parallel part. On four workers the serial part keeps its length while "
    "the parallel part is cut into four pieces that run side by side, so the bar shrinks to "
    "the serial part plus a quarter of the parallel part: the serial part sets the limit."),
    size=(8.5, 3.2))
def amdahl(fig):
    ax = canvas(fig, 10.0, 3.8)
    unit = 0.75  # inches of time per tenth of the work: serial 2 tenths, parallel 8
    serial, parallel = 2 * unit, 8 * unit
    label(ax, 0.1, 3.45, "1 worker", ha="left", bold=True)
    box(ax, 1.4, 3.15, serial, 0.55, "serial (1 − p)", role="idle", size=9)
    box(ax, 1.4 + serial, 3.15, parallel, 0.55, "parallel part p", size=9)
    label(ax, 0.1, 1.46, "4 workers", ha="left", bold=True)
    box(ax, 1.4, 0.65, serial, 1.62, "serial (1 − p)\n\n(one worker;\nthe others wait)",
        role="idle", size=9)
    for k in range(4):
        box(ax, 1.4 + serial, 0.65 + 0.42 * k, parallel / 4, 0.36, f"p / 4  (worker {k})",
            size=8)
    end = 1.4 + serial + parallel / 4
    ax.plot([end, end], [0.55, 2.5], color=COLOURS["accent"], linestyle="--", linewidth=1.2)
    label(ax, end + 0.15, 1.25, "the step ends when the last piece does:\n"
          "time = (1 − p) + p / n   →   speed-up ≤ 1 / (1 − p)", ha="left", size=9.5)
    arrow(ax, (1.4, 0.25), (9.6, 0.25), colour="muted")
    label(ax, 9.6, 0.45, "time", ha="right", muted=True, size=9)


@diagram("alpha-beta", "10", alt=(
    "The time of one message drawn as a bar of two parts: a fixed part alpha, paid by every "
    "message whatever its size, then a part that grows with the bytes, m times beta. A small "
    "message is almost all alpha; a large one is almost all bytes. The size alpha / beta, "
    "where the two parts are equal, separates latency-bound from bandwidth-bound messages."),
    size=(8.5, 3.0))
def alpha_beta(fig):
    ax = canvas(fig, 10.0, 3.5)
    label(ax, 5.0, 3.25, "time of one message  =  alpha  +  beta · m", size=11, bold=True)
    rows = (("small message", 0.25, "m · beta"), ("medium: m = alpha / beta", 1.6, "m · beta"),
            ("large message", 5.5, "m · beta  (bytes over the link)"))
    for i, (name, width, text) in enumerate(rows):
        y = 2.3 - 0.85 * i
        label(ax, 0.1, y + 0.27, name, ha="left", size=9)
        box(ax, 2.6, y, 1.6, 0.55, "alpha", role="data", size=9)
        box(ax, 4.2, y, width, 0.55, text if width > 1 else "", size=9)
        if width <= 1:
            label(ax, 4.2 + width + 0.1, y + 0.27, text, ha="left", size=9)
    label(ax, 3.4, 0.1, "system calls, protocol, waking the receiver", muted=True, size=8.5)
    label(ax, 7.3, 0.1, "1 / beta is the bandwidth", muted=True, size=8.5)


def _worker_ring(ax, cx, cy, r, n, title):
    """n workers on a circle, each sending to the next: (centres, box size)."""
    label(ax, cx, cy + r + 0.75, title, bold=True)
    centres = [(cx + r * math.sin(2 * math.pi * i / n), cy + r * math.cos(2 * math.pi * i / n))
               for i in range(n)]
    for i, (x, y) in enumerate(centres):
        box(ax, x - 0.45, y - 0.22, 0.9, 0.44, f"worker {i}", size=8.5)
    return centres


@diagram("ring-vs-ps", "10", alt=(
    "Two ways to combine four workers' gradients of m bytes. On the left, every worker pushes "
    "its m bytes to one parameter server and pulls m bytes back, so the server's link carries "
    "n times m in each direction. On the right, the workers form a ring and each passes a "
    "piece of m / n bytes to its neighbour in each of 2 (n - 1) steps, so every link carries "
    "2 (n - 1) / n times m, under 2 m whatever n is, at the price of 2 (n - 1) latencies."),
    size=(9.0, 3.8))
def ring_vs_ps(fig):
    ax = canvas(fig, 11.0, 4.6)
    label(ax, 2.7, 4.35, "parameter server", bold=True)
    box(ax, 1.9, 3.3, 1.6, 0.55, "server", role="server", size=9)
    xs = [0.2 + 1.35 * i for i in range(4)]
    for i, x in enumerate(xs):
        box(ax, x, 1.3, 1.05, 0.45, f"worker {i}", size=8.5)
        arrow(ax, (x + 0.35, 1.78), (2.45 + 0.12 * i, 3.27), colour="accent")
        arrow(ax, (2.55 + 0.12 * i, 3.27), (x + 0.7, 1.78), colour="muted")
    label(ax, 2.7, 0.85, "push m (blue), pull m (grey) per worker", size=8.5)
    label(ax, 2.7, 0.4, "the server's link: n · m each way", size=9.5, bold=True)
    centres = _worker_ring(ax, 8.3, 2.3, 1.25, 4, "ring all-reduce")
    for i, (x, y) in enumerate(centres):
        nx, ny = centres[(i + 1) % 4]
        dx, dy = nx - x, ny - y
        d = math.hypot(dx, dy)
        arrow(ax, (x + 0.5 * dx / d, y + 0.38 * dy / d), (nx - 0.5 * dx / d, ny - 0.38 * dy / d),
              text="m / n", curve=-0.15, size=8.5, offset=(0.0, -0.05))
    label(ax, 8.3, 2.3, "every step:\nall links at once", muted=True, size=8.5)
    label(ax, 8.3, 0.4, "each link: 2 (n − 1) steps of m / n  <  2 m", size=9.5, bold=True)
