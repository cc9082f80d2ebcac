"""Notebook 01's diagrams: the parts of a device string, and logical devices made from one."""

from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, arrow, box, canvas, label


@diagram("device-string", "01", alt=(
    "The fully qualified device string /job:localhost/replica:0/task:0/device:GPU:1 cut into its "
    "four parts: the job (a group of processes; localhost means a process outside any "
    "cluster), the replica (which copy of the job, almost always 0), the task (which process "
    "of the job) and the device (type and index inside that process). The short forms /gpu:1 "
    "and GPU:1 name only the last part and mean this process."), size=(8.5, 2.8))
def device_string(fig):
    ax = canvas(fig, 10.0, 3.3)
    parts = (("/job:localhost", 2.4, "job: a group of\nprocesses (localhost:\nnot in a cluster)"),
             ("/replica:0", 1.9, "replica: which\ncopy of the job\n(almost always 0)"),
             ("/task:0", 1.9, "task: which\nprocess of\nthe job"),
             ("/device:GPU:1", 2.4, "device: type and\nindex inside\nthat process"))
    x = 0.45
    for text, width, meaning in parts:
        role = "device" if text.startswith("/device") else "host"
        box(ax, x, 2.2, width, 0.6, text, role=role, size=10)
        arrow(ax, (x + width / 2, 2.2), (x + width / 2, 1.75), colour="muted")
        label(ax, x + width / 2, 1.2, meaning, size=8.5)
        x += width + 0.15
    label(ax, 0.6, 0.35, "short forms:  /gpu:1  ·  /GPU:1  ·  GPU:1  ·  /device:GPU:1   "
          "→  only the last part, in this process", ha="left", size=9.5)
    label(ax, 5.0, 3.1, "one device, fully qualified (the form every log prints)", size=10,
          bold=True)


@diagram("logical-devices", "01", alt=(
    "Left: one physical CPU, /physical_device:CPU:0, split into two logical CPUs named /CPU:0 "
    "and /CPU:1, whose full names are /job:localhost/replica:0/task:0/device:CPU:0 and "
    "device:CPU:1; both run on the same cores. Right: one physical GPU split into two virtual "
    "GPUs /GPU:0 and /GPU:1, each with a memory limit, sharing the card's compute. Operations "
    "run on logical devices; the split is fixed when the runtime starts."), size=(8.5, 3.4))
def logical_devices(fig):
    ax = canvas(fig, 10.0, 4.0)
    for x0, kind, role, note in ((0.1, "CPU", "host", "the same cores"),
                                 (5.1, "GPU", "device", "one card's compute,\n"
                                  "a memory limit each")):
        box(ax, x0 + 0.6, 3.0, 3.6, 0.7, f"physical: /physical_device:{kind}:0", role=role,
            size=9.5, bold=True)
        for i in range(2):
            x = x0 + i * 2.45
            arrow(ax, (x0 + 2.4, 3.0), (x + 1.1, 2.2), colour="muted")
            name = "logical" if kind == "CPU" else "virtual"
            box(ax, x, 1.3, 2.25, 0.9, f"{name} /{kind}:{i}", role=role, size=10)
            label(ax, x + 1.12, 0.95, f".../task:0/device:{kind}:{i}", size=8)
        label(ax, x0 + 2.4, 0.35, f"both share {note}" if kind == "CPU" else f"share {note}",
              size=8.5, muted=True)
    ax.plot([5.0, 5.0], [0.2, 3.8], color=COLOURS["muted"], linewidth=0.8, linestyle=":")
