"""Notebook 08's diagram: TensorFlow 1's between-graph replication, one ps and three workers."""

from tools.diagrams import diagram
from tools.diagrams.draw import arrow, box, canvas, label


@diagram("tf1-between-graph", "08", alt=(
    "One parameter server task, /job:ps/task:0, holds every variable and only serves, "
    "blocked in server.join(). Below it three worker tasks each build their own copy of the "
    "graph: replica_device_setter puts the graph's variables on /job:ps and its operations "
    "on the worker's own /job:worker/task:i. Every worker reads the variables and sends its "
    "updates to the ps over gRPC, without waiting for the others. Worker 0 is the chief: its "
    "Supervisor initialises the variables while workers 1 and 2 wait for that."),
    size=(8.5, 4.0))
def tf1_between_graph(fig):
    ax = canvas(fig, 10.0, 4.7)
    box(ax, 2.7, 3.35, 4.6, 1.15, "", role="server")
    label(ax, 5.0, 4.2, "ps-0   /job:ps/task:0", bold=True)
    label(ax, 5.0, 3.85, "variables: global_step, w_conv, b_conv, w_out, b_out", size=9)
    label(ax, 5.0, 3.55, "server.join(): it only serves", size=9, muted=True)
    for i in range(3):
        x = 0.25 + 3.3 * i
        box(ax, x, 0.55, 3.0, 1.75, "", role="device")
        label(ax, x + 1.5, 2.02, f"worker-{i}   /job:worker/task:{i}", size=9.5, bold=True)
        label(ax, x + 1.5, 1.68, "its own graph, placed by", size=8.5)
        label(ax, x + 1.5, 1.46, "replica_device_setter:", size=8.5)
        box(ax, x + 0.15, 0.72, 1.3, 0.55, "variables on\n/job:ps", role="server", size=8)
        box(ax, x + 1.55, 0.72, 1.3, 0.55, f"ops on\n/job:worker/task:{i}", role="data",
            size=7.5)
        arrow(ax, (x + 1.5, 2.33), (3.4 + 1.6 * i, 3.3), both=True)
        label(ax, x + 1.5, 0.3, "chief: Supervisor runs init_op" if i == 0 else
              "waits until the chief has initialised", size=8.5, muted=i != 0, bold=i == 0)
    label(ax, 1.3, 2.85, "read variables,", size=9)
    label(ax, 1.3, 2.6, "send updates (gRPC)", size=9)
    label(ax, 8.75, 3.05, "asynchronous: no worker", size=9, muted=True)
    label(ax, 8.75, 2.8, "waits for another", size=9, muted=True)
