"""show_source: the lines a lesson is about, read from the running code itself."""

import pytest

from helpers import matpow as matpow_module
from helpers import training
from helpers.output import source_of


def test_a_function_without_its_docstring():
    text = source_of(training.make_train_step)
    assert text.startswith("def make_train_step(")
    assert "strategy.run(step_fn" in text
    assert '"""' not in text.split("\n", 2)[1]  # the docstring is gone
    assert "One distributed training step" not in text
    assert "One distributed training step" in source_of(training.make_train_step,
                                                        docstring=True)


def test_a_part_of_a_module_between_two_markers():
    text = source_of(matpow_module, start="def matpow(", end="return matmul(M, matpow(")
    assert text.startswith("def matpow(") and text.rstrip().endswith("n - 1, matmul))")


def test_unknown_markers_and_objects_are_refused_with_a_message():
    with pytest.raises(ValueError, match="contains 'no such line'"):
        source_of(matpow_module, start="no such line")
    with pytest.raises(ValueError, match="after 'def matpow\\(' contains 'zzz'"):
        source_of(matpow_module, start="def matpow(", end="zzz")
    with pytest.raises(ValueError, match="function, class or module"):
        source_of(42)
