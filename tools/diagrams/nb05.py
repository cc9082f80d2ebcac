"""Notebook 05's diagrams."""

from tools.diagrams import diagram
from tools.diagrams.draw import arrow, box, canvas, label


@diagram("mirrored-step", "05", alt=(
    "One synchronous training step of MirroredStrategy over three devices. The global batch is "
    "split into three slices; replica i on device i computes, with its own copy of the weights W, "
    "the gradient g_i of its slice's loss divided by the global batch. An all-reduce sums "
    "g_0 + g_1 + g_2, the gradient of the mean loss over the global batch, and hands the sum to "
    "every replica; each replica applies the same update to its copy of W, so the copies stay "
    "equal."), size=(8.5, 3.6))
def mirrored_step(fig):
    ax = canvas(fig, 10.0, 4.2)
    for x, text in ((1.05, "global batch,\nsplit in slices"),
                    (3.45, "replicas: forward\nand backward"),
                    (5.45, "gradients of\nloss ÷ global\nbatch"),
                    (7.15, "all-reduce"), (9.07, "the same\nupdate")):
        label(ax, x, 3.85, text, size=9, muted=True)
    for row in range(3):
        y = 2.65 - row * 1.05
        box(ax, 0.2, y, 1.7, 0.75, f"slice {row}", role="data", size=9)
        arrow(ax, (1.9, y + 0.37), (2.3, y + 0.37), colour="muted")
        box(ax, 2.3, y, 2.3, 0.75, f"replica {row} on device {row}\nits copy of weights W", size=9)
        arrow(ax, (4.6, y + 0.37), (5.0, y + 0.37), colour="muted")
        box(ax, 5.0, y, 0.9, 0.75, f"g{row}", role="data", size=10)
        arrow(ax, (5.9, y + 0.37), (6.3, y + 0.37))
        arrow(ax, (8.0, y + 0.37), (8.3, y + 0.37))
        box(ax, 8.3, y, 1.55, 0.75, "W ← W − update(g)", size=8.5)
    box(ax, 6.3, 0.55, 1.7, 2.85,
        "sum the\ngradients:\ng = g0 + g1 + g2,\nthe gradient of\nthe mean loss;\ngive g to\n"
        "every replica", role="host", size=8.5)
    label(ax, 5.0, 0.22, "every replica applies the same g to the same W: the copies never drift "
          "apart", size=9, muted=True)
