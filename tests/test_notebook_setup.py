"""Badges and the setup cell: written from pyproject's address, no-op in the repository."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers.environment import read_pins
from tools import notebook_setup as ns

ROOT = Path(__file__).resolve().parent.parent
URL = "https://github.com/someone/a-fork"


def notebook(*cells):
    """A notebook from (cell_type, source, tags) triples."""
    nb = nbformat.v4.new_notebook()
    for cell_type, source, tags in cells:
        make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
        cell = make(source)
        if tags:
            cell.metadata["tags"] = list(tags)
        nb.cells.append(cell)
    return nb


def series_like():
    return notebook(("markdown", "# 04 · Title", ()),
                    ("code", "profile = None", ("parameters",)),
                    ("code", "from helpers import get_profile", ()),
                    ("markdown", "### Exercise 1", ()),
                    ("code", "# Solution 1\nx = 1\nassert x", ()))


def test_the_address_comes_from_pyproject_and_must_be_a_github_repository(tmp_path):
    assert ns.repository_url().startswith("https://github.com/")
    bad = tmp_path / "pyproject.toml"
    bad.write_text('[project.urls]\nRepository = "https://gitlab.com/x/y"\n')
    with pytest.raises(ValueError, match="github.com/OWNER/NAME"):
        ns.repository_url(bad)
    bad.write_text('[project]\nname = "x"\n')
    with pytest.raises(ValueError, match=r"\[project.urls\] Repository"):
        ns.repository_url(bad)
    good = tmp_path / "good.toml"
    good.write_text('[project.urls]\nRepository = "https://github.com/someone/a-fork.git"\n')
    assert ns.repository_url(good) == URL


def test_badges_point_at_the_notebook_on_colab_and_kaggle():
    text = ns.badges_source(URL, "notebooks/04_x.ipynb", "main")
    assert ("(https://colab.research.google.com/github/someone/a-fork/blob/main/"
            "notebooks/04_x.ipynb)") in text
    assert ("(https://kaggle.com/kernels/welcome?src=https://github.com/someone/a-fork/blob/"
            "main/notebooks/04_x.ipynb)") in text
    assert "Open in Colab" in text and "Open in Kaggle" in text


def test_badges_first_setup_is_the_first_code_cell_and_a_second_run_changes_nothing():
    nb = series_like()
    changes = ns.update_notebook(nb, "notebooks/04_x.ipynb", URL)
    assert changes == ["added the badges cell", "added the setup cell"]
    assert nb.cells[0]["id"] == "badges" and nb.cells[0]["cell_type"] == "markdown"
    assert "notebooks/04_x.ipynb" in nb.cells[0]["source"]
    assert nb.cells[1].source.startswith("# 04")  # the title follows the badges
    assert nb.cells[2]["id"] == "setup" and nb.cells[2]["cell_type"] == "code"
    assert nb.cells[3].metadata["tags"] == ["parameters"]  # papermill's cell comes after
    assert URL in nb.cells[2]["source"]
    nbformat.validate(nbformat.from_dict(nb))
    assert ns.update_notebook(nb, "notebooks/04_x.ipynb", URL) == []


def test_stale_or_misplaced_cells_are_updated_and_moved():
    nb = series_like()
    ns.update_notebook(nb, "notebooks/04_x.ipynb", URL)
    setup = nb.cells.pop(2)
    setup["source"] = "old text"
    setup["outputs"] = [nbformat.v4.new_output("stream", text="noise\n")]
    nb.cells.append(setup)
    changes = ns.update_notebook(nb, "notebooks/04_x.ipynb", "https://github.com/other/repo")
    assert changes == ["updated the badges cell", "updated the setup cell",
                       "cleared the setup cell's outputs"]
    assert nb.cells[2]["id"] == "setup" and "github.com/other/repo" in nb.cells[2]["source"]
    assert nb.cells[2]["outputs"] == []
    assert sum(c.get("id") == "setup" for c in nb.cells) == 1


def test_solution_cells_are_tagged_only_on_request():
    nb = series_like()
    ns.update_notebook(nb, "notebooks/04_x.ipynb", URL)
    assert "tags" not in nb.cells[-1].metadata
    changes = ns.update_notebook(nb, "notebooks/04_x.ipynb", URL, tag_solutions=True)
    assert changes == ["tagged '# Solution 1' as a solution"]
    assert nb.cells[-1].metadata["tags"] == ["solution"]
    assert "tags" not in nb.cells[-2].metadata  # the exercise's statement is not touched


def test_check_fails_until_the_notebooks_are_written(tmp_path, capsys):
    path = tmp_path / "04_x.ipynb"
    nbformat.write(series_like(), path)
    assert ns.main(["--check", str(path)]) == 1
    assert "not up to date" in capsys.readouterr().out
    assert ns.main([str(path)]) == 0
    written = nbformat.read(path, as_version=4)
    assert written.cells[0].id == "badges" and "notebooks/04_x.ipynb" in written.cells[0].source
    assert ns.main(["--check", str(path)]) == 0
    assert "1 notebook(s) up to date" in capsys.readouterr().out


def test_the_setup_cell_prints_nothing_where_the_series_is_installed(tmp_path):
    # a fresh interpreter of this environment, started outside the repository like a kernel
    done = subprocess.run([sys.executable, "-c", ns.setup_source(URL)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""


def run_hosted(monkeypatch, tmp_path, returncode=0):
    """Run the setup cell as on a hosted runtime, where the series is not installed;
    commands are recorded instead of run."""
    commands = []

    def fake_run(command, **kwargs):
        commands.append(list(command))
        return subprocess.CompletedProcess(command, returncode, "", "fatal: no network")

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "helpers" else real_find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setenv("HOME", str(tmp_path))
    exec(compile(ns.setup_source(URL, "main"), "setup-cell", "exec"), {})  # noqa: S102
    return commands


def test_on_a_hosted_runtime_the_cell_clones_installs_and_asks_for_a_restart(
        monkeypatch, tmp_path, capsys):
    commands = run_hosted(monkeypatch, tmp_path)
    home = str(tmp_path / "a-fork")
    assert commands == [
        ["git", "clone", "--quiet", "--depth=1", "--branch=main", URL, home],
        [sys.executable, "-m", "pip", "install", "--quiet", "-e", home + "[runtime]"]]
    out = capsys.readouterr().out
    assert out.startswith("Installed. Now restart the session") and "run all cells" in out
    # run again before the restart: the clone is there, only the install is repeated
    (tmp_path / "a-fork").mkdir()
    assert [c[0] for c in run_hosted(monkeypatch, tmp_path)] == [sys.executable]


def test_a_failed_install_says_what_went_wrong(monkeypatch, tmp_path):
    with pytest.raises(RuntimeError, match="fatal: no network"):
        run_hosted(monkeypatch, tmp_path, returncode=128)


def test_the_runtime_extra_is_requirements_without_the_maintainers_tools():
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["runtime"]
    pinned = dict(r.split("==") for r in extra if "==" in r)
    pins = read_pins()
    assert {p: pins[p] for p in pinned} == pinned  # same versions as requirements.txt
    assert {"tensorflow", "mxnet", "numpy", "matplotlib", "threadpoolctl", "psutil"} <= set(
        pinned)
    assert not set(pinned) & {"jupyterlab", "nbval", "pytest", "ruff", "papermill"}
    assert "setuptools" in [r.split(";")[0].strip() for r in extra]  # distutils on 3.12


def test_every_stored_notebook_has_current_badges_and_setup_cell():
    stale = {p.name: ns.process(p, ns.repository_url(), write=False)
             for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
    stale = {name: changes for name, changes in stale.items() if changes}
    assert not stale, ("run `python -m tools.notebook_setup`: "
                       + json.dumps(stale, indent=1))


def test_the_readme_badge_line_is_written_from_the_address():
    text = "# Title\n\n<!-- badges:start -->\nold\n<!-- badges:end -->\n\nBody\n"
    new = ns.update_readme(text, URL)
    assert new.startswith("# Title\n\n<!-- badges:start -->\n[![CI](")
    assert f"({URL}/actions/workflows/ci.yml)" in new
    assert "github/someone/a-fork/blob/main/notebooks/00_environment_check.ipynb" in new
    assert new.endswith("<!-- badges:end -->\n\nBody\n") and "old" not in new
    assert ns.update_readme(new, URL) == new
    with pytest.raises(ValueError, match="badges:start"):
        ns.update_readme("# no block\n", URL)


def test_the_readme_badges_are_current():
    text = ns.README.read_text()
    assert ns.update_readme(text, ns.repository_url()) == text, (
        "run `python -m tools.notebook_setup`")
