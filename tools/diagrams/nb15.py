"""Notebook 15's diagrams: steps against batch size around the critical batch size, and MFU."""

import numpy as np

from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, box, canvas, label


@diagram("steps-vs-batch", "15", alt=(
    "Steps and examples needed to reach a target loss against the batch size B, both on "
    "logarithmic axes, from McCandlish et al.'s model S = S_min (1 + B_crit / B) and "
    "E = E_min (1 + B / B_crit). Well below the critical batch size B_crit the steps fall in "
    "proportion to the batch while the examples stay near their minimum: linear scaling. Well "
    "above it the steps flatten at S_min while the examples grow with the batch: diminishing "
    "returns. At B_crit both are twice their minimum."), size=(8.0, 4.0))
def steps_vs_batch(fig):
    ax = fig.add_axes((0.1, 0.14, 0.86, 0.8))
    b = np.geomspace(1 / 64, 64, 200)  # in units of B_crit
    ax.loglog(b, 1 + 1 / b, color=COLOURS["accent"], lw=2.5, label="steps S / S_min")
    ax.loglog(b, 1 + b, color=COLOURS["ink"], lw=2, ls="--", label="examples E / E_min")
    ax.axvline(1, color=COLOURS["muted"], ls=":", lw=1.2)
    ax.plot([1, 1], [2, 2], "o", color=COLOURS["ink"], ms=7)
    ax.annotate("at B_crit: twice the minimum\nsteps and twice the examples", (1, 2),
                xytext=(1.25, 25), fontsize=9,
                arrowprops={"arrowstyle": "-|>", "color": COLOURS["muted"]})
    ax.text(1 / 40, 1.3, "linear scaling: doubling B\nhalves the steps", fontsize=10)
    ax.text(3.2, 1.4, "diminishing returns: steps\nnear S_min, examples grow", fontsize=10)
    ax.set(xlabel="batch size B (log scale, in units of B_crit)",
           ylabel="needed / minimum (log scale)", ylim=(0.8, 100))
    ax.set_xticks([1 / 16, 1, 16], ["B_crit / 16", "B_crit", "16 B_crit"])
    ax.set_yticks([1, 2, 10, 65], ["1", "2", "10", "65"])
    ax.minorticks_off()
    ax.legend(loc="upper center", fontsize=9)


@diagram("mfu-ratio", "15", alt=(
    "MFU as a fraction. On top, the model FLOPs of one step, counted from the layer shapes "
    "(forward, the weights' gradients, and the input gradients an earlier layer needs), "
    "divided by the step's measured time. Below, a peak FLOP/s: either the data sheet's "
    "theoretical peak, as PaLM defines MFU, or the best product measured on this machine, "
    "which is lower and so gives a higher MFU."), size=(8.5, 3.2))
def mfu_ratio(fig):
    ax = canvas(fig, 10.0, 3.8)
    label(ax, 0.8, 1.9, "MFU =", size=14, bold=True)
    box(ax, 1.7, 2.15, 7.9, 1.3, "model FLOPs per step: from the layer shapes\n(forward + weight "
        "gradients + input gradients an earlier layer needs)\n÷ the step's measured seconds",
        role="device", size=10)
    ax.plot([1.7, 9.6], [1.9, 1.9], color=COLOURS["ink"], lw=2)
    box(ax, 1.7, 0.3, 3.7, 1.3, "peak FLOP/s, data sheet\n(PaLM's MFU: the\ntheoretical peak)",
        role="server", size=10)
    box(ax, 5.9, 0.3, 3.7, 1.3,
        "peak FLOP/s, measured\n(the best product timed:\nlower, so MFU is higher)",
        role="host", size=10)
    label(ax, 5.65, 0.95, "or", size=11, muted=True)
