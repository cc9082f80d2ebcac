"""Notebook 07's diagrams: a ParameterServerStrategy cluster with this kernel as its
coordinator; what a worker's death and a parameter server's death each cost."""

from tools.diagrams import diagram
from tools.diagrams.draw import arrow, box, canvas, label


@diagram("pss-cluster", "07", alt=(
    "This notebook's kernel, the coordinator (chief-0), holds a queue of scheduled steps and "
    "hands each to whichever of worker-0 and worker-1 is free; a result comes back as a "
    "RemoteValue. The workers read the weights from two parameter servers and send their "
    "updates back to them. The variables were placed in turn, the first, third and fifth "
    "on ps-0, the second, fourth and sixth on ps-1, and each of Adam's slots beside its "
    "weight."), size=(8.5, 3.6))
def pss_cluster(fig):
    ax = canvas(fig, 10.0, 4.2)
    box(ax, 0.1, 1.3, 2.5, 1.6, "", role="host")
    label(ax, 1.35, 2.6, "coordinator", bold=True)
    label(ax, 1.35, 2.25, "this kernel, chief-0", size=9, muted=True)
    for k in range(3):
        box(ax, 0.3 + k * 0.72, 1.5, 0.62, 0.45, "step", role="data", size=8)
    label(ax, 1.35, 1.15, "queue of scheduled steps", size=8, muted=True)
    for i, y in enumerate((2.75, 0.75)):
        box(ax, 4.1, y, 1.7, 0.8, f"worker-{i}", role="device", bold=True)
        arrow(ax, (2.65, 2.1), (4.05, y + 0.4), both=True)
        box(ax, 7.6, y, 2.3, 0.8, "", role="server")
        label(ax, 8.75, y + 0.55, f"ps-{i}", bold=True)
        label(ax, 8.75, y + 0.22, ("variables 1, 3, 5 ...", "variables 2, 4, 6 ...")[i]
              + " + slots", size=8)
    label(ax, 3.05, 3.3, "schedule(step)", size=9)
    label(ax, 3.4, 0.95, "RemoteValue", size=9)
    for wy in (3.15, 1.15):
        for py in (3.15, 1.15):
            arrow(ax, (5.85, wy), (7.55, py), both=True, colour="muted")
    label(ax, 6.7, 3.95, "read weights, send updates", size=9)
    label(ax, 8.75, 0.33, "placed in turn, each Adam\nslot beside its weight", size=8.5, muted=True)
    label(ax, 4.95, 0.35, "no worker waits for another", size=9, muted=True)


@diagram("pss-failures", "07", alt=(
    "Two panels. On the left a worker dies: the coordinator puts the step worker-1 was "
    "running back in its queue and worker-0 runs it; training goes on, and a step may run "
    "twice. On the right a parameter server dies: the variables it held are gone, so "
    "join() raises UnavailableError; the program restarts ps-1, builds a new strategy and "
    "coordinator, and restores every variable, on both parameter servers, from the last "
    "checkpoint, losing the updates made after it."), size=(8.5, 3.6))
def pss_failures(fig):
    ax = canvas(fig, 10.0, 4.2)
    label(ax, 2.4, 4.0, "a worker dies", bold=True)
    box(ax, 0.1, 2.2, 1.7, 0.9, "coordinator", role="host", size=9)
    box(ax, 3.0, 3.0, 1.6, 0.7, "worker-0", role="device", size=9)
    box(ax, 3.0, 1.7, 1.6, 0.7, "worker-1  ✗", role="idle", size=9, dashed=True)
    arrow(ax, (1.85, 2.9), (2.95, 3.35), "step again", offset=(-0.1, 0.1), size=8)
    arrow(ax, (2.95, 2.0), (1.85, 2.4), "connection lost", colour="muted", size=8,
          offset=(-0.35, -0.5))
    label(ax, 2.4, 1.0, "training goes on without it", size=9)
    label(ax, 2.4, 0.65, "a step may run twice", size=9, muted=True)
    ax.plot([5.0, 5.0], [0.2, 4.1], color="#999999", linewidth=1)
    label(ax, 7.5, 4.0, "a parameter server dies", bold=True)
    box(ax, 5.6, 2.9, 1.3, 0.6, "ps-0", role="server", size=9)
    box(ax, 5.6, 2.0, 1.3, 0.6, "ps-1  ✗", role="idle", size=9, dashed=True)
    box(ax, 5.6, 0.4, 1.3, 0.8, "checkpoint\n(files)", role="host", size=9)
    arrow(ax, (6.45, 1.25), (6.45, 1.95))  # to ps-1, and round its left side to ps-0
    arrow(ax, (5.75, 1.25), (5.75, 2.85), curve=-0.4)
    label(ax, 7.1, 1.5, "3. restore all, on both", size=9, ha="left")
    for k, text in enumerate(("join() raises UnavailableError",
                              "1. restart ps-1: a new, empty process",
                              "2. a new strategy and coordinator")):
        label(ax, 7.1, 3.2 - 0.5 * k, text, size=9, ha="left")
    label(ax, 7.1, 0.8, "updates since the checkpoint: lost", size=9, muted=True, ha="left")
