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

* Detection is ``importlib.util.find_spec("helpers")``: it finds the installed series
  (``pip install -e .`` registers it) without importing anything, so in the repository
  the cell costs microseconds and writes no output.
* It clones the repository and installs it editable (``pip install -e <clone>[runtime]``)
  rather than installing a wheel from git: the series then has the same layout as a
  checkout (``requirements.txt`` beside ``helpers/`` for notebook 00's pin check, the
  worker programs whose source the notebooks show, ``results/`` at the top), and the
  worker processes that the cluster notebooks start find ``helpers`` through the
  editable install.
* The install is inline rather than in a module fetched at run time: a learner reads in
  the cell exactly what it runs (``git clone``, ``pip install``), and no code is
  downloaded and executed unseen. The packages are the ``runtime`` extra of
  ``pyproject.toml`` (the notebooks' packages from ``requirements.txt``, without
  JupyterLab, nbval, pytest or ruff; a unit test keeps the two lists in agreement) and
  MXNet from ``requirements-mxnet.txt``, without its stale ``numpy<2``. pip's output is
  printed line by line: about 700 MB take minutes, and silence looks like a hang.
* No restart where none is needed. Colab (Python 3.13) has numpy 2.1.3 imported before the
  first cell runs; the extra gives numpy a range that includes it, so pip keeps it, and the
  cell puts the clone on ``sys.path`` itself (the editable install's ``.pth`` file is read
  only when Python starts, so it serves the cluster's worker processes, not this one).
  ``helpers.import_mxnet`` imports setuptools where ``distutils`` (which MXNet imports) is
  not importable yet. Only where pip had to replace a module that the session already
  holds in memory (a numpy outside the range, an older matplotlib) is a new process
  needed: the cell then *raises* after saying so, so that "Run all" and Kaggle's "Save
  Version" stop there instead of failing later in confusing ways.
* The clone matches the notebook: the cell clones the tag of this release (``v`` +
  ``[project] version``; maintainers tag every version they publish) and says so when the
  repository has no such tag and it takes ``main``. ``SERIES_REPOSITORY`` and
  ``SERIES_REF`` override the address and the ref (forks, mirrors, tests).
* An unsupported Python gets one paragraph saying what to do, raised before anything is
  installed.

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
)

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
README = ROOT / "README.md"
FIRST_NOTEBOOK = "notebooks/00_environment_check.ipynb"
BRANCH = "main"
README_START, README_END = "<!-- badges:start -->", "<!-- badges:end -->"
_GITHUB = re.compile(r"^https://github\.com/(?P<slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(\.git)?/?$")

SETUP_TEMPLATE = '''\
# Setup for Colab and Kaggle: fetch the series and install its packages (a few minutes; pip
# shows its progress). Wherever the series is installed already (its repository after `make`)
# this does nothing. SERIES_REPOSITORY and SERIES_REF name another copy (a fork, a mirror).
import importlib
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("helpers") is None:
    if not (3, 11) <= sys.version_info[:2] <= (3, 13):
        raise RuntimeError(
            f"This runtime has Python {{sys.version_info[0]}}.{{sys.version_info[1]}}; the series "
            "runs on Python 3.11 to 3.13 (TensorFlow 2.21 has no wheel for newer ones). On "
            "Colab, open the Command Palette and choose 'Use fallback runtime version', or a "
            "runtime with Python 3.12 or 3.13; elsewhere, open this notebook with Python 3.13.")
    repository = os.environ.get("SERIES_REPOSITORY", "{url}")
    ref = os.environ.get("SERIES_REF", "{ref}")  # the release these notebooks belong to
    home = os.path.expanduser("~/{name}")

    def run(*command):  # printed line by line: every notebook front end shows print()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
        tail = []
        for line in process.stdout:
            print(line, end="")
            tail = (tail + [line.strip()])[-3:]
        if process.wait():  # on Kaggle: switch Internet on in the notebook's settings
            raise RuntimeError(f"{{' '.join(command[:4])}} ... failed: {{' | '.join(tail)}}")

    if not os.path.isdir(home):
        found = subprocess.run(["git", "ls-remote", repository, ref], capture_output=True,
                               text=True).stdout
        if not found.strip():
            print(f"{{repository}} has no {{ref}}: taking its main branch, which may be newer")
            ref = "main"
        run("git", "clone", "--depth=1", f"--branch={{ref}}", repository, home)
    # TensorFlow, matplotlib, ...; numpy only if the platform's is outside the series' range.
    # Kaggle pins protobuf 5 and TensorFlow 2.21 needs 6.31+: pip upgrades it and names the
    # preinstalled packages that wanted 5; the series uses none of them.
    run(sys.executable, "-m", "pip", "install", "-e", home + "[runtime]")
    # MXNet 1.9.1 declares numpy<2, which is stale: installed without its requirements.
    run(sys.executable, "-m", "pip", "install", "--no-deps", "-r",
        os.path.join(home, "requirements-mxnet.txt"))
    # The editable install reaches new processes (cluster workers); this one needs the path.
    sys.path.insert(0, home)
    importlib.invalidate_caches()
    from importlib import metadata

    stale = []  # modules in memory that pip replaced on disk: only a new process sees those
    for module, dist in [("numpy", "numpy"), ("matplotlib", "matplotlib"), ("psutil", "psutil"),
                         ("google.protobuf", "protobuf")]:
        if module in sys.modules:
            before, now = sys.modules[module].__version__, metadata.version(dist)
            stale += [f"{{dist}} {{before}} (now {{now}})"] if before != now else []
    if stale:
        raise RuntimeError(
            f"Installed, but this session had {{', '.join(stale)}} loaded already. Restart the "
            "session once (Colab: Runtime > Restart session; Kaggle: Run > Restart & clear cell "
            "outputs) and run all cells: this cell will then do nothing.")
    print("The series is installed in this session: go on, no restart needed.")'''

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
    if tag_solutions:
        for cell in filter(headed_as_solution, cells):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if SOLUTION_TAG not in tags:
                tags.append(SOLUTION_TAG)
                changes.append(f"tagged {first_line(cell)!r} as a solution")
    return changes


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
