"""Notebook 03's diagrams: where arrays live and how copies move them; MXNet's engine queue."""

from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, arrow, box, canvas, label


def lane(ax, y, name, spans, height=0.5, x0=1.5, size=9):
    """One row of a timeline: ``name`` at the left, then ``(start, width, text, role)`` bars."""
    label(ax, x0 - 0.15, y + height / 2, name, size=size, ha="right")
    for start, width, text, role in spans:
        box(ax, x0 + start, y, width, height, text, role=role, size=size - 1)


def mark(ax, x, y0, y1, text, size=8.5, ha="center"):
    """A dashed vertical line from y0 to y1 with ``text`` above it."""
    ax.plot([x, x], [y0, y1], linestyle="--", color=COLOURS["muted"], linewidth=1)
    label(ax, x, y1 + 0.18, text, size=size, muted=True, ha=ha)


@diagram("copy-paths", "03", alt=(
    "The host's memory, which both cpu(0) and cpu(1) name, is one box; each GPU has its own "
    "memory, gpu(0) and gpu(1). A copy from the host to a GPU crosses the PCIe link, a copy "
    "between GPUs crosses NVLink or PCIe. Inside gpu(1), y.as_in_context(gpu(1)) returns y "
    "itself, with no copy, while y.copyto(gpu(1)) makes a second buffer beside it."),
    size=(8.5, 3.6))
def copy_paths(fig):
    ax = canvas(fig, 10.0, 4.2)
    box(ax, 0.2, 0.5, 3.2, 3.2, role="host")
    label(ax, 1.8, 3.4, "host memory", bold=True)
    label(ax, 1.8, 1.2, "cpu(0) and cpu(1): two names", size=9, muted=True)
    label(ax, 1.8, 0.9, "for this one memory", size=9, muted=True)
    box(ax, 1.2, 2.55, 1.2, 0.6, "x", role="data")
    for y, name in ((2.4, "gpu(0) memory"), (0.3, "gpu(1) memory")):
        box(ax, 5.4, y, 4.4, 1.5, role="device")
        label(ax, 7.6, y + 1.25, name, bold=True)
    box(ax, 5.7, 2.55, 1.1, 0.6, "copy of x", role="data", size=9)
    arrow(ax, (2.45, 2.85), (5.65, 2.85))
    label(ax, 4.4, 3.1, "a copy over PCIe", size=9)
    label(ax, 4.4, 2.55, "x.copyto(gpu(0)) or", size=8.5, muted=True)
    label(ax, 4.4, 2.25, "x.as_in_context(gpu(0))", size=8.5, muted=True)
    arrow(ax, (7.6, 2.35), (7.6, 1.85), "", both=True)
    label(ax, 7.75, 2.1, "a copy over NVLink or PCIe", size=9, ha="left")
    box(ax, 5.7, 0.45, 0.9, 0.55, "y", role="data")
    box(ax, 8.6, 0.45, 0.9, 0.55, "new", role="data")
    arrow(ax, (6.65, 0.72), (8.55, 0.72), "y.copyto(gpu(1))", size=8.5)
    label(ax, 6.15, 1.28, "y.as_in_context(gpu(1)) is y: no copy", size=8.5, ha="left")


@diagram("engine-queue", "03", alt=(
    "A timeline with two rows. The Python row pushes a product into MXNet's engine and gets "
    "control back at once; then it calls waitall and waits. The engine row runs the product "
    "for much longer. A timer stopped right after the push measures only the queueing; a "
    "timer stopped after waitall measures the product."), size=(8.5, 2.6))
def engine_queue(fig):
    ax = canvas(fig, 10.0, 2.6)
    lane(ax, 1.4, "Python", [(0.0, 0.8, "dot(a, b)", "host"),
                             (0.8, 7.0, "waitall(): Python waits", "idle")])
    lane(ax, 0.4, "engine", [(0.8, 7.0, "the product runs", "device")])
    mark(ax, 2.3, 0.25, 2.05, "a timer stopped here: only the queueing", ha="left")
    mark(ax, 9.3, 0.25, 2.05, "after waitall(): the real time", ha="right")
    arrow(ax, (2.2, 1.4), (2.4, 0.95), colour="muted")


@diagram("fetch-every-step", "03", alt=(
    "Two timelines of three training steps, each step a product and its mean (the loss) on "
    "the engine and a pause in Python. Above, the losses stay on the device: Python queues a "
    "step's work and goes on to its pause while the engine computes, so the two overlap. "
    "Below, asnumpy() in every step: Python waits for each step's work before its pause, so "
    "the two take turns and the same steps end later."), size=(8.5, 3.6))
def fetch_every_step(fig):
    ax = canvas(fig, 11.0, 4.3)
    label(ax, 0.1, 4.05, "losses kept on the device", bold=True, ha="left")
    lane(ax, 3.2, "Python", [(1.0 * k * 2, 2.0, "pause", "host") for k in range(3)])
    lane(ax, 2.5, "engine", [(1.0 * k * 2, 1.0, "dot, mean", "device") for k in range(3)])
    label(ax, 0.1, 1.85, "asnumpy() every step", bold=True, ha="left")
    lane(ax, 1.0, "Python", [(3.0 * k, 1.0, "wait", "idle") for k in range(3)]
         + [(3.0 * k + 1.0, 2.0, "pause", "host") for k in range(3)])
    lane(ax, 0.3, "engine", [(3.0 * k, 1.0, "dot, mean", "device") for k in range(3)])
    mark(ax, 7.5, 2.4, 3.75, "done")
    ax.plot([10.5, 10.5], [0.2, 1.6], linestyle="--", color=COLOURS["muted"], linewidth=1)
    label(ax, 10.5, 1.78, "done", size=8.5, muted=True)
