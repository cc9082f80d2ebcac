"""Notebook 02's diagrams: a graph placed on three devices, and soft placement."""

from tools.diagrams import diagram
from tools.diagrams.draw import arrow, box, canvas, label


@diagram("two-device-sum", "02", alt=(
    "The two-device program as a placed graph. The inputs a and b feed two MatMul nodes, one "
    "pinned to device 1 and one to device 2; both partial products flow to an AddN node "
    "pinned to the CPU, which returns the sum. Every edge that crosses from one device to "
    "another becomes a _Send on one side and a _Recv on the other when the graph is "
    "partitioned."), size=(8.5, 3.4))
def two_device_sum(fig):
    ax = canvas(fig, 10.0, 4.0)
    box(ax, 0.1, 1.55, 1.8, 0.9, "a (2×3), b (3×2)\non /CPU:0", role="data", size=9.5)
    for i, y in enumerate((2.8, 0.4)):
        box(ax, 3.3, y, 2.6, 0.8, f"MatMul\non device {i + 1}", size=10)
        arrow(ax, (1.9, 2.0), (3.3, y + 0.4), "_Send → _Recv" if i == 0 else "",
              offset=(-0.55, 0.2))
        arrow(ax, (5.9, y + 0.4), (7.3, 2.0), "_Send → _Recv" if i == 0 else "",
              offset=(0.6, 0.2))
    box(ax, 7.3, 1.55, 2.6, 0.9, "AddN\non the CPU (/CPU:0)", role="host", size=10)
    label(ax, 8.6, 1.1, "the sum of the two products:\n[[44, 56], [98, 128]]", size=9, muted=True)
    label(ax, 4.6, 2.0, "each device runs its own\npiece of the graph", size=9, muted=True)


@diagram("soft-placement", "02", alt=(
    "An operation pinned to /GPU:2, a device this machine does not have. With soft placement "
    "off, the placer refuses and the program stops with an error. With soft placement on, the "
    "placer moves the operation to a device that can run it, such as /CPU:0, and the program "
    "runs. A TensorFlow 1 Session has it off unless allow_soft_placement=True; TensorFlow 2 "
    "has it on by default."), size=(8.5, 3.0))
def soft_placement(fig):
    ax = canvas(fig, 10.0, 3.6)
    box(ax, 0.1, 1.35, 2.9, 0.9, "MatMul asks for\n/GPU:2 (not here)", role="data", size=10)
    box(ax, 4.4, 2.35, 5.5, 0.9, "soft placement off: an error\n"
        "(\"Cannot assign a device\", \"Could not satisfy ...\")", role="idle", size=9.5)
    box(ax, 4.4, 0.35, 5.5, 0.9, "soft placement on: the placer moves it\n"
        "to a device that can run it (such as /CPU:0)", role="host", size=9.5)
    arrow(ax, (3.0, 1.8), (4.4, 2.8))
    arrow(ax, (3.0, 1.8), (4.4, 0.8))
    label(ax, 7.15, 1.8, "TF1 Session: off, unless allow_soft_placement=True · TF2: on",
          size=9, muted=True)
