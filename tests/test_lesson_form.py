"""Every notebook keeps the form a class can follow (tools/lesson_form.py says why)."""

import pytest

from tools import lesson_form
from tools.cells import stored_notebooks


@pytest.mark.parametrize("path", stored_notebooks(), ids=lambda p: p.name[:2])
def test_the_notebook_reads_as_a_lesson(path):
    problems = lesson_form.measure(path)["problems"]
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_the_code_a_class_reads_and_the_package_under_it_stay_small():
    code, package = lesson_form.code_lines(), lesson_form.package_lines()
    assert code <= 6000 and package <= 6000, (
        f"notebook code cells {code} lines, helpers {package} lines: at most 6,000 each")


def test_a_long_paragraph_and_a_missing_takeaway_are_caught(tmp_path):
    assert [len(p.split()) for p in lesson_form.paragraphs(
        "One two.\n\n- item one\n- item two three\n\n| a | b |\n\n```\ncode here\n```")] == [
        2, 3, 4]
    cells = [{"cell_type": "markdown", "source": "## 1. A section\n\nText " + "w " * 130},
             {"cell_type": "markdown", "source": "## Summary\n\n- As the table above shows."}]
    found = lesson_form.sections(cells)
    assert [h for h, _ in found] == ["## 1. A section", "## Summary"]
    assert lesson_form.POINTERS.search(found[1][1])
