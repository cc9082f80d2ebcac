"""`make run`: argument errors, notebook selection, and a real run of tiny notebooks."""

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tools.run_series import find_notebooks, main


def write_notebook(path, *sources, raising=()):
    cells = [new_code_cell("profile = None", metadata={"tags": ["parameters"]})]
    for i, source in enumerate(sources):
        tags = ["raises-exception"] if i in raising else []
        cells.append(new_code_cell(source, metadata={"tags": tags} if tags else {}))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture()
def notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("01_first", "02_second", "10_tenth"):
        write_notebook(folder / f"{name}.ipynb", "x = 1")
    (folder / "scratch.ipynb").write_text("{}")  # not part of the series: ignored
    return folder


def run_and_fail(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_unknown_profile_is_rejected_with_the_choices(notebooks, tmp_path, capsys):
    err = run_and_fail(["--notebooks", str(notebooks), "--output", str(tmp_path / "b"),
                        "--profile", "supercomputer"], capsys)
    assert "unknown profile 'supercomputer'" in err and "ci, laptop, gpu" in err
    assert not (tmp_path / "b").exists()


def test_unknown_profile_in_the_environment_is_rejected(notebooks, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SERIES_PROFILE", "huge")
    err = run_and_fail(["--notebooks", str(notebooks), "--output", str(tmp_path / "b")], capsys)
    assert "'huge' in $SERIES_PROFILE" in err


def test_missing_notebooks_folder_is_rejected(tmp_path, capsys):
    err = run_and_fail(["--notebooks", str(tmp_path / "nowhere"), "--profile", "ci",
                        "--output", str(tmp_path / "b")], capsys)
    assert "no notebooks folder" in err and "--notebooks" in err


def test_folder_without_series_notebooks_is_rejected(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    err = run_and_fail(["--notebooks", str(tmp_path / "empty"), "--profile", "ci"], capsys)
    assert "holds no notebooks named like 01_name.ipynb" in err


def test_only_must_name_existing_notebooks(notebooks, capsys):
    err = run_and_fail(["--notebooks", str(notebooks), "--profile", "ci", "--only", "07"], capsys)
    assert "no notebook matches ['07']" in err and "01_first" in err


def test_timeout_must_be_positive(notebooks, capsys):
    err = run_and_fail(["--notebooks", str(notebooks), "--profile", "ci", "--timeout", "0"], capsys)
    assert "--timeout must be > 0" in err


def test_notebooks_are_found_in_order_and_filtered(notebooks):
    assert [p.name for p in find_notebooks(notebooks)] == [
        "01_first.ipynb", "02_second.ipynb", "10_tenth.ipynb"]
    chosen = find_notebooks(notebooks, ["10", "01_first"])
    assert [p.stem for p in chosen] == ["01_first", "10_tenth"]


def test_series_runs_with_the_profile_and_goes_on_after_a_failing_notebook(tmp_path, capsys,
                                                                           monkeypatch):
    # main() points the kernels at the run's results folder and profile; restore afterwards
    monkeypatch.setenv("SERIES_RESULTS_DIR", str(tmp_path / "unused"))
    monkeypatch.setenv("SERIES_PROFILE", "ci")
    folder = tmp_path / "notebooks"
    folder.mkdir()
    save = ("import json, os, pathlib\n"
            "assert profile == 'laptop' and os.environ['SERIES_PROFILE'] == 'laptop'\n"
            "assert pathlib.Path.cwd().name == 'notebooks'\n"
            "record = {'name': '01_ok', 'machine': {'profile': profile},\n"
            "          'results': {'speedup': [1.0, 1.5], 'workers': [1, 2],\n"
            "                      'headline': {'speed-up, 2 workers': 1.5}}}\n"
            "folder = pathlib.Path(os.environ['SERIES_RESULTS_DIR'])\n"
            "(folder / '01_ok.json').write_text(json.dumps(record))")
    write_notebook(folder / "01_ok.ipynb", save, "raise ValueError('expected')", "done = True",
                   raising=[1])
    write_notebook(folder / "02_broken.ipynb", "x = 1", "1 / 0", "never = True")
    write_notebook(folder / "03_later.ipynb", "x = 3")
    write_notebook(folder / "04_false_claim.ipynb",
                   "assert 2 < 1, 'speed-up 0.9 with 2 workers, expected > 1'", "never = True")
    output = tmp_path / "build"

    assert main(["--notebooks", str(folder), "--output", str(output), "--profile", "laptop"]) == 1

    err = capsys.readouterr().err
    assert "02_broken.ipynb failed at In [4] `1 / 0`: ZeroDivisionError" in err
    assert ("04_false_claim.ipynb failed at In [3] `assert 2 < 1, 'speed-up 0.9 with 2 workers, "
            "expected > 1'`: AssertionError: speed-up 0.9 with 2 workers, expected > 1") in err
    results = json.loads((output / "results" / "01_ok.json").read_text())
    assert results["results"]["speedup"] == [1.0, 1.5]
    ok = nbformat.read(output / "01_ok.ipynb", as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in ok.cells)
    assert ok.cells[-1].execution_count is not None  # ran past the expected exception
    broken = nbformat.read(output / "02_broken.ipynb", as_version=4)
    assert broken.cells[-1].execution_count is None  # that notebook stopped at its error
    later = nbformat.read(output / "03_later.ipynb", as_version=4)
    assert later.cells[-1].execution_count is not None  # the run went on
    report = (output / "REPORT.md").read_text()
    assert "| [01_ok](01_ok.ipynb) | ok |" in report
    assert "| [02_broken](02_broken.ipynb) | failed |" in report
    assert "| [03_later](03_later.ipynb) | ok |" in report
    assert "| [04_false_claim](04_false_claim.ipynb) | failed |" in report
    assert "expected > 1" in report
    assert "| 01_ok | speed-up, 2 workers | 1.5 |" in report


def test_bad_input_unwritable_output_is_a_one_line_error(notebooks, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert main(["--notebooks", str(notebooks), "--output", str(blocker / "build")]) == 2
    err = capsys.readouterr().err
    assert "cannot write to --output" in err and "Traceback" not in err


def test_bad_input_shrink_factor_must_keep_sizes_whole(notebooks, capsys):
    err = run_and_fail(["--notebooks", str(notebooks), "--profile", "gpu", "--shrink", "3"],
                       capsys)
    assert "must be 1, 4, 16 or 64, not 3" in err
