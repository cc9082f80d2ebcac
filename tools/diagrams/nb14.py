"""Notebook 14's diagrams: what each device holds under ZeRO's stages, and which layer
outputs recomputation keeps."""

from tools.diagrams import diagram
from tools.diagrams.draw import box, canvas, label

KINDS = (("weights", "device"), ("gradients", "data"), ("Adam states", "server"))


@diagram("zero-partitions", "14", alt=(
    "A grid of what each of 4 devices holds under plain data parallelism and ZeRO stages 1, 2 "
    "and 3. Each cell has three bars: weights, gradients and Adam states, each cut into 4 "
    "chunks. Under data parallelism every device holds every chunk of all three. Stage 1 "
    "keeps only device i's chunk of Adam's states, stage 2 also only its chunk of the "
    "gradients, stage 3 also only its chunk of the weights; the chunks a device does not "
    "hold are drawn empty."), size=(9.0, 4.4))
def zero_partitions(fig):
    n = 4
    ax = canvas(fig, 11.0, 5.3)
    rows = [("data parallelism", 0), ("ZeRO-1", 1), ("ZeRO-2", 2), ("ZeRO-3 (FSDP)", 3)]
    for i in range(n):
        label(ax, 2.84 + i * 2.05, 5.1, f"device {i}", bold=True, size=9)
    for r, (name, stage) in enumerate(rows):
        top = 4.85 - r * 1.1
        label(ax, 0.1, top - 0.45, name, ha="left", size=9, bold=True)
        for i in range(n):
            for k, (_kind, role) in enumerate(KINDS):
                sharded = stage >= 3 - k  # Adam states from stage 1, gradients 2, weights 3
                for chunk in range(n):
                    kept = not sharded or chunk == i
                    box(ax, 2.0 + i * 2.05 + chunk * 0.42, top - 0.3 * (k + 1), 0.38, 0.24,
                        role=role if kept else "white")
    for k, (kind, role) in enumerate(KINDS):
        box(ax, 2.0 + k * 2.3, 0.1, 0.38, 0.24, role=role)
        label(ax, 2.5 + k * 2.3, 0.22, kind, ha="left", size=9)
    box(ax, 8.9, 0.1, 0.38, 0.24, role="white")
    label(ax, 9.4, 0.22, "not held", ha="left", size=9, muted=True)



@diagram("recomputation", "14", alt=(
    "Two rows of eight layers. Without recomputation the forward pass keeps every layer's "
    "output for the backward pass: eight kept activations. With recomputation in blocks of "
    "two layers, only the input of each block is kept, four activations; during the backward "
    "pass each block's forward is run again from its kept input, one block at a time, so the "
    "outputs inside the block being rebuilt are held only while its backward runs."),
    size=(9.0, 3.6))
def recomputation(fig):
    ax = canvas(fig, 11.0, 4.4)
    layers, k = 8, 2
    for row, (title, keep) in enumerate((
            ("no recomputation: every output kept", lambda i: True),
            (f"blocks of {k}: only each block's input kept", lambda i: i % k == 0))):
        top = 3.9 - row * 1.9
        label(ax, 0.1, top, title, ha="left", bold=True, size=10)
        for i in range(layers):
            x = 0.5 + i * 1.25
            box(ax, x, top - 0.75, 1.0, 0.45, f"layer {i + 1}", size=8)
            kept = keep(i)
            rebuilt = not kept and row == 1 and i // k == 2
            box(ax, x + 0.2, top - 1.35, 0.6, 0.4, "kept" if kept else
                ("rebuilt" if rebuilt else ""), role="data" if kept else
                ("host" if rebuilt else "white"), dashed=not kept, size=7)
        if row == 1:
            for b in range(layers // k):
                x = 0.5 + b * k * 1.25
                ax.plot([x, x, x + k * 1.25 - 0.25, x + k * 1.25 - 0.25],
                        [top - 0.2, top - 0.15, top - 0.15, top - 0.2], color="#666666",
                        linewidth=1)
    label(ax, 5.5, 0.05, "the small boxes: each layer's input as the backward pass needs it; "
          "orange: the block whose backward runs now, rebuilt from its kept input",
          muted=True, size=8)
