"""The calculators as a learner meets them: JupyterLab 4 in a headless Chromium.

``test_calculator.py`` checks the scaffold against a fake ``display``. This file checks
what only a real front end can show: that the stored default figure of each calculator
renders before any cell runs, and that in a running kernel the ipywidgets controls appear
(JupyterLab loads ipywidgets' own extension) and moving each one redraws the figure.

Chromium, Playwright and the JupyterLab server come from ``browser.py`` (skipped without a
browser, failing under ``SERIES_REQUIRE_BROWSER=1``). JupyterLab listens on 127.0.0.1 with a
random token, and is stopped, with its kernels, whatever the outcome.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import psutil
import pytest
from browser import browser_page, jupyterlab, open_notebook
from lesson_cells import cell_with_context, notebook

from helpers.processes import poll_until

CALCULATORS = ("10", "12", "13", "14")
LIVE = ("10", "13", "14")  # 12's figure needs section 1's measurements: stored figure only
MARKER = "from helpers.calculator import"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a scratch folder (see ``browser.jupyterlab``)."""
    with jupyterlab(tmp_path_factory.mktemp("lab"), tmp_path_factory.mktemp("home")) as lab:
        yield lab


@pytest.fixture(scope="module")
def page(lab):
    with browser_page() as page:
        yield page


@pytest.fixture
def close_sessions(lab, page):
    """Each notebook's kernel ends with its test, not with the module (one at a time); the
    module's teardown checks that every kernel seen here has ended."""
    yield
    lab["kernels"].update(psutil.Process(lab["server"].pid).children(recursive=True))
    page.evaluate("() => window.jupyterapp && jupyterapp.serviceManager.sessions.shutdownAll()")


def mark_calculator_cell(page) -> None:
    """Scroll the notebook to the calculator's cell (JupyterLab renders a long notebook's
    cells as they come into view) and mark it for the locators."""
    page.evaluate("""async (marker) => {
        const nb = jupyterapp.shell.currentWidget.content;
        const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes(marker));
        if (i < 0) throw new Error('no calculator cell');
        await nb.scrollToItem(i);
        nb.widgets[i].node.setAttribute('data-calculator', 'yes');
    }""", MARKER)


def figure_source(page) -> str:
    image = page.locator("[data-calculator] .jp-OutputArea-output img").last
    image.wait_for(state="visible")
    assert image.evaluate("img => img.complete && img.naturalWidth > 0"), \
        "the calculator's figure did not decode"
    return image.get_attribute("src")


def stored_outputs(path: Path) -> list[dict]:
    """The calculator cell's stored outputs."""
    return next(c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                if c["cell_type"] == "code" and MARKER in "".join(c["source"]))["outputs"]


def stored_png(path: Path) -> str:
    """The base64 PNG stored as the calculator cell's figure."""
    pngs = [o["data"]["image/png"] for o in stored_outputs(path)
            if "image/png" in o.get("data", {})]
    assert len(pngs) == 1, f"{path.name}: the calculator cell stores {len(pngs)} figures"
    return "".join(pngs[0]).replace("\n", "")


@pytest.mark.parametrize("number", CALCULATORS)
def test_the_stored_figure_shows_before_any_cell_runs(lab, page, close_sessions, number):
    """What GitHub, nbval and a reader who has not run the notebook get: the default figure,
    and no empty widget box or widget error."""
    stored = notebook(number)
    shutil.copy(stored, lab["root"] / stored.name)
    open_notebook(page, lab, stored.name)
    version = page.evaluate("() => jupyterapp.version")
    assert version.startswith("4."), f"JupyterLab {version}, not 4"
    mark_calculator_cell(page)
    assert figure_source(page) == f"data:image/png;base64,{stored_png(stored)}", \
        "the page shows another image than the stored figure"
    outputs = page.locator("[data-calculator] .jp-OutputArea-output")
    texts = " ".join(outputs.all_inner_texts())
    assert outputs.count() == len(stored_outputs(stored)) and "widget" not in texts.lower(), \
        f"{outputs.count()} outputs on the page ({texts!r}), {len(stored_outputs(stored))} stored"


def live_notebook(root: Path, number: str) -> tuple[str, tuple[str, str]]:
    """A notebook of one cell: the calculator cell of notebook ``number`` after the
    definitions it needs; its name, and the names of the default figure the calculator
    returns and of its ``draw`` function."""
    import nbformat  # noqa: PLC0415

    source = cell_with_context(number, MARKER)
    cell = nbformat.v4.new_code_cell(source)
    book = nbformat.v4.new_notebook(cells=[cell], metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    name = f"live_{number}.ipynb"
    nbformat.write(book, root / name)
    return name, re.search(r"(\w+) = calculator\(\s*(\w+)", source).groups()


# Run in the kernel: the digest of the PNG that ``draw`` makes of the values the controls
# hold now, encoded as IPython encodes a displayed figure, and those values. The kernel runs
# it after every control change it has already received, so it is the figure the page must
# end up showing.
EXPECTED = """
import base64, hashlib, inspect, json, warnings, ipywidgets, matplotlib.pyplot
from helpers.calculator import DRAWING  # redraws run on a subshell's thread: never beside them
def _digest(figure):
    png = get_ipython().display_formatter.format(figure)[0]["image/png"]
    png = png if isinstance(png, bytes) else base64.b64decode(png)
    return hashlib.sha256(png).hexdigest()
def _expected(draw):
    names = inspect.signature(draw).parameters
    with warnings.catch_warnings():  # Widget.widgets: ipywidgets 8 keeps it, deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        values = {w.description: w.value for w in ipywidgets.Widget.widgets.values()
                  if getattr(w, "description", None) in names}
    with DRAWING:
        figure = draw(**values)
        matplotlib.pyplot.close(figure)
        print(json.dumps({"sha256": _digest(figure), "values": values}))
"""


def in_kernel(page, code: str) -> str:
    """Run ``code`` in the notebook's kernel, outside any cell; what it printed."""
    out, error = page.evaluate("""async (code) => {
        const kernel = jupyterapp.shell.currentWidget.sessionContext.session.kernel;
        let out = '', error = '';
        const future = kernel.requestExecute({code, store_history: false});
        future.onIOPub = msg => {
            const c = msg.content;
            if (msg.header.msg_type === 'stream' && c.name === 'stdout') out += c.text;
            if (msg.header.msg_type === 'error') error = c.ename + ': ' + c.evalue;
        };
        await future.done;
        return [out, error];
    }""", code)
    assert not error, f"{code.strip().splitlines()[0]} failed in the kernel: {error}"
    return out


def settle(page, draw: str) -> dict:
    """Wait until the page shows the figure of the values the kernel holds; return them."""
    expected = json.loads(in_kernel(page, f"_expected({draw})"))

    def shown() -> bool | None:
        data = base64.b64decode(figure_source(page).split(",", 1)[1])
        return hashlib.sha256(data).hexdigest() == expected["sha256"] or None

    poll_until(shown, 60, lambda: f"the page never showed the figure of {expected['values']}")
    return expected


@pytest.mark.parametrize("number", LIVE)
def test_the_controls_redraw_the_figure_in_jupyterlab(lab, page, close_sessions, number):
    """Move each control; the page's figure becomes the one ``draw`` makes of the new values."""
    name, (default, draw) = live_notebook(lab["root"], number)
    open_notebook(page, lab, name)
    page.wait_for_function("() => jupyterapp.shell.currentWidget.sessionContext.session"
                           "?.kernel?.status === 'idle'")
    page.evaluate("() => jupyterapp.commands.execute('notebook:run-all-cells')")
    mark_calculator_cell(page)
    cell = page.locator("[data-calculator]")
    cell.locator(".widget-slider").first.wait_for(state="visible")
    errors = cell.locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert in_kernel(page, EXPECTED) == "", "the check's definitions ran"
    controls = len(json.loads(in_kernel(page, f"_expected({draw})"))["values"])
    sliders, menus = cell.locator(".widget-slider"), cell.locator(".widget-dropdown select")
    # A slider tells the kernel its value when its view renders (moved onto its step grid,
    # were the default off it), so every control must be on the page before values are read.
    poll_until(lambda: sliders.count() + menus.count() == controls or None, 60,
               lambda: f"{sliders.count() + menus.count()} of {controls} controls on the page")
    shown = [settle(page, draw)]
    first = in_kernel(page, f"with DRAWING: print(_digest({default}), end='')")
    assert shown[0]["sha256"] == first, \
        f"the controls start at {shown[0]['values']}, not at the values of the default figure"
    stored = hashlib.sha256(base64.b64decode(stored_png(notebook(number)))).hexdigest()
    assert shown[0]["sha256"] == stored, \
        f"notebook {number}'s stored figure is not what its calculator draws: re-execute it"
    assert errors.count() == 0, errors.all_inner_texts()

    def moved(what: str) -> None:
        shown.append(settle(page, draw))
        before, after = shown[-2], shown[-1]
        assert after["values"] != before["values"], f"{what}: the kernel's values did not change"
        assert after["sha256"] != before["sha256"], f"{what}: the figure stayed the same"

    for slider in sliders.all():
        label = slider.locator("label").inner_text()
        readout = slider.locator(".widget-readout")
        was = readout.inner_text()
        slider.locator(".noUi-handle").focus()
        page.keyboard.press("PageUp")  # noUiSlider's large step, towards the maximum
        if readout.inner_text() == was:  # it was at the maximum
            page.keyboard.press("PageDown")
        assert readout.inner_text() != was, f"the {label} slider did not move from {was}"
        moved(f"the {label} slider, {was} -> {readout.inner_text()}")
    for menu in menus.all():
        current = menu.evaluate("s => s.options[s.selectedIndex].text")
        other = next(o for o in menu.locator("option").all_inner_texts() if o != current)
        menu.select_option(label=other)
        moved(f"the drop-down, {current!r} -> {other!r}")
    assert len(shown) - 1 == controls, f"{len(shown) - 1} of {controls} controls moved"
    assert errors.count() == 0, errors.all_inner_texts()
