"""The series as a static website, built from the stored notebooks: ``make site``.

``python -m tools.site`` (run with the site's own environment, ``requirements-site.txt``)
stages a source folder in ``build/site-src`` and runs Sphinx with MyST-NB into
``build/site``. Nothing is executed: a page shows the notebook's stored outputs, the same
ones GitHub shows. Staging does what a page needs and a notebook does not:

* the landing page (``tools/site/index.md``) gets the map of the notebooks: number, title and
  description from README's notebook table, class minutes from TEACHING.md;
* the glossary, the teaching guide and the changelog become pages;
* in each notebook, links to the glossary on GitHub point at the glossary page instead, the
  Colab and Kaggle badges are drawn from local images (a page loads nothing from another
  host), and a calculator's figure gets one line saying where its sliders can be dragged;
* what the notebooks fold stays folded: the setup cell and each solution's code behind a
  "show" toggle (MyST-NB's ``hide-cell`` tag), a written answer inside a ``<details>`` block.

The build treats every warning as an error (``-W -n``). ``--check`` then looks at the built
pages without a browser: every local link and image resolves, and no page refers to a script,
stylesheet, image or font on another host. ``tests/site/`` checks the same in Chromium.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tools.cells import BADGES_ID, SETUP_ID, cell_source, stored_notebooks

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
STAGE = ROOT / "build" / "site-src"
SITE = ROOT / "build" / "site"
GLOSSARY_LINK = re.compile(r"https://github\.com/[^)\s]+/blob/[^)\s]+/GLOSSARY\.md")
BADGE_IMAGES = {"colab-badge.svg": "open-in-colab.svg", "open-in-kaggle.svg": "open-in-kaggle.svg"}
COURSE_MAP_ALT = ("The course in five parts: one machine and its devices (00-04), many devices in "
                  "one process (05), a cluster of processes (06-09), why training scales as it "
                  "does (10-12, 15), beyond data parallelism (13-14).")
CALCULATOR_NOTE = ("*On this page the calculator is a picture of its default values: open the "
                   "notebook in JupyterLab, Colab or Kaggle (the badges at the top) and run it to "
                   "drag its sliders.*")


def notebook_map(readme: str, teaching: str) -> tuple[str, list[str]]:
    """The landing page's table of notebooks and the toctree's entries.

    Titles and descriptions come from README's table under ``## The notebooks`` (rows
    ``| NN | [title](notebooks/NN_name.ipynb) | what you do |``), class minutes from
    TEACHING.md's minutes table (``| NN | ... | class minutes |``)."""
    minutes = {}
    for line in teaching.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"\d\d", cells[0]):
            minutes[cells[0]] = cells[4]
    section = readme.split("## The notebooks", 1)[1].split("\n## ", 1)[0]
    rows, toctree = ["| # | notebook | what you do and measure | class minutes |",
                     "|---|---|---|---|"], []
    for number, title, path, what in re.findall(
            r"^\| (\d\d) \| \[([^\]]+)\]\((notebooks/[^)]+\.ipynb)\) \| (.+) \|$", section, re.M):
        rows.append(f"| {number} | [{title}]({path}) | {what} | {minutes.get(number, '')} |")
        toctree.append(path.removesuffix(".ipynb"))
    return "\n".join(rows), toctree


def page_notebook(nb: dict) -> dict:
    """A notebook as its page shows it (see the module's docstring)."""
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = GLOSSARY_LINK.sub("../glossary.md", cell_source(cell))
        if cell.get("id") == BADGES_ID:
            for remote, local in BADGE_IMAGES.items():
                text = re.sub(r"\]\(https://[^)\s]*" + re.escape(remote) + r"\)",
                              f"](../_static/{local})", text)
        cell["source"] = text
    cells = []
    for cell in nb["cells"]:
        cells.append(cell)
        tags = cell["metadata"].setdefault("tags", [])
        if cell["cell_type"] == "code" and (cell.get("id") == SETUP_ID or "solution" in tags):
            tags.append("hide-cell")
        elif "solution" in tags:  # a written answer
            cell["source"] = f"<details><summary>Answer</summary>\n\n{cell['source']}\n\n</details>"
        if cell["cell_type"] == "code" and "helpers.calculator" in cell_source(cell):
            cells.append({"cell_type": "markdown", "id": f"{cell.get('id', 'calc')}-site",
                          "metadata": {}, "source": CALCULATOR_NOTE})
    nb["cells"] = cells
    return nb


def stage(stage_dir: Path = STAGE) -> list[Path]:
    """Write the Sphinx source folder; return the notebooks staged."""
    shutil.rmtree(stage_dir, ignore_errors=True)
    (stage_dir / "notebooks").mkdir(parents=True)
    (stage_dir / "_static").mkdir()
    for image in (HERE / "static").iterdir():
        shutil.copy(image, stage_dir / "_static" / image.name)
    shutil.copy(HERE / "conf.py", stage_dir / "conf.py")
    shutil.copy(ROOT / "pyproject.toml", stage_dir / "pyproject.toml")
    table, toctree = notebook_map((ROOT / "README.md").read_text(),
                                  (ROOT / "TEACHING.md").read_text())
    (stage_dir / "index.md").write_text((HERE / "index.md").read_text().format(
        map=table, toctree="\n".join(toctree), alt=COURSE_MAP_ALT))
    for name, page in (("GLOSSARY.md", "glossary.md"), ("TEACHING.md", "teaching.md"),
                       ("CHANGELOG.md", "changelog.md")):
        text = (ROOT / name).read_text()
        # links into the repository: notebooks stay pages, other files go to GitHub
        text = re.sub(r"\]\((?!https?://|#|notebooks/)([^)\s]+)\)", _repository_link, text)
        (stage_dir / page).write_text(text)
    notebooks = stored_notebooks()
    for path in notebooks:
        nb = page_notebook(json.loads(path.read_text()))
        (stage_dir / "notebooks" / path.name).write_text(json.dumps(nb, indent=1))
    return notebooks


def _repository_link(match: re.Match) -> str:
    import tomllib  # noqa: PLC0415

    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    return f"]({url}/blob/main/{match[1]})"


def build(stage_dir: Path = STAGE, out: Path = SITE) -> float:
    """Stage and run Sphinx, warnings as errors; the seconds it took."""
    began = time.perf_counter()
    stage(stage_dir)
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-n", "-W",
                           "--keep-going", "-q", "-d", str(stage_dir / "_doctrees"),
                           str(stage_dir), str(out)])
    if done.returncode:
        raise SystemExit(f"the site did not build without warnings (sphinx exit "
                         f"{done.returncode}); see its messages above")
    return time.perf_counter() - began


class _Refs(HTMLParser):
    """Every URL a page refers to, with the tag and attribute it is in, and its ids."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if value and name in ("href", "src") and not value.startswith(("data:", "#")):
                self.refs.append((tag, name, value))


def _parse(page: Path, cache: dict[Path, _Refs]) -> _Refs:
    if page not in cache:
        cache[page] = _Refs()
        cache[page].feed(page.read_text(encoding="utf-8"))
    return cache[page]


def check(out: Path = SITE) -> dict[str, object]:
    """Look at the built pages: local links and images resolve, nothing loads from elsewhere.

    A link (``<a href>``) to another host is fine: a reader follows it by choice. A script,
    stylesheet, image, font or frame from another host is not: it would load when the page
    is read. Returns counts and the problems found."""
    pages = sorted(p for p in out.rglob("*.html") if "_static" not in p.relative_to(out).parts)
    links = images = 0
    problems: list[str] = []
    parsed: dict[Path, _Refs] = {}
    for page in pages:
        for tag, attr, value in _parse(page, parsed).refs:
            parts = urlsplit(value)
            where = f"{page.relative_to(out)}: <{tag} {attr}={value!r}>"
            if parts.scheme or value.startswith("//"):
                if not (tag == "a" and attr == "href") and parts.scheme in ("http", "https", ""):
                    problems.append(f"{where} loads from another host")
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            links += tag == "a"
            images += tag == "img"
            if not target.exists():
                problems.append(f"{where} is missing")
            elif parts.fragment and target.suffix == ".html" and \
                    parts.fragment not in _parse(target, parsed).ids:
                problems.append(f"{where}: {target.name} has no #{parts.fragment}")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {"pages": len(pages), "links": links, "images": images, "bytes": size,
            "problems": problems}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.site",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="after building, check the pages' links, images and hosts")
    parser.add_argument("--no-build", action="store_true", help="check the site already built")
    args = parser.parse_args(argv)
    if not args.no_build:
        seconds = build()
        print(f"built {SITE.relative_to(ROOT)} in {seconds:.1f} s")
    if args.check or args.no_build:
        found = check()
        print(f"{found['pages']} pages, {found['links']} local links, {found['images']} local "
              f"images, {found['bytes'] / 1e6:.1f} MB")
        for p in found["problems"]:
            print(p, file=sys.stderr)
        if found["problems"]:
            return 1
    return 0
