"""Each notebook as a learner opens it in JupyterLab 4: the setup cell and the solutions
folded, the concept diagrams drawn (the image decoded, with its alt text).

The folding is notebook metadata (``jupyter.source_hidden``, ``outputs_hidden``) that
JupyterLab reads when it opens the file; the diagrams are images inside markdown cells. This
checks what the page shows, in a headless Chromium (see ``browser.py``): no kernel runs a
cell here.
"""

from __future__ import annotations

import json
import shutil

import pytest
from browser import browser_page, jupyterlab, open_notebook

from tools.cells import SETUP_ID, is_solution, stored_notebooks


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with jupyterlab(tmp_path_factory.mktemp("lab"), tmp_path_factory.mktemp("home")) as lab:
        with browser_page() as page:
            lab["page"] = page
            yield lab


# For the cell at ``index``: is its input folded, are its outputs folded, and the images its
# rendered markdown shows (decoded, with alt text). JupyterLab attaches the cells of a long
# notebook as they scroll into view, so the cell is scrolled to first.
LOOK = """async (index) => {
    const nb = jupyterapp.shell.currentWidget.content;
    await nb.scrollToItem(index);
    const cell = nb.widgets[index];
    if (cell.model.type === 'markdown') {
        cell.rendered = true;
        for (let t = 0; t < 100 && !cell.node.querySelector('.jp-RenderedMarkdown'); t++)
            await new Promise(r => setTimeout(r, 50));
    }
    const images = [...cell.node.querySelectorAll('.jp-RenderedMarkdown img')];
    await Promise.all(images.map(i => i.decode().catch(() => null)));
    return {inputHidden: cell.inputHidden,
            outputsHidden: cell.model.type === 'code' ? cell.outputHidden : null,
            placeholder: !!cell.node.querySelector('.jp-InputPlaceholder'),
            images: images.map(i => ({alt: i.alt, width: i.naturalWidth}))};
}"""


@pytest.mark.parametrize("path", stored_notebooks(), ids=lambda p: p.name[:2])
def test_setup_and_solutions_are_folded_and_the_diagrams_drawn(lab, path):
    page = lab["page"]
    shutil.copy(path, lab["root"] / path.name)
    cells = json.loads(path.read_text())["cells"]
    open_notebook(page, lab, path.name)
    try:
        setup = page.evaluate(LOOK, next(i for i, c in enumerate(cells)
                                         if c.get("id") == SETUP_ID))
        assert setup["inputHidden"] and setup["placeholder"], f"setup cell shown: {setup}"
        for index, cell in enumerate(cells):
            if is_solution(cell):
                seen = page.evaluate(LOOK, index)
                assert seen["inputHidden"] and seen["outputsHidden"] in (True, None), \
                    f"{path.name} cell {index}, a solution, is not folded: {seen}"
        diagrams = [i for i, c in enumerate(cells)
                    if "diagram" in c.get("metadata", {}).get("tags", [])]
        assert diagrams, f"{path.name} has no diagram cell"
        for index in diagrams:
            images = page.evaluate(LOOK, index)["images"]
            assert images and all(i["width"] > 0 and len(i["alt"].split()) >= 5
                                  for i in images), f"{path.name} cell {index}: {images}"
    finally:
        page.evaluate("() => jupyterapp.serviceManager.sessions.shutdownAll()")
