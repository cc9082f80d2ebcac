"""Notebook 11's diagrams: the naive all-reduce, the ring's steps chunk by chunk, and fusion
of many small tensors into one buffer."""

from tools.diagrams import diagram
from tools.diagrams.draw import COLOURS, arrow, box, canvas, label


@diagram("naive-allreduce", "11", alt=(
    "The naive all-reduce on four devices in two phases. First devices 1, 2 and 3 each send "
    "their gradient to device 0, the root, which adds them to its own. Then the root sends "
    "the sum back to each of the three. The root receives and sends N - 1 gradients; every "
    "other device sends and receives one."), size=(8.5, 3.2))
def naive_allreduce(fig):
    ax = canvas(fig, 10.0, 3.8)
    for x0, title, up in ((0.2, "1. gather and add on the root", True),
                          (5.2, "2. send the sum back", False)):
        label(ax, x0 + 2.3, 3.55, title, bold=True)
        box(ax, x0 + 1.4, 2.45, 1.8, 0.6, "device 0 (root)\n" + ("g0 + g1 + g2 + g3" if up else
            "holds the sum"), role="host", size=9)
        for k in range(3):
            x = x0 + 0.1 + 1.6 * k
            box(ax, x, 0.75, 1.2, 0.5, f"device {k + 1}", size=9)
            ends = ((x + 0.6, 1.28), (x0 + 2.3 + 0.25 * (k - 1), 2.42))
            arrow(ax, *(ends if up else ends[::-1]), text=f"g{k + 1}" if up else "sum",
                  colour="accent" if up else "muted", size=8.5, offset=(0.35 * k - 0.4, 0))
        note = "root receives (N − 1) m" if up else "root sends (N − 1) m"
        label(ax, x0 + 2.3, 0.3, note, size=9.5)


def _ring_states(n):
    """[(title, chunks, sent)]: the contributions chunk c of device i holds after each step,
    and which chunk each device sent in that step (the notebook's ring, on sets)."""
    chunks = [[frozenset({i}) for _ in range(n)] for i in range(n)]
    states = [("start", [row[:] for row in chunks], {})]
    for s in range(n - 1):
        sent = {i: (i - s) % n for i in range(n)}
        arrived = {(i + 1) % n: (c, chunks[i][c]) for i, c in sent.items()}
        for j, (c, x) in arrived.items():
            chunks[j][c] = chunks[j][c] | x
        states.append((f"reduce-scatter {s + 1}", [row[:] for row in chunks], sent))
    for s in range(n - 1):
        sent = {i: (i + 1 - s) % n for i in range(n)}
        arrived = {(i + 1) % n: (c, chunks[i][c]) for i, c in sent.items()}
        for j, (c, x) in arrived.items():
            chunks[j][c] = x
        states.append((f"all-gather {s + 1}", [row[:] for row in chunks], sent))
    return states


def _chunk(ax, x, y, w, h, held, n, changed):
    """One chunk as notebook 11's figure draws it: darker the more devices it sums, its
    devices as digits (``all`` once complete), a red outline when the step changed it."""
    from matplotlib import colormaps  # noqa: PLC0415
    from matplotlib.patches import Rectangle  # noqa: PLC0415

    ax.add_patch(Rectangle((x, y), w, h, facecolor=colormaps["Blues"](0.15 + 0.8 * len(held) / n),
                           edgecolor="red" if changed else "grey", linewidth=2 if changed else 0.6))
    ax.text(x + w / 2, y + h / 2, "all" if len(held) == n else "".join(map(str, sorted(held))),
            ha="center", va="center", fontsize=8.5,
            color="white" if len(held) > n / 2 else COLOURS["ink"])


@diagram("ring-steps", "11", alt=(
    "The ring all-reduce of three devices, each holding its gradient cut into three chunks, "
    "drawn as five rows: the start, two reduce-scatter steps and two all-gather steps. Each "
    "chunk is labelled with the devices whose values it sums, shaded darker the more it "
    "holds, and outlined in red when the step changed it. In every step each device passes "
    "one chunk to the next device round the ring. During reduce-scatter the receiver adds it "
    "to its own copy, so a chunk gathers one more device's values per hop; after two steps "
    "each device holds one complete chunk (all). During all-gather the complete chunks travel "
    "on, replacing the partial ones, until every device holds every chunk complete."),
    size=(8.5, 5.0))
def ring_steps(fig):
    n = 3
    ax = canvas(fig, 10.0, 6.0)
    for i in range(n):
        label(ax, 2.4 + 2.5 * i, 5.75, f"device {i}", bold=True)
        for c in range(n):
            label(ax, 1.85 + 2.5 * i + 0.55 * c, 5.42, f"chunk {c}", muted=True, size=6.5)
    label(ax, 9.95, 5.75, "ring: 0 → 1 → 2 → 0", ha="right", size=9)
    previous = None
    for row, (title, chunks, sent) in enumerate(_ring_states(n)):
        y = 4.85 - 1.05 * row
        label(ax, 0.1, y + 0.22, title, ha="left", size=9)
        for i in range(n):
            for c in range(n):
                _chunk(ax, 1.6 + 2.5 * i + 0.55 * c, y, 0.5, 0.45, chunks[i][c], n,
                       previous is not None and previous[i][c] != chunks[i][c])
        previous = chunks
        if sent:
            what = "adds" if title.startswith("reduce") else "replaces"
            label(ax, 9.95, y + 0.22, f"each sends one chunk\nto the next; it {what}",
                  ha="right", size=7.5, muted=True)
    for y in (4.4, 2.3):
        ax.plot([0.1, 9.9], [y - 0.1, y - 0.1], color=COLOURS["muted"], linewidth=0.6,
                linestyle=":")
    label(ax, 5.0, 0.25, "digits: the devices whose values a chunk sums; darker: more of them; "
          "red outline: changed in this step", muted=True, size=8)


@diagram("fusion", "11", alt=(
    "Two timelines of all-reducing many small gradient tensors. Above, each tensor gets its own "
    "collective, so the fixed cost alpha is paid once per tensor, one after another. Below, "
    "the tensors are first copied into one buffer, the buffer is all-reduced once, paying "
    "alpha once for the same bytes, and the result is split back into the tensors."),
    size=(8.5, 2.8))
def fusion(fig):
    ax = canvas(fig, 10.0, 3.3)
    label(ax, 0.1, 2.75, "one collective per tensor", ha="left", bold=True, size=9.5)
    x = 0.1
    for _ in range(8):
        box(ax, x, 2.0, 0.7, 0.45, "alpha", role="data", size=7.5)
        box(ax, x + 0.7, 2.0, 0.22, 0.45, "")
        x += 0.98
    label(ax, x + 0.05, 2.22, "…", ha="left", size=12)
    label(ax, 0.1, 1.75, "alpha, then one small tensor's bytes: again for every tensor",
          ha="left", muted=True, size=8.5)
    label(ax, 0.1, 1.3, "one packed buffer", ha="left", bold=True, size=9.5)
    box(ax, 0.1, 0.55, 0.9, 0.45, "concat", role="host", size=8)
    box(ax, 1.05, 0.55, 0.7, 0.45, "alpha", role="data", size=7.5)
    box(ax, 1.75, 0.55, 8 * 0.22, 0.45, "all the bytes", size=8)
    box(ax, 1.75 + 8 * 0.22 + 0.05, 0.55, 0.7, 0.45, "split", role="host", size=8)
    label(ax, 6.3, 0.78, "the same bytes, one fixed cost", ha="left", size=9)
    arrow(ax, (0.1, 0.15), (9.8, 0.15), colour="muted")
    label(ax, 9.8, 0.32, "time", ha="right", muted=True, size=8.5)


@diagram("shaped-hosts", "11", alt=(
    "Left, one host: the server and the workers share one memory and the same cores. Right, "
    "three hosts, each a network namespace with its own address, cabled to a switch; a "
    "token-bucket filter on both ends of each cable passes at most the set rate each way. "
    "The server's link carries N m each way, a ring worker's 2 (N - 1) / N m."), size=(8.5, 3.2))
def shaped_hosts(fig):
    ax = canvas(fig, 10.0, 3.8)
    label(ax, 1.6, 3.55, "section 7: one host", bold=True)
    box(ax, 0.2, 0.5, 2.8, 2.7, "", role="host")
    for k, text in enumerate(("server", "worker 0", "worker 1")):
        box(ax, 0.35 + 0.88 * k, 2.2, 0.8, 0.6, text, size=8)
    box(ax, 0.35, 1.0, 2.5, 0.7, "one memory, one loopback,\nthe same cores", role="data",
        size=8.5)
    label(ax, 6.6, 3.55, "section 8: a host each, on shaped links", bold=True)
    box(ax, 5.2, 0.3, 1.6, 0.55, "switch (bridge)", role="data", size=8.5)
    for k, text in enumerate(("host 0 · 10.77.0.1\nPS server\nring worker 0",
                              "host 1 · 10.77.0.2\nPS worker 0\nring worker 1",
                              "host 2 · 10.77.0.3\nPS worker 1")):
        x = 3.4 + 2.2 * k
        box(ax, x, 2.15, 1.9, 1.0, text, role="host", size=8)
        arrow(ax, (x + 0.95, 2.12), (6.0 + 0.3 * (k - 1), 0.88), both=True)
    label(ax, 4.1, 1.45, "each cable:\nthe set rate,\neach way (tbf)", size=8, muted=True)
    label(ax, 8.5, 1.2, "server's link: N m each way\nring worker's link:\n2 (N - 1) / N · m "
          "each way", size=8, muted=True)
