"""Notebook 09's diagrams: who contacts whom in a ps-lite cluster, and one key's push and pull
through a dist_sync kvstore."""

from tools.diagrams import diagram
from tools.diagrams.draw import arrow, box, canvas, label


@diagram("pslite-roles", "09", alt=(
    "A ps-lite cluster of one scheduler, two servers and two workers, each a process "
    "configured only by DMLC_* variables. First every server and worker contacts the "
    "scheduler at DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT to register; once all "
    "DMLC_NUM_SERVER servers and DMLC_NUM_WORKER workers have, the scheduler sends everyone "
    "the list of nodes and each worker its rank. Then workers push to and pull from the "
    "servers directly; workers never talk to each other."), size=(8.5, 3.9))
def pslite_roles(fig):
    ax = canvas(fig, 10.0, 4.6)
    box(ax, 3.4, 3.3, 3.2, 1.1, "", role="server")
    label(ax, 5.0, 4.1, "scheduler", bold=True)
    label(ax, 5.0, 3.75, "listens at DMLC_PS_ROOT_URI :", size=8)
    label(ax, 5.0, 3.5, "DMLC_PS_ROOT_PORT", size=8)
    for x, role, names, note in ((0.2, "server", ("server 0", "server 1"), "the keys, split"),
                                 (6.8, "device", ("worker, rank 0", "worker, rank 1"),
                                  "your training program")):
        box(ax, x, 0.65, 3.0, 2.3, "", role=role)
        for k, name in enumerate(names):
            box(ax, x + 0.2, 1.85 - 0.85 * k, 2.6, 0.6, name, role="white", size=9, bold=True)
        label(ax, x + 1.5, 2.72, note, size=8.5, muted=True)
    arrow(ax, (2.0, 3.0), (3.35, 3.75), both=True)
    arrow(ax, (8.0, 3.0), (6.65, 3.75), both=True)
    label(ax, 1.3, 3.85, "1. register", size=8.5)
    label(ax, 1.3, 3.6, "2. everyone's address", size=8.5)
    label(ax, 8.7, 3.85, "1. register", size=8.5)
    label(ax, 8.7, 3.6, "2. addresses, a rank", size=8.5)
    arrow(ax, (6.75, 1.65), (3.25, 1.65), both=True)
    label(ax, 5.0, 1.95, "3. push and pull", size=9, bold=True)
    label(ax, 5.0, 1.3, "each worker to every server;", size=8.5, muted=True)
    label(ax, 5.0, 1.05, "workers never talk to each other", size=8.5, muted=True)
    label(ax, 5.0, 0.25, "each process: DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, "
          "DMLC_NUM_SERVER, DMLC_NUM_WORKER, DMLC_NODE_HOST", size=8, muted=True)


@diagram("kvstore-push-pull", "09", alt=(
    "One key, w, on a server of a dist_sync kvstore, in three steps. 1: worker 0 pushes "
    "g0 and worker 1 pushes g1. 2: the server waits until every worker's push for this "
    "round has arrived, adds them, and hands the sum to its updater: without an optimizer "
    "the stored value becomes g0 + g1, with one it takes an optimizer step. 3: every "
    "worker's pull returns the same stored value. Under dist_async the server would update "
    "at each push, without waiting, and needs an optimizer to do so."), size=(8.5, 3.4))
def kvstore_push_pull(fig):
    ax = canvas(fig, 10.0, 4.0)
    for k in range(2):
        y = 2.45 - 1.5 * k
        box(ax, 0.1, y, 1.9, 0.8, f"worker {k}", role="device", bold=True)
        arrow(ax, (2.05, y + 0.4), (3.75, 2.0 + 0.15 * (1 - 2 * k)), f"push g{k}",
              offset=(-0.1, 0.25 - 0.75 * k))
        box(ax, 8.0, y, 1.9, 0.8, f"worker {k}", role="device", bold=True)
        arrow(ax, (6.25, 2.0 + 0.15 * (1 - 2 * k)), (7.95, y + 0.4), "pull: g0 + g1",
              offset=(0.1, 0.25 - 0.75 * k))
    box(ax, 3.8, 0.85, 2.4, 2.3, "", role="server")
    label(ax, 5.0, 2.85, "server: key w", bold=True)
    label(ax, 5.0, 2.45, "waits for every", size=8.5)
    label(ax, 5.0, 2.2, "worker's push", size=8.5)
    box(ax, 4.05, 1.35, 1.9, 0.55, "g0 + g1", role="data", size=9)
    label(ax, 5.0, 1.1, "→ updater", size=8.5)
    label(ax, 1.05, 3.65, "1. push", bold=True)
    label(ax, 5.0, 3.65, "2. sum, update", bold=True)
    label(ax, 8.95, 3.65, "3. pull", bold=True)
    label(ax, 5.0, 0.5, "no optimizer: stored value = the sum; with one: an optimizer step",
          size=8.5, muted=True)
    label(ax, 5.0, 0.15, "dist_async: an update at every push, no waiting (needs an optimizer)",
          size=8.5, muted=True)
