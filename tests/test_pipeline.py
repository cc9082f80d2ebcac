"""The GPipe bubble and schedule that notebook 13 writes, run for real on NumPy stages."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from lesson_cells import lesson  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from helpers.measure import Span, Timeline  # noqa: E402

NB13 = lesson("13", Span=Span, Timeline=Timeline)
bubble_fraction, run_gpipe = NB13.bubble_fraction, NB13.run_gpipe


def test_bubble_formula():
    assert bubble_fraction(1, 5) == 0.0
    assert bubble_fraction(2, 1) == 0.5
    assert bubble_fraction(4, 8) == pytest.approx(3 / 11)


class LinearStage:
    """y = x @ w; keeps x; backward accumulates dw and returns dx (NumPy only)."""

    def __init__(self, w):
        self.w, self.dw = w, np.zeros_like(w)

    def forward(self, x):
        return x @ self.w, x

    def backward(self, x, dy):
        self.dw += x.T @ dy
        return dy @ self.w.T


def test_run_gpipe_gives_the_whole_batchs_gradient_and_a_full_timeline():
    rng = np.random.default_rng(0)
    stages = [LinearStage(rng.standard_normal((4, 4))) for _ in range(3)]
    x = rng.standard_normal((12, 4))
    m = 4
    timeline = run_gpipe([s.forward for s in stages], [s.backward for s in stages],
                         np.split(x, m), lambda y, j: np.ones_like(y))
    # loss = sum of the outputs: dL/dw of each stage, computed on the whole batch at once
    h0, h1 = x @ stages[0].w, x @ stages[0].w @ stages[1].w
    ones = np.ones((12, 4))
    assert np.allclose(stages[2].dw, h1.T @ ones)
    assert np.allclose(stages[1].dw, h0.T @ (ones @ stages[2].w.T))
    assert np.allclose(stages[0].dw, x.T @ (ones @ stages[2].w.T @ stages[1].w.T))
    assert len(timeline.spans) == 2 * 3 * m
    assert {(s.stage, s.phase) for s in timeline.spans} == {(i, f) for i in range(3) for f in "FB"}
    assert 0.0 <= timeline.bubble() < 1.0 and timeline.makespan > 0
    assert isinstance(timeline.plot(), Figure)


def test_stages_run_in_pipeline_order():
    order = []

    def stage(i):
        def forward(x):
            order.append(("F", i, x))
            return x, x

        def backward(saved, dy):
            order.append(("B", i, saved))
            return dy
        return forward, backward

    (f0, b0), (f1, b1) = stage(0), stage(1)
    run_gpipe([f0, f1], [b0, b1], [0, 1, 2], lambda y, j: y)
    for i in (0, 1):
        assert [x for phase, s, x in order if phase == "F" and s == i] == [0, 1, 2]
        assert [x for phase, s, x in order if phase == "B" and s == i] == [2, 1, 0]


def test_an_error_in_a_stage_reaches_the_caller():
    def broken(x):
        raise RuntimeError("stage broke")

    with pytest.raises(RuntimeError, match="stage broke"):
        run_gpipe([lambda x: (x, x), broken], [lambda s, d: d, lambda s, d: d], [1, 2],
                  lambda y, j: y, timeout=5)


def test_timeline_bubble_from_spans():
    # two stages taking turns, one slot each: each works half of the time
    spans = [Span(0, 0, "F", 0, 1), Span(1, 0, "F", 1, 2), Span(1, 0, "B", 2, 3),
             Span(0, 0, "B", 3, 4)]
    timeline = Timeline(2, 1, spans)
    assert timeline.makespan == 4 and timeline.busy(0) == 2 and timeline.bubble() == 0.5
