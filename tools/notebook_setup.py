"""Write the "Open in Colab / Kaggle" badges and the setup cell into every notebook.

``python -m tools.notebook_setup`` updates every ``notebooks/NN_name.ipynb`` in place;
``python -m tools.notebook_setup --check`` changes nothing and exits 1 if a notebook is
not up to date (CI and the pre-commit hook run it). Two cells, recognised by their ids:

* ``badges``, a markdown cell at the very top: "Open in Colab" and "Open in Kaggle" for
  that notebook's path in the repository.
* ``setup``, the first code cell: on a hosted runtime (Colab, Kaggle) it fetches the
  series and installs it with its pinned runtime stack; wherever the series is installed
  already (its repository after ``make``, the devcontainer, CI) it does nothing and
  prints nothing, so the stored notebooks stay the same on every machine.

Both are written from one address, ``[project.urls] Repository`` in ``pyproject.toml``,
and so is the badge line of ``README.md`` (between ``<!-- badges:start -->`` and
``<!-- badges:end -->``: CI status, and notebook 00 on Colab and Kaggle), which a run
over all notebooks updates and checks too. A fork changes that one line of
``pyproject.toml`` and reruns this command.

Why the setup cell looks the way it does:

* It is ten lines at most and folded (``jupyter.source_hidden`` for JupyterLab, ``cellView:
  form`` and a ``# @title`` line for Colab): bookkeeping, out of the lesson's way. The cell
  clones the repository; everything after the clone is ``tools/hosted_setup.py`` in that
  clone (pip installs, the path, the restart check), so what runs can still be read, and
  no code is downloaded and executed unseen.
* Detection is ``importlib.util.find_spec("helpers")``: it finds the installed series
  (``pip install -e .`` registers it) without importing anything, so in the repository
  the cell costs microseconds and writes no output.
* It clones the repository and installs it editable rather than installing a wheel from
  git: the series then has the same layout as a checkout (``requirements.txt`` beside
  ``helpers/`` for notebook 00's pin check, the worker programs whose source the notebooks
  show, ``results/`` at the top), and the worker processes that the cluster notebooks
  start find ``helpers`` through the editable install.
* The clone matches the notebook: the cell clones the tag of this release (``v`` +
  ``[project] version``) and says so when the repository has no such tag (or cannot be
  reached) and it takes ``main``. ``SERIES_REPOSITORY`` and ``SERIES_REF`` override the
  address and the ref (forks, mirrors, tests).

Solution cells (tagged ``solution``) are folded too, code and output, so that a learner
opening a notebook sees each exercise before its answer; an answer written in markdown is
folded the same way.

``--tag-solutions`` also adds the ``solution`` tag to every code cell whose first line
is ``# Solution`` (the convention ``make student`` relies on).
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.cells import (
    BADGES_ID,
    NOTEBOOKS,
    SETUP_ID,
    SOLUTION_TAG,
    add_notebooks_argument,
    cell_source,
    chosen_notebooks,
    first_line,
    headed_as_solution,
    is_solution,
)

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
README = ROOT / "README.md"
FIRST_NOTEBOOK = "notebooks/00_environment_check.ipynb"
BRANCH = "main"
README_START, README_END = "<!-- badges:start -->", "<!-- badges:end -->"
_GITHUB = re.compile(r"^https://github\.com/(?P<slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(\.git)?/?$")

SETUP_TEMPLATE = '''\
# @title Setup for Colab and Kaggle (folded): where the series is installed, it does nothing
import importlib.util, os, runpy, subprocess
if importlib.util.find_spec("helpers") is None:  # a hosted runtime: fetch and install, minutes
    repository = os.environ.get("SERIES_REPOSITORY", "{url}")
    ref, home = os.environ.get("SERIES_REF", "{ref}"), os.path.expanduser("~/{name}")  # release, clone
    if not os.path.isdir(home) and subprocess.run(["git", "clone", "--depth=1", f"--branch={{ref}}", repository, home]).returncode:
        print(f"{{repository}} has no {{ref}} (or no network; on Kaggle switch Internet on): taking main")
        subprocess.run(["git", "clone", "--depth=1", repository, home], check=True)
    runpy.run_path(os.path.join(home, "tools", "hosted_setup.py"), run_name="__main__")'''

# Folded where the notebook opens: JupyterLab and Notebook 7 read `jupyter.source_hidden`,
# Colab shows a `cellView: form` cell as its `# @title` line.
SETUP_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True}}
# A solution is folded, its output too, so that a learner sees the exercise first.
SOLUTION_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True, "outputs_hidden": True}}
MARKDOWN_FOLD = {"jupyter": {"source_hidden": True}}  # an answer written in prose

BADGES_TEMPLATE = (
    "[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
    "(https://colab.research.google.com/github/{slug}/blob/{branch}/{path}) "
    "[![Open in Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)]"
    "(https://kaggle.com/kernels/welcome?src={url}/blob/{branch}/{path})"
)


def repository_url(pyproject: Path = PYPROJECT) -> str:
    """The repository's address: ``[project.urls] Repository`` of ``pyproject.toml``."""
    with open(pyproject, "rb") as f:
        data = tomllib.load(f)
    url = data.get("project", {}).get("urls", {}).get("Repository")
    if not url:
        raise ValueError(f"{pyproject.name} has no [project.urls] Repository; add the "
                         "repository's https://github.com/OWNER/NAME address there")
    if not _GITHUB.match(url):
        raise ValueError(f"the Repository address must look like https://github.com/OWNER/NAME "
                         f"(Colab and Kaggle open notebooks from GitHub), not {url!r}")
    return url.rstrip("/").removesuffix(".git")


def github_slug(url: str) -> str:
    """``OWNER/NAME`` of a GitHub address."""
    match = _GITHUB.match(url)
    if match is None:
        raise ValueError(f"not a https://github.com/OWNER/NAME address: {url!r}")
    return match["slug"]


def release_ref(pyproject: Path = PYPROJECT) -> str:
    """The tag of this release, ``v`` + ``[project] version``: setup cells clone it, so that a
    notebook gets the helpers it was stored with (maintainers tag each version they publish)."""
    with open(pyproject, "rb") as f:
        return "v" + tomllib.load(f)["project"]["version"]


def setup_source(url: str, ref: str | None = None) -> str:
    """The setup cell's code for the repository at ``url``, cloning ``ref`` (this release's
    tag unless given)."""
    return SETUP_TEMPLATE.format(url=url, ref=ref or release_ref(),
                                 name=github_slug(url).split("/")[1])


def badges_source(url: str, path: str, branch: str = BRANCH) -> str:
    """The badges cell's markdown for the notebook at ``path`` (relative to the repository)."""
    return BADGES_TEMPLATE.format(url=url, slug=github_slug(url), branch=branch, path=path)


def readme_badges(url: str, branch: str = BRANCH) -> str:
    """The README's badge line: CI status, and the series' first notebook on Colab/Kaggle."""
    ci = (f"[![CI]({url}/actions/workflows/ci.yml/badge.svg?branch={branch})]"
          f"({url}/actions/workflows/ci.yml)")
    return f"{ci} {badges_source(url, FIRST_NOTEBOOK, branch)}"


def update_readme(text: str, url: str, branch: str = BRANCH) -> str:
    """``text`` (README.md) with its badge line written from ``url``."""
    if text.count(README_START) != 1 or text.count(README_END) != 1:
        raise ValueError(f"README.md must hold one {README_START} ... {README_END} block")
    before, rest = text.split(README_START)
    _, after = rest.split(README_END)
    return f"{before}{README_START}\n{readme_badges(url, branch)}\n{README_END}{after}"


def _cell(cell_type: str, cell_id: str, source: str) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": cell_type, "id": cell_id, "metadata": {},
                            "source": source}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def update_notebook(nb: dict[str, Any], path: str, url: str, branch: str = BRANCH,
                    tag_solutions: bool = False) -> list[str]:
    """Bring ``nb`` (a notebook as JSON) up to date in place; return what changed.

    The badges cell ends up first and the setup cell becomes the first code cell, each
    with its current text; a setup cell keeps no outputs (it prints nothing where the
    stored notebooks are executed). Every other cell is left exactly as it was.
    """
    changes: list[str] = []
    cells: list[dict[str, Any]] = nb.setdefault("cells", [])
    wanted = {BADGES_ID: ("markdown", badges_source(url, path, branch)),
              SETUP_ID: ("code", setup_source(url))}
    found: dict[str, dict[str, Any]] = {}
    for cell_id in wanted:
        index = next((i for i, c in enumerate(cells) if c.get("id") == cell_id), None)
        if index is not None:
            found[cell_id] = cells.pop(index)
    for cell_id, (cell_type, source) in wanted.items():
        old = found.get(cell_id)
        if old is None:
            found[cell_id] = _cell(cell_type, cell_id, source)
            changes.append(f"added the {cell_id} cell")
            continue
        if old.get("cell_type") != cell_type or cell_source(old) != source:
            old.update(cell_type=cell_type, source=source)
            changes.append(f"updated the {cell_id} cell")
        if cell_type == "code" and old.get("outputs"):
            old["outputs"] = []
            changes.append(f"cleared the {cell_id} cell's outputs")
    first_code = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"),
                      len(cells))
    cells.insert(first_code, found[SETUP_ID])
    cells.insert(0, found[BADGES_ID])
    if _fold(found[SETUP_ID], SETUP_METADATA):
        changes.append("folded the setup cell")
    if tag_solutions:
        for cell in filter(headed_as_solution, cells):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if SOLUTION_TAG not in tags:
                tags.append(SOLUTION_TAG)
                changes.append(f"tagged {first_line(cell)!r} as a solution")
    for cell in filter(is_solution, cells):
        fold = SOLUTION_METADATA if cell.get("cell_type") == "code" else MARKDOWN_FOLD
        if _fold(cell, fold):
            changes.append(f"folded the solution {first_line(cell)[:40]!r}")
    return changes


def _fold(cell: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Give ``cell`` the folding metadata in ``wanted`` (merged, other keys kept); whether it
    changed."""
    metadata = cell.setdefault("metadata", {})
    before = copy.deepcopy(metadata)
    for key, value in wanted.items():
        if isinstance(value, dict):
            metadata[key] = {**metadata.get(key, {}), **value}
        else:
            metadata[key] = value
    return metadata != before


def _positions_changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    ids = [c.get("id") for c in before.get("cells", [])]
    return ids != [c.get("id") for c in after.get("cells", [])]


def process(path: Path, url: str, branch: str = BRANCH, *, write: bool = True,
            tag_solutions: bool = False) -> list[str]:
    """Update (or, with ``write=False``, only inspect) one notebook file; what changed.

    Its badges point at ``notebooks/<file name>`` in the repository, where the series'
    notebooks live (so a copy elsewhere gets the same cells as the original).
    """
    import nbformat  # noqa: PLC0415

    nb = nbformat.read(path, as_version=4)
    before = copy.deepcopy(nb)
    changes = update_notebook(nb, f"{NOTEBOOKS.name}/{path.name}", url, branch, tag_solutions)
    if _positions_changed(before, nb) and not changes:
        changes.append("moved the badges or setup cell to its place")
    if changes and write:
        nb = nbformat.from_dict(nb)
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return changes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.notebook_setup",
                                     description=__doc__.splitlines()[0])
    add_notebooks_argument(parser, "update")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a notebook is not up to date")
    parser.add_argument("--branch", default=BRANCH,
                        help="the branch the badges point at (default: %(default)s); setup cells "
                             "clone the release tag, v + pyproject's version")
    parser.add_argument("--tag-solutions", action="store_true",
                        help="also tag code cells that start with '# Solution' as 'solution'")
    args = parser.parse_args(argv)
    notebooks = chosen_notebooks(parser, args.notebooks)
    try:
        url = repository_url()
        outdated = 0
        if not args.notebooks:  # a run over the whole series keeps the README's badges too
            text = README.read_text()
            if update_readme(text, url, args.branch) != text:
                outdated += 1
                print(f"{README.name}: {'not up to date' if args.check else 'updated'}: badges")
                if not args.check:
                    README.write_text(update_readme(text, url, args.branch))
        for path in notebooks:
            changes = process(path, url, args.branch, write=not args.check,
                              tag_solutions=args.tag_solutions)
            if changes:
                outdated += 1
                verb = "not up to date" if args.check else "updated"
                print(f"{path.name}: {verb}: {'; '.join(changes)}")
    except ValueError as err:
        parser.error(str(err))
    if args.check and outdated:
        print(f"{outdated} file(s) out of date: run `python -m tools.notebook_setup`",
              file=sys.stderr)
        return 1
    if not outdated:
        print(f"{len(notebooks)} notebook(s) up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
