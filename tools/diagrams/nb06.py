"""Notebook 06's diagrams."""

from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, arrow, box, canvas, label


@diagram("mwms-cluster", "06", alt=(
    "Two worker processes run the same program, mwms_train. Each reads a TF_CONFIG whose cluster "
    "part, the list of every worker's host and port, is the same in both, and whose task part says "
    "worker 0 or worker 1. Each holds a full copy of the model and trains on its slice of every "
    "batch; a collective all-reduce between them sums the gradients after every step. The "
    "checkpoints kept are those of worker 0, the chief, in a folder every worker can read; after "
    "a restart both workers restore from it."), size=(8.5, 4.0))
def mwms_cluster(fig):
    ax = canvas(fig, 10.0, 4.7)
    for x0, index in ((0.2, 0), (5.8, 1)):
        role = " (the chief)" if index == 0 else ""
        box(ax, x0, 1.55, 4.0, 2.95, role="idle")
        label(ax, x0 + 2.0, 4.2, f"process: worker {index}{role}", bold=True)
        box(ax, x0 + 0.2, 2.85, 3.6, 1.05, "", role="host")
        label(ax, x0 + 0.35, 3.65, "TF_CONFIG", size=9, ha="left", bold=True)
        label(ax, x0 + 0.35, 3.33, 'cluster: {"worker": [A, B]}   same everywhere', size=8.5,
              ha="left")
        label(ax, x0 + 0.35, 3.05, f'task: {{"type": "worker", "index": {index}}}', size=8.5,
              ha="left")
        box(ax, x0 + 0.2, 1.75, 3.6, 0.85,
            "mwms_train: a full copy of the model,\nits slice of every global batch", size=9)
    arrow(ax, (4.2, 2.17), (5.8, 2.17), both=True)
    label(ax, 5.0, 2.65, "all-reduce of\nthe gradients,\nevery step", size=8.5)
    label(ax, 5.0, 1.65, "RING (gRPC) or\nNCCL (GPUs)", size=8, muted=True)
    box(ax, 3.0, 0.2, 4.0, 0.8, "checkpoint folder (shared):\nckpt-15, ckpt-30, ...", role="data",
        size=9)
    arrow(ax, (1.2, 1.55), (2.95, 0.75), colour="accent")
    label(ax, 1.05, 0.95, "the chief's\ncopy is kept", size=8.5)
    for x0, x1 in ((4.0, 3.0), (6.0, 7.0)):  # every worker, the chief too, restores from it
        arrow(ax, (x0, 1.05), (x1, 1.5), colour="muted")
    label(ax, 8.65, 0.6, "every worker\nrestores from it\nafter a restart", size=8.5, muted=True)


@diagram("mwms-resume", "06", alt=(
    "A timeline of steps. In the first run both workers train from step 0; the chief saves a "
    "checkpoint at step c; worker 1 is killed some steps after it, and worker 0 stops at its "
    "next all-reduce. The whole cluster is restarted: every worker restores "
    "checkpoint c, computes again the steps between c and the crash, with the same losses as "
    "before, and trains on to the last step, where the chief saves again."), size=(8.5, 3.2))
def mwms_resume(fig):
    ax = canvas(fig, 10.0, 3.8)
    left, right, c, k, stop = 1.9, 9.4, 4.7, 5.9, 6.6

    def mark(x, y, text, height):
        ax.plot([x, x], [y - 0.3, y + 0.3 + height], color=COLOURS["ink"], lw=1.4)
        label(ax, x, y + 0.45 + height, text, size=8.5)

    label(ax, 0.1, 2.55, "first run", ha="left", bold=True)
    box(ax, left, 2.35, stop - left, 0.4)
    label(ax, (left + c) / 2, 2.55, "both workers train", size=9)
    mark(c, 2.55, "checkpoint c", 0.0)
    mark(k, 2.55, "kill worker 1", 0.4)
    mark(stop, 2.55, "worker 0 stops", 0.0)
    label(ax, 0.1, 1.05, "after the\nrestart", ha="left", bold=True)
    box(ax, c, 0.85, stop - c, 0.4, "redone", role="data", size=8.5)
    box(ax, stop, 0.85, right - stop, 0.4, "both workers train on", size=9)
    arrow(ax, (c, 2.2), (c, 1.45), colour="muted")
    label(ax, c - 0.1, 1.75, "restore c", size=8.5, ha="right")
    mark(right, 1.05, "", 0.0)
    label(ax, right, 1.6, "last checkpoint", size=8.5, ha="right")
    label(ax, (c + stop) / 2, 0.5, "the same losses as before", size=8.5)
    ax.plot([left, right], [0.2, 0.2], color=COLOURS["muted"], lw=1)
    label(ax, left, 0.05, "step 0", size=8, muted=True)
    label(ax, right, 0.05, "last step", size=8, muted=True, ha="right")
