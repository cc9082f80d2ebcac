"""TEACHING.md's run minutes come from a run's JUnit report, never from typing."""

import json
import re

import pytest

from tools import teaching

GUIDE = """# Guide

<!-- minutes:start -->
| # | notebook | run minutes (measured) | discussion minutes (planned) | class minutes |
|---|---|---|---|---|
| 00 | [check](notebooks/00_check.ipynb) | not yet measured | 10 | - |
| 01 | [devices](notebooks/01_devices.ipynb) | 9.9 | 20 | 30 |
| 11 | all-reduce | not yet measured | 30 | - |
<!-- minutes:end -->

## After the table
"""


def junit(path, cells):
    """A pytest JUnit (xunit1) report: cells = [(notebook, seconds, failed)]."""
    cases = "".join(
        f'<testcase classname="{nb}" name="Cell {i}" file="notebooks/{nb}" time="{s}">'
        + ("<failure message='x'/>" if failed else "") + "</testcase>"
        for i, (nb, s, failed) in enumerate(cells))
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest" '
                    f'timestamp="2030-05-06T07:08:09" tests="{len(cells)}">{cases}'
                    "</testsuite></testsuites>")
    return path


MACHINE = {"cpu": "Test CPU", "logical_cpus": 2, "gpus": []}


def test_minutes_are_the_sum_of_each_notebooks_cells(tmp_path):
    report = junit(tmp_path / "j.xml", [("00_check.ipynb", 20.0, False),
                                        ("00_check.ipynb", 10.0, False),
                                        ("01_devices.ipynb", 90.0, True)])
    minutes, failed = teaching.run_minutes(report)
    assert minutes == {"00": pytest.approx(0.5), "01": pytest.approx(1.5)}
    assert failed == {"01": 1}
    assert teaching.report_time(report) == "2030-05-06"


def test_the_table_gets_the_measured_minutes_and_keeps_the_plan(tmp_path):
    text = teaching.update(GUIDE, {"00": 0.5, "01": 1.54},
                           teaching.note("2030-05-06", "ci", MACHINE))
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[3:6]]
            for line in text.splitlines() if re.match(r"\| \d\d ", line)}
    assert rows == {"00": ["0.5", "10", "11"], "01": ["1.5", "20", "22"],
                    "11": ["not yet measured", "30", "-"]}
    assert "| **total** | 2.0 | 30 | 33 (2 of 3 notebooks) |" in text
    assert "on 2030-05-06, profile `ci`, Test CPU (2 logical CPUs)" in text
    assert text.startswith("# Guide\n") and text.endswith("## After the table\n")
    assert teaching.update(text, {"00": 0.5, "01": 1.54},
                           teaching.note("2030-05-06", "ci", MACHINE)) == text


def test_the_note_names_the_machine_and_the_load_of_a_run():
    run = {"seconds": 300.0, "exit_code": 0, "load_before": [1.5, 1, 1],
           "load_after": [3.25, 2, 1]}
    text = teaching.note("2030-05-06", "ci", {**MACHINE, "gpus": ["T4 (15 GiB)"]}, run)
    assert "GPUs: T4 (15 GiB)" in text and "5.0 min of wall time" in text
    assert "load average 1.5 before and 3.2 after" in text


def test_a_run_with_failing_cells_is_never_recorded(tmp_path, capsys):
    guide = tmp_path / "TEACHING.md"
    guide.write_text(GUIDE)
    report = junit(tmp_path / "j.xml", [("00_check.ipynb", 30.0, False),
                                        ("00_check.ipynb", 5.0, True)])
    assert teaching.main(["--junit", str(report), "--teaching", str(guide)]) == 1
    assert guide.read_text() == GUIDE
    assert "failing cells in 00 (1 cell(s))" in capsys.readouterr().err


def test_a_notebook_without_a_row_or_a_guide_without_a_table_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no row for notebook.* 05"):
        teaching.update(GUIDE, {"05": 1.0}, "note")
    with pytest.raises(ValueError, match="one minutes table"):
        teaching.update("# no table\n", {"00": 1.0}, "note")
    with pytest.raises(ValueError, match="not a notebook"):
        teaching.run_minutes(junit(tmp_path / "j.xml", [("test_x.py", 1.0, False)]))


def test_command_line_fills_the_guide_from_a_report(tmp_path, capsys):
    guide = tmp_path / "TEACHING.md"
    guide.write_text(GUIDE)
    report = junit(tmp_path / "j.xml", [("00_check.ipynb", 30.0, False)])
    assert teaching.main(["--junit", str(report), "--teaching", str(guide)]) == 0
    assert "| 00 | [check](notebooks/00_check.ipynb) | 0.5 | 10 | 11 |" in guide.read_text()
    assert "run minutes of 00 written" in capsys.readouterr().out


def test_a_real_run_of_a_notebook_fills_its_minutes(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    cell = {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {},
            "outputs": [], "source": "import time\ntime.sleep(1.0)\nassert True"}
    (folder / "00_check.ipynb").write_text(json.dumps(
        {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                                      "display_name": "Python 3"}},
         "nbformat": 4, "nbformat_minor": 5}))
    run = teaching.run_suite(tmp_path / "junit.xml", notebooks=folder)
    assert run["exit_code"] == 0
    minutes, failed = teaching.run_minutes(tmp_path / "junit.xml")
    assert failed == {} and list(minutes) == ["00"]
    assert 1.0 / 60 <= minutes["00"] < 2.0  # the cell's sleep, plus a kernel's start-up


def test_the_guide_has_a_row_for_every_notebook_of_the_series():
    _, rows, _ = teaching.parse_rows(teaching.TEACHING.read_text())
    numbers = [r.number for r in rows]
    stored = {p.name[:2] for p in (teaching.ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert numbers == sorted(stored), (numbers, sorted(stored))
    for row in rows:
        assert row.run == teaching.NOT_MEASURED or float(row.run) > 0


PROFILES = """# Guide
<!-- profiles:start -->
| # | ci (min) |
|---|---|
| 00 | 0.1 |
| 05 | 0.3 |

- `ci`: `make run PROFILE=ci` on 2030-01-01, Old CPU (2 logical CPUs), 0.4 min in all.
<!-- profiles:end -->
after
"""


def profile_run(status="ok"):
    return {"profile": "laptop", "date": "2030-05-06", "machine": MACHINE,
            "runs": [{"notebook": "00_check", "status": "ok", "seconds": 6.0},
                     {"notebook": "05_mirrored", "status": status, "seconds": 90.0}]}


def test_a_profile_run_fills_its_own_column_and_keeps_the_others():
    text = teaching.update_profile(PROFILES, profile_run())
    assert "| 00 | 0.1 | 0.1 |" in text and "| 05 | 0.3 | 1.5 |" in text, text
    assert "`laptop`: `make run PROFILE=laptop` on 2030-05-06, Test CPU (2 logical CPUs)" in text
    assert "`ci`: `make run PROFILE=ci` on 2030-01-01" in text and text.endswith("after\n")
    newer = {**profile_run(), "runs": [*profile_run()["runs"],
                                       {"notebook": "14_new", "status": "ok", "seconds": 30.0}]}
    assert "| 14 |  | 0.5 |" in teaching.update_profile(PROFILES, newer)  # a row of its own
    again = teaching.update_profile(text, profile_run())  # a second run replaces, not appends
    assert again.count("`laptop`:") == 1 and again.count("laptop (min)") == 1


def test_a_profile_run_with_a_failing_notebook_is_not_recorded():
    with pytest.raises(ValueError, match="05_mirrored did not pass"):
        teaching.update_profile(PROFILES, profile_run(status="failed"))


def test_a_shrunk_profile_run_is_not_recorded_as_that_profile():
    with pytest.raises(ValueError, match="shrank the laptop profile 16x"):
        teaching.update_profile(PROFILES, {**profile_run(), "shrink": 16})
