"""Badges and the setup cell: written from pyproject's address, no-op in the repository."""

import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
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
    assert changes == ["added the badges cell", "added the setup cell", "folded the setup cell",
                       "folded the solution '# Solution 1'"]
    assert nb.cells[-1].metadata["jupyter"] == {"source_hidden": True, "outputs_hidden": True}
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


class FakeProcess:
    """What ``hosted_setup.run``'s ``subprocess.Popen`` sees: two lines of output, an exit code."""

    def __init__(self, returncode):
        self.stdout, self.returncode = iter(["Collecting ...\n", "fatal: no network\n"]), returncode

    def wait(self):
        return self.returncode


def run_hosted(monkeypatch, tmp_path, returncode=0, has_ref=True, ref="v9.9.9"):
    """Run the setup cell as on a hosted runtime, where the series is not installed: the
    clone is faked (it copies this repository's ``tools/hosted_setup.py`` into the new
    folder) and pip's commands are recorded instead of run. Returns the commands."""
    commands = []

    def fake_clone(command, **kwargs):
        commands.append(list(command))
        if not has_ref and any(a.startswith("--branch=") for a in command):
            return subprocess.CompletedProcess(command, 128)
        (Path(command[-1]) / "tools").mkdir(parents=True)
        shutil.copy(ROOT / "tools" / "hosted_setup.py", Path(command[-1]) / "tools")
        return subprocess.CompletedProcess(command, 0)

    def fake_popen(command, **kwargs):
        commands.append(list(command))
        return FakeProcess(returncode)

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "helpers" else real_find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", fake_clone)
    monkeypatch.setattr(subprocess, "Popen", fake_popen)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("HOME", str(tmp_path))
    exec(compile(ns.setup_source(URL, ref), "setup-cell", "exec"), {})  # noqa: S102
    return commands


def test_the_setup_cell_is_nine_lines_and_folded():
    lines = [line for line in ns.setup_source(URL).splitlines() if line.strip()]
    assert len(lines) <= 9 and lines[0].startswith("# @title "), lines
    nb = json.loads((ROOT / "notebooks" / "00_environment_check.ipynb").read_text())
    setup = next(c for c in nb["cells"] if c.get("id") == ns.SETUP_ID)
    assert setup["metadata"]["jupyter"]["source_hidden"] is True
    assert setup["metadata"]["cellView"] == "form"


def test_on_a_hosted_runtime_the_cell_clones_the_release_installs_and_goes_on(
        monkeypatch, tmp_path, capsys):
    commands = run_hosted(monkeypatch, tmp_path)
    home = str(tmp_path / "a-fork")
    assert commands == [
        ["git", "clone", "--depth=1", "--branch=v9.9.9", URL, home],
        [sys.executable, "-m", "pip", "install", "-e", home + "[runtime]"],
        [sys.executable, "-m", "pip", "install", "--no-deps", "-r",
         f"{home}/requirements-mxnet.txt"]]
    out = capsys.readouterr().out
    assert "Collecting ...\n" in out  # pip's output shown as it comes
    assert out.rstrip().endswith("no restart needed.")
    assert sys.path[0] == home  # this process imports the clone's helpers
    # run again: the clone is there, only the installs are repeated
    commands = run_hosted(monkeypatch, tmp_path)
    assert [c[:4] for c in commands] == [[sys.executable, "-m", "pip", "install"]] * 2


def test_the_release_is_the_package_version():
    assert ns.release_ref() == "v" + tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f'"{ns.release_ref()}")' in ns.setup_source(URL)


def test_without_the_release_tag_it_takes_main_and_says_so(monkeypatch, tmp_path, capsys):
    commands = run_hosted(monkeypatch, tmp_path, has_ref=False)
    assert commands[1] == ["git", "clone", "--depth=1", URL, str(tmp_path / "a-fork")]
    assert f"{URL} has no v9.9.9" in capsys.readouterr().out


def test_series_repository_and_ref_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SERIES_REPOSITORY", "/srv/mirror.git")
    monkeypatch.setenv("SERIES_REF", "my-branch")
    commands = run_hosted(monkeypatch, tmp_path)
    assert commands[0][3:5] == ["--branch=my-branch", "/srv/mirror.git"]


def test_a_module_replaced_under_the_session_stops_run_all(monkeypatch, tmp_path):
    from importlib import metadata

    real = metadata.version
    monkeypatch.setattr(metadata, "version",
                        lambda dist: "1.26.4" if dist == "numpy" else real(dist))
    with pytest.raises(RuntimeError, match=r"had numpy 2\.\S+ \(now 1\.26\.4\) loaded already\. "
                                           r"Restart the session once"):
        run_hosted(monkeypatch, tmp_path)


def test_an_unsupported_python_is_told_what_to_do_before_anything_installs(monkeypatch,
                                                                         tmp_path):
    monkeypatch.setattr(sys, "version_info", (3, 14, 0, "final", 0))
    with pytest.raises(RuntimeError, match="Python 3.14; the series runs on Python 3.11 to "
                                           "3.13.*fallback runtime") as raised:
        run_hosted(monkeypatch, tmp_path)
    assert "TensorFlow 2.21 has no wheel" in str(raised.value)
    assert not (tmp_path / "a-fork" / "requirements-mxnet.txt").exists()


def test_a_failed_install_says_what_went_wrong(monkeypatch, tmp_path):
    with pytest.raises(RuntimeError, match=r"-m pip install \.\.\. failed: "
                                           r"Collecting \.\.\. \| fatal: no network"):
        run_hosted(monkeypatch, tmp_path, returncode=1)


def test_the_runtime_extra_is_requirements_without_the_maintainers_tools():
    from packaging.requirements import Requirement

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["runtime"]
    wanted = {r.name: r.specifier for r in map(Requirement, extra)}
    pins = read_pins()
    for name, specifier in wanted.items():  # every pin of requirements.txt is allowed
        assert name not in pins or pins[name] in specifier, (name, specifier, pins[name])
    exact = {name for name, s in wanted.items() if str(s).startswith("==")}
    assert {"tensorflow", "matplotlib", "threadpoolctl", "psutil"} <= exact
    assert "numpy" not in exact  # a range: a platform's numpy inside it stays loaded
    assert "mxnet" not in wanted  # its numpy<2 cannot resolve: requirements-mxnet.txt
    assert not set(wanted) & {"jupyterlab", "nbval", "pytest", "ruff", "papermill"}
    assert "setuptools" in wanted  # distutils for MXNet on 3.12+


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
