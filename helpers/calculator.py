"""Calculators a class can drag: a figure drawn from a few numbers, and a control for each.

The formulas stay in the notebooks' cells, where they are taught, and come in as ``draw`` (keyword
inputs, a figure back): ``calculator(draw_bubble, p=slider(4, 2, 16))``. The defaults' figure is
drawn first as an ordinary output, so GitHub, nbval and a reader without a kernel see a picture, not
an empty box; with ``ipywidgets`` in a front end that shows them, a control per input redraws it."""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# JupyterLab hands widget messages to a kernel subshell (its setting commsOverSubshells), a thread
# beside the one running cells, and matplotlib's text layout is not thread-safe: two figures drawn
# at once fail to parse their tick labels. A calculator holds it to draw, and so does a check.
DRAWING = threading.RLock()  # re-entrant: a draw that moves a control redraws inside it


@dataclass(frozen=True)
class Control:
    """One input of a calculator: a slider over numbers, or a choice among options."""
    default: float | str
    low: float | None = None
    high: float | None = None
    step: float | None = None
    options: tuple[str, ...] = ()
    log: bool = False  # a slider over powers of ten, for sizes that span decades

    def widget(self, name: str) -> Any:
        """The ipywidgets control for this input, labelled ``name``. A slider only takes
        values ``min + k * step``: its grid is laid through the default, inside ``[low, high]``,
        else the page would move it (1600 to 1664) and redraw a figure unlike the stored one."""
        import ipywidgets as w  # noqa: PLC0415  (optional: the static figure needs none)

        style = {"description_width": "initial"}
        if self.options:
            return w.Dropdown(options=list(self.options), value=self.default, description=name,
                              style=style)
        if self.log:
            low, high = on_grid(*map(math.log10, (self.default, self.low, self.high)), self.step)
            while 10 ** low > self.default:  # 10 ** log10(x) can round above x: the widget
                low = math.nextafter(low, -math.inf)  # would then clamp the default away
            while 10 ** high < self.default:
                high = math.nextafter(high, math.inf)
            return w.FloatLogSlider(value=self.default, min=low, max=high, step=self.step,
                                    description=name, style=style)
        whole = all(float(v).is_integer() for v in (self.default, self.low, self.high, self.step))
        kind, cast = (w.IntSlider, int) if whole else (w.FloatSlider, float)
        low, high = on_grid(self.default, self.low, self.high, self.step)
        return kind(value=cast(self.default), min=cast(low), max=cast(high),
                    step=cast(self.step), description=name, style=style)


def on_grid(default: float, low: float, high: float, step: float) -> tuple[float, float]:
    """The widest ``[min, max]`` inside ``[low, high]`` whose steps from ``min`` reach ``default``
    and end on ``max`` (to float rounding: an end that rounds past a bound is the bound)."""
    start = max(low, default - math.floor((default - low) / step + 1e-9) * step)
    return start, min(high, start + math.floor((high - start) / step + 1e-9) * step)


def slider(default: float, low: float, high: float, step: float = 1, *,
           log: bool = False) -> Control:
    """A numeric input from ``low`` to ``high``; ``log=True`` moves by factors (``step``
    is then in powers of ten: 0.25 moves by 10 ** 0.25)."""
    if not low <= default <= high:
        raise ValueError(f"slider default {default} is outside [{low}, {high}]: choose one inside")
    if step <= 0 or (log and low <= 0):
        raise ValueError(f"slider needs step > 0 (got {step}) and, on a log scale, "
                         f"low > 0 (got {low})")
    return Control(default, low, high, step, log=log)


def choice(default: str, *options: str) -> Control:
    """An input that takes one of ``options`` (a drop-down list)."""
    if default not in options:
        raise ValueError(f"choice default {default!r} is not among the options {options}")
    return Control(default, options=tuple(options))


def check_controls(draw: Callable[..., Figure], controls: dict[str, Control]) -> None:
    """Fail early, naming the mismatch, when the controls and ``draw``'s parameters differ."""
    params = inspect.signature(draw).parameters
    missing = [n for n, p in params.items() if p.default is inspect.Parameter.empty
               and p.kind is not inspect.Parameter.VAR_KEYWORD and n not in controls]
    unknown = [n for n in controls if n not in params]
    if missing or unknown:
        raise TypeError(f"{draw.__name__} takes {list(params)}; the controls give "
                        f"{list(controls)} (missing {missing}, unknown {unknown})")


def calculator(draw: Callable[..., Figure], *, interactive: bool = True,
               **controls: Control) -> Figure:
    """Show the controls, then ``draw(**defaults)`` as a plain display output (not a widget: a page
    without a kernel shows it as stored) that the controls redraw through its display id. Returns
    the default figure; with ``interactive=False``, or without ipywidgets, only it is shown."""
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from IPython.display import display  # noqa: PLC0415

    check_controls(draw, controls)
    with DRAWING:  # a redraw of another calculator may be running on a subshell's thread
        figure = draw(**{name: c.default for name, c in controls.items()})
        plt.close(figure)
    widgets = None
    if interactive:
        try:
            import ipywidgets  # noqa: PLC0415
        except ImportError:
            print("The figure below is for the default values: install ipywidgets "
                  "(pip install ipywidgets) to drag them.")
        else:
            widgets = {name: c.widget(name) for name, c in controls.items()}
            display(ipywidgets.HBox(list(widgets.values()),
                                    layout=ipywidgets.Layout(flex_flow="row wrap")))
    shown = display(figure, display_id=True)
    if widgets:
        def redraw(_change: Any = None) -> None:
            with DRAWING:
                fig = draw(**{name: box.value for name, box in widgets.items()})
                plt.close(fig)
                shown.update(fig)

        for box in widgets.values():
            box.observe(redraw, names="value")
    return figure
