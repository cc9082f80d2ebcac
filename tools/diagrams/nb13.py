"""Notebook 13's diagrams: where training memory goes, layers on two devices, the pipeline
schedules and a product split by columns."""

from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, arrow, box, canvas, label


@diagram("training-memory", "13", alt=(
    "One device's memory during training, as a bar of four parts: the weights, 4 bytes per "
    "parameter; the gradients, 4 bytes per parameter; Adam's two states, 8 bytes per "
    "parameter; and the activations, 4 bytes per value the forward pass keeps, times the "
    "batch. A brace marks the first three as fixed by the model, 16 bytes per parameter, "
    "and the activations as growing with the batch."), size=(8.5, 2.8))
def training_memory(fig):
    ax = canvas(fig, 10.0, 3.3)
    parts = [("weights", "4 B × params", 1.7, "device"),
             ("gradients", "4 B × params", 1.7, "data"),
             ("Adam states", "8 B × params", 3.0, "server"),
             ("activations", "4 B × kept values\n× batch", 3.0, "host")]
    x = 0.3
    for name, size, width, role in parts:
        box(ax, x, 1.1, width, 0.9, f"{name}\n{size}", role=role, size=9,
            dashed=name == "activations")
        x += width
    ax.plot([0.3, 0.3, 6.7, 6.7], [2.2, 2.35, 2.35, 2.2], color=COLOURS["ink"], linewidth=1)
    label(ax, 3.5, 2.65, "fixed by the model: 16 bytes per parameter (float32, Adam)", size=9)
    ax.plot([6.7, 6.7, 9.7, 9.7], [2.2, 2.35, 2.35, 2.2], color=COLOURS["ink"], linewidth=1)
    label(ax, 8.2, 2.65, "grow with the batch and the depth", size=9)
    label(ax, 5.0, 0.55, "one device's memory during a training step (data parallelism: "
          "all of it on every replica)", muted=True, size=9)


@diagram("model-parallel", "13", alt=(
    "A model of four layers split over two devices: layers 1 and 2 on device 0, layers 3 and "
    "4 on device 1. The forward pass sends the activations of layer 2 from device 0 to "
    "device 1; the backward pass sends their gradient back. Below, a time line shows the "
    "devices taking turns: device 0 runs the forward, then waits, then the backward; device "
    "1 waits, runs its forward and backward, then waits."), size=(8.5, 3.6))
def model_parallel(fig):
    ax = canvas(fig, 10.3, 3.9)
    for x0, device, layers in ((0.3, "device 0", (1, 2)), (5.9, "device 1", (3, 4))):
        box(ax, x0, 2.0, 3.8, 1.7, role="#f7f7f7")
        label(ax, x0 + 1.9, 3.45, device, bold=True)
        for k, layer in enumerate(layers):
            box(ax, x0 + 0.25 + 1.8 * k, 2.25, 1.5, 0.8, f"layer {layer}", size=9)
    arrow(ax, (3.85, 2.8), (6.15, 2.8), "activations", size=9)
    arrow(ax, (6.15, 2.5), (3.85, 2.5), "their gradient", size=9, offset=(0.0, -0.45))
    arrow(ax, (2.2, 0.12), (9.6, 0.12), colour="muted")
    label(ax, 9.75, 0.12, "time", ha="left", size=9, muted=True)
    slots = [("F", None, None, "B"), (None, "F", "B", None)]
    for row, (device, steps) in enumerate(zip(("device 0", "device 1"), slots, strict=True)):
        y = 0.9 - 0.55 * row
        label(ax, 1.3, y + 0.2, device, size=9)
        for k, step in enumerate(steps):
            role = {"F": "device", "B": "data", None: "idle"}[step]
            text = {"F": "forward", "B": "backward", None: "idle"}[step]
            box(ax, 2.2 + 1.9 * k, y, 1.8, 0.42, text, role=role, size=8)


def slot_schedule(p, m, order):
    """Each stage's steps in slots of equal length: `order(s)` is stage s's string of "F" and
    "B"; a forward needs the stage before's forward of the same micro-batch, a backward the
    stage after's backward (the last stage's, its newest forward). Returns
    {(stage, slot): (phase, micro-batch)}."""
    done, at, step, saved, fed = {}, {}, [0] * p, [[] for _ in range(p)], [0] * p
    slot = 0
    while any(step[s] < len(order(s)) for s in range(p)):
        ran = []
        for s in range(p):
            if step[s] == len(order(s)):
                continue
            if order(s)[step[s]] == "F":
                j, ready = fed[s], s == 0 or done.get((s - 1, fed[s], "F"), slot) < slot
            else:
                waiting = [j for j in saved[s]
                           if s + 1 == p or done.get((s + 1, j, "B"), slot) < slot]
                j = max(saved[s]) if s + 1 == p else (min(waiting) if waiting else None)
                ready = j is not None
            if ready:
                ran.append((s, order(s)[step[s]], j))
        for s, phase, j in ran:
            done[s, j, phase], at[s, slot] = slot, (phase, j)
            step[s] += 1
            if phase == "F":
                fed[s] += 1
                saved[s].append(j)
            else:
                saved[s].remove(j)
        slot += 1
    return at


@diagram("pipeline-schedules", "13", alt=(
    "Two slot charts of a pipeline of 4 stages and 6 micro-batches, one row per stage, one "
    "box per step: forwards light blue, backwards light red, each numbered by its "
    "micro-batch, idle slots grey. In GPipe's order every stage runs its 6 forwards, then its "
    "6 backwards; in 1F1B's order stage s runs 3 - s forwards ahead, then alternates a "
    "forward and a backward. Both charts are 18 slots long with the same grey bubble at the "
    "ramps, but GPipe's stages hold up to 6 micro-batches' activations, 1F1B's at most 4, "
    "3, 2 and 1."), size=(9.5, 5.0))
def pipeline_schedules(fig):
    p, m = 4, 6
    orders = {"GPipe: every forward, then every backward":
              lambda s: "F" * m + "B" * m,
              "1F1B: p - s - 1 forwards ahead, then one forward, one backward":
              lambda s: "F" * (p - s - 1) + "FB" * (m - p + s + 1) + "B" * (p - s - 1)}
    ax = canvas(fig, 11.0, 5.8)
    cell = 0.45
    for k, (title, order) in enumerate(orders.items()):
        top = 5.35 - k * 2.85
        label(ax, 0.1, top, title, ha="left", bold=True, size=10)
        at = slot_schedule(p, m, order)
        slots = 1 + max(t for _, t in at)
        for s in range(p):
            y = top - 0.55 - s * 0.5
            label(ax, 0.75, y + 0.2, f"stage {s}", size=9)
            for t in range(slots):
                phase, j = at.get((s, t), (None, None))
                role = {"F": "device", "B": "data", None: "idle"}[phase]
                box(ax, 1.45 + t * cell, y, cell - 0.06, 0.4, "" if j is None else str(j),
                    role=role, size=8)
            most, kept = 0, 0
            for t in range(slots):
                phase, _ = at.get((s, t), (None, None))
                kept += {"F": 1, "B": -1, None: 0}[phase]
                most = max(most, kept)
            label(ax, 1.45 + slots * cell + 0.15, y + 0.2, f"holds {most}", ha="left", size=9,
                  muted=True)
    label(ax, 5.5, 0.12, "blue: forward · red: backward · grey: idle (the bubble) · "
          "numbers: micro-batches", muted=True, size=9)


@diagram("tensor-parallel", "13", alt=(
    "The product Y = X W split by columns over two devices. X is whole on both devices. W is "
    "cut into a left half W0, held by device 0, and a right half W1, held by device 1. "
    "Device 0 computes X W0, the left half of Y's columns, device 1 computes X W1, the "
    "right half; the two halves are gathered side by side into Y."), size=(8.5, 3.0))
def tensor_parallel(fig):
    ax = canvas(fig, 10.0, 3.5)
    box(ax, 0.4, 0.9, 1.2, 1.8, "X\n(all of it\non both)", role="#f7f7f7", size=9)
    label(ax, 2.0, 1.8, "×", size=16)
    box(ax, 2.4, 0.9, 0.9, 1.8, "W₀", role="device")
    box(ax, 3.3, 0.9, 0.9, 1.8, "W₁", role="server")
    label(ax, 4.6, 1.8, "=", size=16)
    box(ax, 5.0, 0.9, 0.9, 1.8, "Y₀", role="device")
    box(ax, 5.9, 0.9, 0.9, 1.8, "Y₁", role="server")
    label(ax, 3.3, 3.0, "W split by columns", size=9, muted=True)
    label(ax, 5.9, 3.0, "Y gathered", size=9, muted=True)
    box(ax, 7.4, 1.9, 2.4, 0.75, "device 0:  Y₀ = X W₀", role="device", size=9)
    box(ax, 7.4, 0.95, 2.4, 0.75, "device 1:  Y₁ = X W₁", role="server", size=9)
    label(ax, 5.0, 0.35, "by rows instead: each device multiplies half of X's columns by half "
          "of W's rows, and the two partial Y are summed", muted=True, size=9)
