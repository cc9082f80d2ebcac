"""The shared argument checks: ints that are not bools, numbers above zero."""

import pytest

from helpers.machine import require_int, require_number


def test_require_int_returns_good_values():
    assert require_int("repeat", 3, 1) == 3
    assert require_int("warmup", 0, 0) == 0


@pytest.mark.parametrize("value", [True, 0, -2, 1.0, "3", None])
def test_require_int_refuses_bools_floats_strings_and_small_values(value):
    with pytest.raises(ValueError, match=r"repeat must be an int >= 1, not "):
        require_int("repeat", value, 1)


def test_require_number_above_zero_accepts_ints_and_floats():
    assert require_number("min_seconds", 2, above=0) == 2.0
    assert require_number("min_seconds", 0.25, above=0) == 0.25


@pytest.mark.parametrize("value", [0, -0.5, False, "1", None, float("nan")])
def test_require_number_above_zero_refuses_the_rest(value):
    with pytest.raises(ValueError, match=r"min_seconds must be a number > 0, not "):
        require_number("min_seconds", value, above=0)
