"""The website (``make site``): built from the stored notebooks, whole, and self-contained.

The unit tests check the staging and the offline check on small inputs. The others look at
the site ``make site`` built in ``build/site``: its links and images resolve, and in
Chromium the landing page and two notebook pages show their figures, search works without a
server, and no request goes to another host. Screenshots of the landing page and of notebook
04's page are left in ``build/site-screens/`` (CI keeps them as an artifact).
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser import browser_page, needed

from tools import site
from tools.cells import stored_notebooks

ROOT = Path(__file__).resolve().parent.parent
SCREENS = ROOT / "build" / "site-screens"


def test_the_map_lists_every_notebook_with_its_minutes():
    table, toctree = site.notebook_map((ROOT / "README.md").read_text(),
                                       (ROOT / "TEACHING.md").read_text())
    assert toctree == [f"notebooks/{p.stem}" for p in stored_notebooks()]
    rows = table.splitlines()[2:]
    assert all(row.rstrip(" |").split("|")[-1].strip().isdigit() for row in rows), rows


def test_a_page_loads_its_badges_locally_and_links_the_glossary_page():
    nb = json.loads(stored_notebooks()[0].read_text())
    page = site.page_notebook(json.loads(json.dumps(nb)))
    text = "\n".join("".join(c["source"]) for c in page["cells"] if c["cell_type"] == "markdown")
    assert "](../_static/open-in-colab.svg)" in text and "](../_static/open-in-kaggle.svg)" in text
    assert "colab-badge.svg" not in text and "open-in-kaggle.svg)" not in text.replace(
        "](../_static/open-in-kaggle.svg)", "")
    assert "/GLOSSARY.md" not in text


def test_the_check_finds_a_missing_image_a_broken_anchor_and_a_foreign_script(tmp_path):
    (tmp_path / "a.html").write_text(
        '<p id="here">x</p><a href="b.html#there">b</a><a href="b.html#nowhere">b</a>'
        '<img src="gone.png"><script src="https://cdn.example/x.js"></script>'
        '<a href="https://example.org/">a link out is fine</a>')
    (tmp_path / "b.html").write_text('<h2 id="there">b</h2><img src="pic.png">')
    (tmp_path / "pic.png").write_bytes(b"png")
    found = site.check(tmp_path)
    assert found["pages"] == 2 and found["links"] == 2 and found["images"] == 2
    assert sorted(found["problems"]) == sorted([
        "a.html: <a href='b.html#nowhere'>: b.html has no #nowhere",
        "a.html: <img src='gone.png'> is missing",
        "a.html: <script src='https://cdn.example/x.js'> loads from another host"])


def test_a_page_keeps_the_setup_and_the_solutions_folded():
    cell = lambda kind, tags=(), id_="c", text="x": {  # noqa: E731
        "cell_type": kind, "id": id_, "metadata": {"tags": list(tags)}, "source": text}
    nb = site.page_notebook({"cells": [
        cell("code", id_="setup"), cell("code"), cell("code", ["solution"]),
        cell("markdown", ["solution"], text="Nothing is placed again."), cell("markdown")]})
    tags = [c["metadata"]["tags"] for c in nb["cells"]]
    assert tags == [["hide-cell"], [], ["solution", "hide-cell"], ["solution"], []]
    assert nb["cells"][3]["source"].startswith("<details><summary>Answer</summary>\n\nNothing")
    assert nb["cells"][4]["source"] == "x"


@pytest.fixture(scope="module")
def built():
    index = site.SITE / "index.html"
    if not index.exists():
        needed("no built site: `make site` builds it (make test does)")
    return site.SITE


@pytest.mark.site
def test_the_built_site_has_every_page_and_nothing_broken(built):
    found = site.check(built)
    assert not found["problems"], "\n".join(found["problems"][:20])
    for path in stored_notebooks():
        assert (built / "notebooks" / f"{path.stem}.html").exists(), path.name
    assert {"index.html", "glossary.html", "teaching.html", "search.html"} <= {
        p.name for p in built.glob("*.html")}
    for path in stored_notebooks():  # what the notebooks fold, the pages fold
        html = (built / "notebooks" / f"{path.stem}.html").read_text()
        cells = re.findall(r'class="cell ([^"]*)docutils container"', html)
        assert any("tag_hide-cell" in c for c in cells), f"{path.name}: setup cell shown"
        assert all("tag_hide-cell" in c for c in cells if "tag_solution" in c), path.name


@pytest.fixture(scope="module")
def served(built):
    """The built site on 127.0.0.1, as a static host serves it; stopped afterwards."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # noqa: ARG002
            pass

    handler = functools.partial(Quiet, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def visit(page, url: str) -> list[str]:
    """Open ``url`` and load every image; the hosts of every request the page made."""
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url, wait_until="networkidle")
    page.evaluate("""async () => {
        for (const img of document.images) { img.loading = 'eager'; img.scrollIntoView(); }
        await Promise.all([...document.images].map(i => i.decode().catch(() => null)));
    }""")
    page.wait_for_load_state("networkidle")
    return requests


@pytest.mark.site
@pytest.mark.parametrize("path", ["index.html", "notebooks/04_matpow_multi_device.html",
                                  "notebooks/10_scaling_and_speedup.html"])
def test_a_page_shows_its_figures_and_asks_no_other_host(served, path):
    with browser_page() as page:
        requests = visit(page, f"{served}/{path}")
        foreign = sorted({u for u in requests if not u.startswith(served) and
                          urlsplit(u).scheme in ("http", "https")})
        assert not foreign, f"{path} asked other hosts: {foreign}"
        broken = page.evaluate("() => [...document.images].filter(i => !(i.complete && "
                               "i.naturalWidth > 0)).map(i => i.src.slice(0, 80))")
        assert not broken, f"{path}: images that did not load: {broken}"
        shown = page.evaluate("() => document.images.length")
        assert shown >= (1 if path == "index.html" else 3), f"{path}: {shown} images"
        SCREENS.mkdir(parents=True, exist_ok=True)
        if "10_" not in path:
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(SCREENS / f"{Path(path).stem}.png"), full_page=False)


@pytest.mark.site
def test_search_works_without_a_server(served):
    with browser_page() as page:
        page.goto(f"{served}/search.html?q=all-reduce", wait_until="networkidle")
        results = page.locator("#search-results li")
        results.first.wait_for(state="attached", timeout=30_000)
        assert results.count() >= 3, f"{results.count()} results for all-reduce"


def test_the_release_has_notes_and_the_setup_cells_clone_it():
    import tomllib  # noqa: PLC0415

    from tools import changelog, notebook_setup  # noqa: PLC0415

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert changelog.section(version)
    assert notebook_setup.release_ref() == f"v{version}"
    for path in stored_notebooks():
        setup = next(c for c in json.loads(path.read_text())["cells"] if c.get("id") == "setup")
        assert f'"v{version}")' in "".join(setup["source"]), \
            f"{path.name}: run tools.notebook_setup"
    with pytest.raises(SystemExit, match="no section '## 9.9.9'"):
        changelog.section("9.9.9", "# Changelog\n\n## 0.1.0\n\n- first\n")
