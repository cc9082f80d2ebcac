"""make student: copies without solutions or their outputs, and a check that fails on a leak."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import student
from tools.cells import stored_notebooks

ROOT = Path(__file__).resolve().parent.parent
ANSWER = "the answer is 42 GFLOP/s\n"


def with_solutions():
    """A synthetic lesson: badges, a lesson cell, an exercise, two solutions (one tagged,
    one only headed), a markdown solution, a later lesson cell."""
    nb = nbformat.v4.new_notebook()
    cells = [
        nbformat.v4.new_markdown_cell("[![Open in Colab](x)](y)"),
        nbformat.v4.new_code_cell("x = 1\nprint('lesson line')", execution_count=1,
                                  outputs=[nbformat.v4.new_output("stream", text="lesson line\n")]),
        nbformat.v4.new_markdown_cell("### Exercise 1\nMeasure it."),
        nbformat.v4.new_code_cell("# Solution 1\nprint('the answer is 42 GFLOP/s')",
                                  execution_count=2,
                                  outputs=[nbformat.v4.new_output("stream", text=ANSWER)]),
        nbformat.v4.new_code_cell("# Solution 2\nprint('lesson line')\nassert True",
                                  execution_count=3,
                                  outputs=[nbformat.v4.new_output("stream", text="lesson line\n"),
                                           nbformat.v4.new_output(
                                               "display_data", data={"image/png": "iVBORw0K"})]),
        nbformat.v4.new_markdown_cell("Why: the cache is warm."),
        nbformat.v4.new_code_cell("save_results('x', {})", execution_count=4),
    ]
    cells[0]["id"] = "badges"
    cells[3].metadata["tags"] = ["solution"]
    cells[5].metadata["tags"] = ["solution"]
    nb.cells = cells
    return json.loads(nbformat.writes(nb))


def test_solutions_become_empty_cells_and_the_rest_is_kept():
    copy = student.student_copy(with_solutions())
    sources = ["".join(c["source"]) for c in copy["cells"]]
    assert sources == ["x = 1\nprint('lesson line')", "### Exercise 1\nMeasure it.",
                       "# Exercise 1: your solution", "# Exercise 2: your solution",
                       "save_results('x', {})"]
    assert "".join(copy["cells"][0]["outputs"][0]["text"]) == "lesson line\n"  # kept
    assert copy["cells"][2]["outputs"] == [] and copy["cells"][2]["execution_count"] is None
    assert student.leaks(with_solutions(), copy) == []
    nbformat.validate(nbformat.from_dict(copy))


def test_the_check_catches_every_kind_of_leak():
    original = with_solutions()
    leaked = json.loads(json.dumps(original))
    del leaked["cells"][0]  # badges gone, the rest left as it was: every solution leaks
    found = student.leaks(original, leaked)
    assert "cell 3 is a solution cell ('# Solution 1')" in found
    assert "cell 3 holds a solution's source" in found
    assert "cell 3 shows a solution's output" in found
    assert "cell 4 is a solution cell ('# Solution 2')" in found
    assert "cell 4 shows a solution's output" in found  # the image; its text is a lesson's
    assert "cell 5 is a solution cell ('Why: the cache is warm.')" in found
    # an answer pasted into a lesson cell's output leaks too, with no solution cell around
    pasted = student.student_copy(original)
    pasted["cells"][0]["outputs"].append({"output_type": "stream", "name": "stdout",
                                          "text": ANSWER})
    assert student.leaks(original, pasted) == ["cell 1 shows a solution's output"]


def test_an_untagged_solution_counts_as_one():
    nb = with_solutions()
    nb["cells"][3]["metadata"] = {}
    assert student.is_solution(nb["cells"][3])
    assert all("Solution" not in "".join(c["source"])
               for c in student.student_copy(nb)["cells"])


def test_make_student_writes_clean_copies_and_fails_on_a_leak(tmp_path, monkeypatch, capsys):
    source = tmp_path / "notebooks" / "03_x.ipynb"
    source.parent.mkdir()
    original = with_solutions()
    source.write_text(json.dumps(original))
    out = tmp_path / "build" / "student"
    assert student.main([str(source), "--output", str(out)]) == 0
    written = json.loads((out / "03_x.ipynb").read_text())
    assert student.leaks(original, written) == []
    assert "no solution left" in capsys.readouterr().out
    assert json.loads(source.read_text()) == original  # the original is untouched

    monkeypatch.setattr(student, "student_copy", lambda nb: nb)  # a copier that leaks
    assert student.main([str(source), "--output", str(out)]) == 1
    assert "03_x.ipynb: cell 4 is a solution cell" in capsys.readouterr().err


def test_the_copies_never_overwrite_the_originals(tmp_path):
    source = tmp_path / "03_x.ipynb"
    source.write_text(json.dumps(with_solutions()))
    with pytest.raises(SystemExit):
        student.main([str(source), "--output", str(tmp_path)])


def test_student_copies_of_the_stored_notebooks_hold_no_solution(tmp_path):
    problems = student.write_copies(stored_notebooks(), tmp_path)
    assert problems == {}


def test_after_the_exercises_heading_every_cell_is_a_statement_or_a_solution():
    """An answer written in markdown is tagged like a solution's code, so it never reaches a
    student copy: below ``## Exercises`` a markdown cell either states an exercise (it opens
    with ``### Exercise N``) or is tagged ``solution``, and no lesson code runs there (a
    later lesson cell must never need a solution's names)."""
    untagged = []
    for path in stored_notebooks():
        cells = json.loads(path.read_text())["cells"]
        start = next((i for i, c in enumerate(cells)
                      if "".join(c["source"]).startswith("## Exercises")), None)
        assert start is not None, f"{path.name} has no '## Exercises' section"
        for index, cell in enumerate(cells[start + 1:], start=start + 1):
            text = "".join(cell["source"])
            if not student.is_solution(cell) and not text.lstrip().startswith("### Exercise"):
                untagged.append(f"{path.name} cell {index}: {text[:60]!r}")
    assert not untagged, "tag these 'solution' or move them above the exercises:\n" + "\n".join(
        untagged)


@pytest.mark.notebooks
def test_every_student_copy_runs_top_to_bottom(tmp_path):
    """The copies a class gets run under nbval like the originals: a lesson cell that needed
    a solution's names would fail here with a NameError."""
    folder = ROOT / "build" / "student-run"  # inside the repository: its pytest options apply
    shutil.rmtree(folder, ignore_errors=True)
    assert student.write_copies(stored_notebooks(), folder) == {}
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                               str(folder.relative_to(ROOT))], cwd=ROOT, capture_output=True,
                              text=True, timeout=1800)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    tail = "\n".join(done.stdout.splitlines()[-30:])
    assert done.returncode == 0, f"a student copy failed under nbval:\n{tail}"
