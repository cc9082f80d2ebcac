"""Byte counting for hand-written all-reduces, and the ring diagram's set algebra."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from helpers.costs import Traffic, tensor_nbytes  # noqa: E402
from helpers.output import (  # noqa: E402
    Contributions,
    RingSnapshots,
    contributions,
    draw_ring_steps,
)


class NumpyOps:
    """The four operations of the notebook's algorithms, on NumPy arrays (devices are names)."""

    @staticmethod
    def move(x, src, dst):
        return x.copy()

    @staticmethod
    def add(a, b, device):
        return a + b

    @staticmethod
    def split(x, n):
        return np.split(x, n)

    @staticmethod
    def concat(chunks, device):
        return np.concatenate(chunks)


def ring(values, devices, ops, on_step=None):
    """The ring all-reduce as notebook 11 writes it, to test the helpers against."""
    n = len(devices)
    chunks = [ops.split(v, n) for v in values]
    if on_step:
        on_step("start", chunks)
    for s in range(n - 1):
        sends = [(i, (i - s) % n) for i in range(n)]
        arrived = [ops.move(chunks[i][c], devices[i], devices[(i + 1) % n]) for i, c in sends]
        for (i, c), x in zip(sends, arrived, strict=True):
            j = (i + 1) % n
            chunks[j][c] = ops.add(chunks[j][c], x, devices[j])
        if on_step:
            on_step(f"reduce-scatter {s + 1}", chunks)
    for s in range(n - 1):
        sends = [(i, (i + 1 - s) % n) for i in range(n)]
        arrived = [ops.move(chunks[i][c], devices[i], devices[(i + 1) % n]) for i, c in sends]
        for (i, c), x in zip(sends, arrived, strict=True):
            chunks[(i + 1) % n][c] = x
        if on_step:
            on_step(f"all-gather {s + 1}", chunks)
    return [ops.concat(ch, d) for ch, d in zip(chunks, devices, strict=True)]


def test_tensor_nbytes_reads_shape_and_dtype():
    assert tensor_nbytes(np.zeros((3, 4), np.float32)) == 48
    assert tensor_nbytes(np.zeros(5, np.float64)) == 40

    class TFLike:  # TensorFlow's DType has .size
        shape = (2, 3)

        class dtype:  # noqa: N801
            size = 2

    assert tensor_nbytes(TFLike()) == 12


def test_watched_ring_moves_what_the_formula_says_and_sums_right():
    devices = ["d0", "d1", "d2", "d3"]
    values = [np.full(8, i + 1, np.float32) for i in range(4)]
    traffic = Traffic(devices)
    out = ring(values, devices, traffic.watch(NumpyOps))
    assert all(np.array_equal(o, np.full(8, 10, np.float32)) for o in out)
    assert [traffic.per_device()[d] for d in devices] == [(48, 48)] * 4  # 2 (n - 1) m / n
    assert len(traffic.transfers) == 2 * 3 * 4  # 2 (n - 1) steps, n transfers each


def test_traffic_ignores_self_copies():
    traffic = Traffic(["a", "b"])
    traffic.record("a", "a", 10)
    assert traffic.transfers == []
    traffic.record("a", "b", 4)
    assert traffic.per_device() == {"a": (4, 0), "b": (0, 4)}


def test_watch_keeps_the_other_operations():
    watched = Traffic(["a"]).watch(NumpyOps)
    assert watched.split(np.arange(4), 2)[1].tolist() == [2, 3]


def test_contributions_trace_the_ring_and_draw():
    n = 3
    snapshots = RingSnapshots()
    final = ring(contributions(n), list(range(n)), Contributions, on_step=snapshots)
    assert all(chunk == frozenset(range(n)) for device in final for chunk in device)
    assert [label for label, _ in snapshots.steps][0] == "start"
    assert len(snapshots.steps) == 1 + 2 * (n - 1)
    start = snapshots.steps[0][1]
    assert start[1] == [frozenset({1})] * n  # snapshots are copies, not live views
    assert isinstance(draw_ring_steps(snapshots.steps), Figure)
