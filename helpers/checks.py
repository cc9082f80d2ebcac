"""Argument checks shared by the helpers, with messages that say what was expected.

``isinstance(True, int)`` holds in Python, so a plain type check would take
``repeat=True`` for 1; these checks refuse bools on purpose.
"""

from __future__ import annotations


def require_int(name: str, value: object, minimum: int) -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    return value


def require_positive_number(name: str, value: object) -> float:
    """``value`` as a float if it is a number (not a bool) above zero, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a number > 0, not {value!r}")
    return float(value)
