"""Notebook 12's diagrams: a roofline, and one data-parallel step with and without overlap."""

import numpy as np

from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, box, canvas, label


@diagram("roofline", "12", alt=(
    "A roofline on logarithmic axes: attainable FLOP/s against arithmetic intensity in FLOP per "
    "byte. Left of the ridge point the roof is a slope, memory bandwidth times intensity; right "
    "of it a flat roof at the peak FLOP/s. An element-wise add (about 0.1 FLOP per byte) sits "
    "on the slope, memory-bound; a large matrix product sits on the flat roof, compute-bound; "
    "a small product has a high roof but sits far below it, held back by its launch cost."),
    size=(8.0, 4.2))
def roofline(fig):
    ax = fig.add_axes((0.1, 0.13, 0.86, 0.8))
    peak, bandwidth = 1e12, 1e10  # a made-up machine: ridge at 100 FLOP per byte
    x = np.geomspace(0.02, 1e4, 200)
    ax.loglog(x, np.minimum(peak, bandwidth * x), color=COLOURS["ink"], lw=2.5)
    ax.axvline(peak / bandwidth, color=COLOURS["muted"], ls=":", lw=1.2)
    ax.text(115, 2e7, "ridge point = peak / bandwidth", color=COLOURS["muted"], fontsize=10)
    ax.text(0.12, 6e9, "slope: memory bandwidth × intensity", rotation=24, fontsize=10,
            color=COLOURS["accent"])
    ax.text(600, 1.35e12, "roof: peak FLOP/s", fontsize=10, color=COLOURS["accent"])
    points = [(1 / 12, bandwidth / 12 * 0.8, "a + b: 1/12 FLOP/B,\nmemory-bound", (6, -34)),
              (3000, peak * 0.85, "large product:\ncompute-bound", (-40, -38)),
              (400, 1e9, "small product: its roof is high,\nits launch cost holds it down",
               (-60, -34))]
    for xi, yi, text, offset in points:
        ax.plot(xi, yi, "o", color=COLOURS["accent"], ms=8)
        ax.annotate(text, (xi, yi), xytext=offset, textcoords="offset points", fontsize=9)
    ax.set(xlabel="arithmetic intensity (FLOP per byte, log scale)",
           ylabel="attainable FLOP/s (log scale)", xlim=(0.02, 1e4), ylim=(1e7, 5e12))
    ax.set_xticks([])
    ax.set_yticks([])
    ax.minorticks_off()


@diagram("overlap-step", "12", alt=(
    "Two timelines of one data-parallel step, each with a compute lane and an exchange lane. "
    "Without overlap, the forward pass and the backward pass run, then the all-reduce of all "
    "the gradients, then the update: the step takes compute plus exchange. With overlap, the "
    "gradients are cut into two packs: the pack of the last layers is exchanged while the "
    "backward pass still computes the first layers' gradients, and the step ends earlier by "
    "the time hidden."), size=(8.5, 3.8))
def overlap_step(fig):
    ax = canvas(fig, 10.0, 4.6)
    x0 = 2.2
    scenarios = [("no overlap:\none pack", 3.0, [(0.0, 1.3, "forward"), (1.3, 2.6, "backward"),
                                                 (6.3, 0.6, "update")],
                  [(3.9, 2.4, "all-reduce, all gradients")]),
                 ("overlap:\ntwo packs", 0.8, [(0.0, 1.3, "forward"), (1.3, 2.6, "backward"),
                                               (5.1, 0.6, "update")],
                  [(2.7, 1.2, "pack 2"), (3.9, 1.2, "pack 1")])]
    for name, y, compute, exchange in scenarios:
        label(ax, 0.75, y + 0.45, name, size=10)
        label(ax, x0 - 0.15, y + 0.85, "compute", size=8, muted=True, ha="right")
        label(ax, x0 - 0.15, y + 0.2, "exchange", size=8, muted=True, ha="right")
        for start, width, text in compute:
            box(ax, x0 + start, y + 0.6, width, 0.5, text, role="idle" if text == "update"
                else "device", size=9)
        for start, width, text in exchange:
            box(ax, x0 + start, y - 0.05, width, 0.5, text, role="data", size=9)
    ax.annotate("", (x0 + 5.7, 0.45), (x0 + 6.9, 0.45),
                arrowprops={"arrowstyle": "<|-|>", "color": COLOURS["accent"]})
    label(ax, x0 + 6.3, 0.2, "time saved", size=9)
    label(ax, x0 + 5.6, 2.35, "pack 2 holds the last layers' gradients: ready first", size=9,
          muted=True)
    label(ax, x0 + 7.3, 4.4, "time →", size=9, muted=True)
