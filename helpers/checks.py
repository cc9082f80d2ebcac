"""Checks for the values a learner types (profiles, ``benchmark``, cluster constructors,
worker programs' flags): a one-line message that says what was expected.

``isinstance(True, int)`` holds in Python, so these refuse bools on purpose (``repeat=True``
is not 1), and NaN or infinity where a number is expected. ``hint`` says what to do when the
range alone does not ("every task runs on this machine").
"""

from __future__ import annotations

import math
from collections.abc import Collection


def _with(hint: str) -> str:
    return f"; {hint}" if hint else ""


def require_int(name: str, value: object, minimum: int, maximum: int | None = None,
                hint: str = "") -> int:
    """``value`` if it is an int (not a bool) in ``[minimum, maximum]``, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an int from {minimum} to {maximum}, not {value!r}"
                         f"{_with(hint)}")
    return value


def require_number(name: str, value: object, *, minimum: float | None = None,
                   maximum: float | None = None, above: float | None = None,
                   hint: str = "") -> float:
    """``value`` as a float if it is a finite number (not a bool) within the bounds
    (``minimum`` and ``maximum`` inclusive, ``above`` exclusive), else ValueError."""
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


def require_choice(name: str, value: object, choices: Collection[object],
                   hint: str = "") -> object:
    """``value`` if it is one of ``choices``, of the same type too (``True`` is not ``1``)."""
    if not any(value == c and type(value) is type(c) for c in choices):
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}, not {value!r}{_with(hint)}")
    return value
