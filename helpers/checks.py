"""Argument checks for the values learners pass, with messages that say what was expected.

Used where a learner's value enters the series (profiles, ``benchmark``, cluster
constructors, worker programs' flags), so a mistake is reported at once, in words,
rather than as a framework traceback minutes later. ``isinstance(True, int)`` holds in
Python, so a plain type check would take ``repeat=True`` for 1; these checks refuse
bools on purpose, and NaN or infinity where a number is expected.
"""

from __future__ import annotations

import math
from collections.abc import Collection


def require_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """``value`` if it is an int (not a bool) in ``[minimum, maximum]``, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an int from {minimum} to {maximum}, not {value!r}")
    return value


def require_number(name: str, value: object, *, minimum: float | None = None,
                   maximum: float | None = None, above: float | None = None) -> float:
    """``value`` as a float if it is a finite number (not a bool) within the bounds.

    ``minimum`` and ``maximum`` are inclusive, ``above`` is exclusive (``above=0`` for
    "greater than zero").
    """
    bounds = [f"> {above:g}" if above is not None else "",
              f">= {minimum:g}" if minimum is not None else "",
              f"<= {maximum:g}" if maximum is not None else ""]
    expected = " and ".join(b for b in bounds if b)
    problem = ValueError(f"{name} must be a {'finite ' if not expected else ''}number"
                         f"{' ' + expected if expected else ''}, not {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise problem
    x = float(value)
    if not math.isfinite(x) or (above is not None and not x > above) or (
            minimum is not None and x < minimum) or (maximum is not None and x > maximum):
        raise problem
    return x


def require_positive_number(name: str, value: object) -> float:
    """``value`` as a float if it is a finite number (not a bool) above zero, else ValueError."""
    return require_number(name, value, above=0)


def require_choice(name: str, value: object, choices: Collection[object]) -> object:
    """``value`` if it is one of ``choices``, else ValueError listing them."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}, not {value!r}")
    return value
