"""Argument checks for the values learners pass, with messages that say what was expected.

Used where a learner's value enters the series (profiles, ``benchmark``, cluster
constructors, worker programs' flags), so a mistake is reported at once, in words,
rather than as a framework traceback minutes later. ``isinstance(True, int)`` holds in
Python, so a plain type check would take ``repeat=True`` for 1; these checks refuse
bools on purpose, and NaN or infinity where a number is expected.

Every check takes an optional ``hint``, appended to the message after a semicolon, for
what to do when the reason is not obvious from the range alone ("every task runs on
this machine"). For ints it is about the maximum, and only added when that is exceeded.
"""

from __future__ import annotations

import math
from collections.abc import Collection


def _with(hint: str) -> str:
    return f"; {hint}" if hint else ""


def require_int(name: str, value: object, minimum: int, maximum: int | None = None,
                hint: str = "") -> int:
    """``value`` if it is an int (not a bool) in ``[minimum, maximum]``, else ValueError.

    ``hint`` is added to the message of a value above ``maximum``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an int from {minimum} to {maximum}, not {value!r}"
                         f"{_with(hint)}")
    return value


def require_number(name: str, value: object, *, minimum: float | None = None,
                   maximum: float | None = None, above: float | None = None,
                   hint: str = "") -> float:
    """``value`` as a float if it is a finite number (not a bool) within the bounds.

    ``minimum`` and ``maximum`` are inclusive, ``above`` is exclusive (``above=0`` for
    "greater than zero").
    """
    bounds = [f"> {above:g}" if above is not None else "",
              f">= {minimum:g}" if minimum is not None else "",
              f"<= {maximum:g}" if maximum is not None else ""]
    expected = " and ".join(b for b in bounds if b)
    problem = ValueError(f"{name} must be a {'finite ' if not expected else ''}number"
                         f"{' ' + expected if expected else ''}, not {value!r}{_with(hint)}")
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


def require_choice(name: str, value: object, choices: Collection[object],
                   hint: str = "") -> object:
    """``value`` if it is one of ``choices`` (and of the same type), else ValueError listing them.

    The type must match too, so ``True`` is not taken for the choice ``1``.
    """
    if not any(value == c and type(value) is type(c) for c in choices):
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}, not {value!r}{_with(hint)}")
    return value
