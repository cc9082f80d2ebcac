"""The calculators' scaffold: the default figure is a plain output, controls redraw it."""

import io
import itertools
import math
import sys
import threading

import matplotlib
import pytest

matplotlib.use("Agg")

from helpers import calculator as calc  # noqa: E402


def draw_line(slope, intercept=0.0, colour="C0"):
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots()
    ax.plot([0, 1], [intercept, intercept + slope], color=colour)
    ax.set_title(f"slope {slope}")
    return fig


@pytest.fixture
def shown(monkeypatch):
    """What the calculator hands to IPython's display, in order."""
    seen = []

    class Handle:
        def __init__(self, obj):
            self.objects = [obj]

        def update(self, obj):
            self.objects.append(obj)

    def display(obj, display_id=False):
        seen.append(obj)
        if display_id:
            handle = Handle(obj)
            seen.append(handle)
            return handle
        return None

    import IPython.display  # noqa: PLC0415

    monkeypatch.setattr(IPython.display, "display", display)
    return seen


def test_the_default_figure_is_drawn_from_the_defaults_without_widgets(shown):
    fig = calc.calculator(draw_line, interactive=False, slope=calc.slider(2, 0, 5))
    assert fig.axes[0].get_title() == "slope 2"
    assert shown[0] is fig, "the default figure is a plain display output"


def test_controls_redraw_the_figure_in_place(shown):
    pytest.importorskip("ipywidgets")
    calc.calculator(draw_line, slope=calc.slider(2, 0, 5),
                    colour=calc.choice("C0", "C0", "C1"))
    box, handle = shown[0], shown[-1]
    slope, colour = box.children
    assert (slope.value, slope.min, slope.max, colour.value) == (2, 0, 5, "C0")
    slope.value = 4
    colour.value = "C1"
    titles = [f.axes[0].get_title() for f in handle.objects]
    assert titles == ["slope 2", "slope 4", "slope 4"]
    assert handle.objects[-1].axes[0].lines[0].get_color() == "C1"


DRAWN = itertools.count()


def draw_mathtext(a, b, c, d):
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots()  # log axes' ticks are mathtext, $10^{2}$, and a new title each time
    ax.loglog([1, 10.0 ** (a + b)], [1, 10.0 ** (c + d)])
    ax.set_title(f"${a + b + c + d}_{{{next(DRAWN)}}}$")
    fig.tight_layout()
    fig.savefig(io.BytesIO(), format="png")
    return fig


def test_redraws_on_several_threads_at_once_all_draw(shown):
    """JupyterLab's subshells redraw on their own threads; without the lock some fail to parse."""
    pytest.importorskip("ipywidgets")
    calc.calculator(draw_mathtext, **{name: calc.slider(1, 1, 8) for name in "abcd"})
    handle, errors = shown[-1], []

    def drag(box) -> None:  # a thread per slider, each step a new value
        try:
            for step in range(8):
                box.value = 2 + step % 7
        except ValueError as error:
            errors.append(error)

    threads = [threading.Thread(target=drag, args=(box,)) for box in shown[0].children]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads take turns often, as on a busy machine
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors and len(handle.objects) == 33, (errors[:1], len(handle.objects))


def test_log_and_float_sliders():
    pytest.importorskip("ipywidgets")
    import ipywidgets  # noqa: PLC0415

    assert isinstance(calc.slider(1e6, 1e3, 1e9, 0.25, log=True).widget("bytes"),
                      ipywidgets.FloatLogSlider)
    assert isinstance(calc.slider(0.5, 0, 1, 0.1).widget("x"), ipywidgets.FloatSlider)
    assert isinstance(calc.slider(3, 1, 8).widget("n"), ipywidgets.IntSlider)


def test_without_ipywidgets_the_figure_still_shows_and_says_how_to_drag(shown, monkeypatch,
                                                                       capsys):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # makes the import fail
    fig = calc.calculator(draw_line, slope=calc.slider(1, 0, 5))
    assert shown[0] is fig
    assert "install ipywidgets" in capsys.readouterr().out


@pytest.mark.parametrize("make, message", [
    (lambda: calc.slider(9, 0, 5), "outside"),
    (lambda: calc.slider(1, 0, 5, step=0), "step > 0"),
    (lambda: calc.slider(1, 0, 5, 0.1, log=True), "low > 0"),
    (lambda: calc.choice("bf16", "fp32", "fp16"), "not among"),
])
def test_bad_input_controls_say_what_to_change(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_input_controls_that_do_not_match_the_formula_are_named():
    with pytest.raises(TypeError, match=r"missing \['slope'\], unknown \['slop'\]"):
        calc.calculator(draw_line, slop=calc.slider(1, 0, 5))


@pytest.mark.parametrize("control, grid", [
    (calc.slider(1600, 256, 12288, 128), (320, 12224)),  # 256 + k * 128 misses 1600
    (calc.slider(2, 0, 5), (0, 5)),
    (calc.slider(0.3, 0, 1, 0.25), (0.05, 0.8)),
])
def test_the_slider_grid_goes_through_the_default(control, grid):
    pytest.importorskip("ipywidgets")
    box = control.widget("x")
    assert (box.min, box.max) == pytest.approx(grid)
    assert ((box.value - box.min) / box.step) == pytest.approx(round((box.value - box.min)
                                                                     / box.step))


def test_a_log_slider_grid_goes_through_the_default():
    pytest.importorskip("ipywidgets")
    box = calc.slider(102.4, 0.01, 10_000, 0.25, log=True).widget("MB")
    steps = (math.log10(102.4) - box.min) / box.step
    assert steps == pytest.approx(round(steps)), f"{steps} steps from min to the default"
    assert math.log10(0.01) <= box.min and box.max <= 4 + 1e-12, (box.min, box.max)


@pytest.mark.parametrize("control", [
    calc.slider(0, 0, 5), calc.slider(5, 0, 5), calc.slider(0.3, 0, 1, 0.1),
    calc.slider(0.1, 0.1, 0.7, 0.2), calc.slider(0.7, 0.1, 0.7, 0.2),
    calc.slider(0.01024, 0.01024, 10240, 0.25, log=True),
    calc.slider(10240, 0.01024, 10240, 0.25, log=True),
])
def test_a_default_at_or_near_an_end_stays_exactly_the_default(control):
    pytest.importorskip("ipywidgets")
    box = control.widget("x")
    ends = (10 ** box.min, 10 ** box.max) if control.log else (box.min, box.max)
    assert box.value == control.default, (box.value, control.default, ends)
    if not control.log:
        assert control.low <= box.min <= box.max <= control.high, (box.min, box.max)
