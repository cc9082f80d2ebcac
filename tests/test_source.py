"""show_source: the lines a lesson is about, read from the running code itself."""

import pytest

from helpers import training
from helpers.output import source_of


def test_a_function_without_its_docstring():
    text = source_of(training.make_train_step)
    assert text.startswith("def make_train_step(")
    assert "strategy.run(step_fn" in text
    assert '"""' not in text.split("\n", 2)[1]  # the docstring is gone
    assert "One distributed training step" not in text


def test_a_part_of_a_module_between_two_markers():
    text = source_of(training, start="def make_dataset(", end="return dataset.with_options(")
    assert text.startswith("def make_dataset(")
    assert text.rstrip().endswith("return dataset.with_options(options)")


def test_unknown_markers_are_refused_with_a_message():
    with pytest.raises(ValueError, match="contains 'no such line'"):
        source_of(training, start="no such line")
    with pytest.raises(ValueError, match="after 'def make_dataset\\(' contains 'zzz'"):
        source_of(training, start="def make_dataset(", end="zzz")
