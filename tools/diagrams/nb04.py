"""Notebook 04's diagrams."""

from tools.diagrams import diagram
from tools.diagrams.draw import arrow, box, canvas, label


@diagram("matpow-chains", "04", alt=(
    "Two chains of matrix products: on the left both chains, A times A ten times and B times B "
    "ten times, run on device 0 one after the other; on the right A's chain runs on device 0 "
    "while B's runs on device 1 at the same time. In both, the two results are copied to the "
    "CPU, where add_n sums them."), size=(8.5, 3.4))
def matpow_chains(fig):
    ax = canvas(fig, 10.0, 4.0)
    for x0, title, devices in ((0.2, "one device", ("device 0", "device 0")),
                               (5.2, "two devices", ("device 0", "device 1"))):
        label(ax, x0 + 2.3, 3.75, title, size=11, bold=True)
        for row, (matrix, device) in enumerate(zip("AB", devices, strict=True)):
            y = 2.6 - row * 1.1
            box(ax, x0, y, 2.9, 0.75, f"{device}:  {matrix}·{matrix}·…·{matrix}  (n products)",
                size=9)
            arrow(ax, (x0 + 2.9, y + 0.37), (x0 + 3.55, 1.55 + 0.3), colour="muted")
        box(ax, x0 + 3.55, 1.2, 1.1, 0.75, "CPU\nadd_n", role="host", size=9)
        note = ("the chains take turns" if devices[0] == devices[1]
                else "the chains run at once")
        label(ax, x0 + 2.3, 0.45, note, muted=True)
