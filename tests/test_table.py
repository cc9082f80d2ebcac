"""The Table's text form is what nbval compares, so its layout must be stable."""

import pytest

from helpers.output import Table


def test_text_layout_is_fixed():
    table = Table(["op", "device"], [["MatMul", "CPU:0"], ["AddN", "CPU:1"]])
    assert str(table).splitlines() == [
        "op      device", "------  ------", "MatMul  CPU:0", "AddN    CPU:1",
    ]


def test_floats_and_missing_values_are_formatted():
    table = Table(["x", "y"], [[1 / 3, None]])
    assert str(table).splitlines()[-1] == "0.3333  -"


def test_column_records_and_html():
    table = Table(["a", "b"], [[1, "<x>"]])
    assert table.column("b") == ["<x>"]
    assert table.records() == [{"a": 1, "b": "<x>"}]
    assert "&lt;x&gt;" in table._repr_html_()


def test_row_of_wrong_length_is_rejected():
    with pytest.raises(ValueError, match="2 columns"):
        Table(["a", "b"], [[1, 2, 3]])
