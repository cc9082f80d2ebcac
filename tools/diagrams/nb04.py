"""Notebook 04's diagrams: the two matpow chains on one device and on two; two kinds of
parallelism on the same cores."""

from tools.diagrams import diagram
from tools.diagrams.draw import arrow, canvas, label
from tools.diagrams.nb03 import lane, mark


def chain(matrix, start, count=3, width=0.8):
    """Bars of one matpow chain: ``count`` products of ``matrix`` from ``start``."""
    return [(start + k * width, width, f"× {matrix}", "device") for k in range(count)]


@diagram("matpow-chains", "04", alt=(
    "Two timelines of the same program, A's chain of products and B's chain, then add_n on "
    "the CPU. Above, on one device: device 0 runs A's products, then B's, and the CPU adds "
    "the two results at the end. Below, on two devices: device 0 runs A's chain while device "
    "1 runs B's at the same time, so the sum on the CPU can start after half the time."),
    size=(8.5, 3.8))
def matpow_chains(fig):
    ax = canvas(fig, 10.0, 4.6)
    label(ax, 0.1, 4.4, "one device", bold=True, ha="left")
    lane(ax, 3.55, "device 0", chain("A", 0.0) + chain("B", 2.4))
    lane(ax, 2.85, "CPU", [(4.9, 1.2, "add_n", "host")])
    arrow(ax, (1.5 + 4.8, 3.55), (1.5 + 5.2, 3.38), colour="muted")
    mark(ax, 1.5 + 6.1, 2.75, 4.1, "done")
    label(ax, 0.1, 2.3, "two devices", bold=True, ha="left")
    lane(ax, 1.45, "device 0", chain("A", 0.0))
    lane(ax, 0.8, "device 1", chain("B", 0.0))
    lane(ax, 0.15, "CPU", [(2.5, 1.2, "add_n", "host")])
    for y in (1.45, 0.8):
        arrow(ax, (1.5 + 2.4, y + 0.1), (1.5 + 2.8, 0.68), colour="muted")
    mark(ax, 1.5 + 3.7, 0.05, 2.0, "done")
    label(ax, 9.9, 1.2, "each chain: n products", size=9, muted=True, ha="right")
    label(ax, 9.9, 0.85, "results copied to the CPU", size=9, muted=True, ha="right")


@diagram("intra-inter-op", "04", alt=(
    "Two timelines of two CPU cores running A's chain and B's chain of products. On the left, "
    "intra-op parallelism: every product is split across both cores, and the products run "
    "one after another. On the right, inter-op parallelism: A's chain runs on core 0 while "
    "B's runs on core 1, each product taking twice as long on one core. Both finish at the "
    "same time: when one product already fills every core, running two at once gains "
    "nothing."), size=(8.5, 2.8))
def intra_inter_op(fig):
    ax = canvas(fig, 10.0, 3.2)
    for x0, title, rows in (
            (1.2, "intra-op: each product on both cores",
             [[(k * 0.55, 0.55, "AB"[k // 3], "device") for k in range(6)]] * 2),
            (6.2, "inter-op: one chain per core",
             [[(k * 1.1, 1.1, "A", "device") for k in range(3)],
              [(k * 1.1, 1.1, "B", "device") for k in range(3)]])):
        label(ax, x0 + 1.45, 2.9, title, bold=True)
        lane(ax, 1.85, "core 0", rows[0], x0=x0)
        lane(ax, 1.1, "core 1", rows[1], x0=x0)
        mark(ax, x0 + 3.3, 0.95, 2.45, "done")
    label(ax, 5.0, 0.45, "the same work on the same cores: the same finish", muted=True)
