"""The arithmetic of the bench: medians, paired ratios, errors and targets.

Kept free of any framework so it can be unit-tested in milliseconds.
"""

from __future__ import annotations

import math
import operator
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from helpers.machine import require_int


def _check_samples(values: Sequence[float], what: str) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValueError(f"{what} must be a sequence of numbers, not {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{what} must hold finite numbers, found {v!r}")
        out.append(float(v))
    if not out:
        raise ValueError(f"{what} is empty: measure at least one round")
    return out


def median(values: Sequence[float]) -> float:
    """Median of finite numbers; ValueError for an empty or non-numeric sequence."""
    return statistics.median(_check_samples(values, "samples"))


def paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """``numerators[i] / denominators[i]`` for rounds measured side by side."""
    num = _check_samples(numerators, "numerators")
    den = _check_samples(denominators, "denominators")
    if len(num) != len(den):
        raise ValueError(f"paired samples need equal lengths, got {len(num)} and {len(den)}")
    if any(d <= 0 for d in den):
        raise ValueError("denominators must be > 0 (a time or a rate)")
    return [n / d for n, d in zip(num, den, strict=True)]


def speed_ratio(times_framework: Sequence[float], times_reference: Sequence[float]) -> float:
    """How fast the framework is relative to the reference: median of t_ref / t_framework.

    Each round timed both, one after the other; the ratio of a pair cancels what the
    machine's load did to that round. Equal to (framework rate) / (reference rate).
    """
    return median(paired_ratios(times_reference, times_framework))


def relative_error(measured: float, reference: float) -> float:
    """``|measured - reference| / reference``."""
    for name, v in (("measured", measured), ("reference", reference)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number, not {v!r}")
    if reference <= 0:
        raise ValueError(f"reference must be > 0, not {reference!r}")
    return abs(measured - reference) / reference


def gflops_matmul(n: int, seconds: float) -> float:
    """GFLOP/s of an n x n by n x n matrix product (2 n^3 floating-point operations)."""
    require_int("matrix side", n, 1)
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, not {seconds!r}")
    return 2.0 * n**3 / seconds / 1e9


def spread(values: Sequence[float]) -> float:
    """(max - min) / median: how much the rounds disagreed, as a fraction."""
    vals = _check_samples(values, "samples")
    mid = statistics.median(vals)
    return (max(vals) - min(vals)) / mid if mid > 0 else 0.0


Work = Callable[[], Any]
Sync = Callable[[Any], Any]


def interleaved(
    contestants: dict[str, tuple[Work, Sync]],
    *,
    rounds: int = 5,
    warmup: int = 1,
    budget_s: float | None = None,
    min_rounds: int = 3,
    clock: Callable[[], float] = time.perf_counter,
    cpu_samples: dict[str, list[float]] | None = None,
    cpu_clock: Callable[[], float] = time.process_time,
) -> dict[str, list[float]]:
    """Time every contestant once per round, in rotating order; return seconds per name.

    ``contestants`` maps a name to ``(work, sync)``: ``sync(work())`` must return only
    when the work is done. The order rotates each round so no contestant always runs
    right after another one's cache-warming or thread spin-down. After ``min_rounds``,
    rounds stop early once ``budget_s`` seconds have been spent (slow configurations
    must not make the bench take forever). If ``cpu_samples`` is a dict, it receives
    the CPU seconds this process (all its threads) spent in each timed call: unlike wall
    time, that does not grow when other programs share the cores.
    """
    if not contestants:
        raise ValueError("nothing to time: pass at least one contestant")
    for name, pair in contestants.items():
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(map(callable, pair))):
            raise ValueError(f"contestant {name!r} must be a (work, sync) pair of callables")
    require_int("rounds", rounds, 1)
    require_int("warmup", warmup, 0)
    names = list(contestants)
    for _ in range(warmup):
        for name in names:
            work, sync = contestants[name]
            sync(work())
    samples: dict[str, list[float]] = {name: [] for name in names}
    began = clock()
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            work, sync = contestants[name]
            start, cpu = clock(), cpu_clock()
            sync(work())
            samples[name].append(clock() - start)
            if cpu_samples is not None:
                cpu_samples.setdefault(name, []).append(cpu_clock() - cpu)
        if budget_s is not None and r + 1 >= min_rounds and clock() - began > budget_s:
            break
    return samples


_OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq}


@dataclass(frozen=True)
class Target:
    """What one figure must satisfy, e.g. ``Target("suite_seconds", "<=", 240)``."""

    key: str
    op: str
    value: float
    what: str = ""

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"a target compares with one of {sorted(_OPS)}, not {self.op!r}")
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise ValueError(f"a target value is a number, not {self.value!r}")

    def met(self, measured: Any) -> bool | None:
        """True/False, or None when the figure was not measured (missing or not a number)."""
        if isinstance(measured, bool) or not isinstance(measured, (int, float)):
            return None
        if not math.isfinite(measured):
            return None
        return bool(_OPS[self.op](measured, self.value))

    def text(self) -> str:
        return f"{self.op} {self.value:g}"


TARGETS: tuple[Target, ...] = (
    Target("suite_seconds", "<=", 240, "nbval run over all notebooks, ci profile"),
    Target("timing_error", "<=", 0.05, "helpers.measure vs an independent clock"),
    Target("matmul_tf_vs_blas", ">=", 0.8, "TensorFlow matmul GFLOP/s / NumPy's"),
    Target("matmul_mx_vs_blas", ">=", 0.5, "MXNet nd.dot GFLOP/s / NumPy's, as the series runs"),
    Target("matmul_mx_best_vs_blas", ">=", 0.8,
           "the faster of MXNet nd.dot and nd.FullyConnected / NumPy, as the series runs"),
    Target("cluster_ready_seconds", "<=", 8, "2-worker TF cluster, start to all listening"),
    Target("cluster_teardown_seconds", "<=", 2, "2-worker TF cluster, stop to all gone"),
    Target("orphans", "==", 0, "bench processes alive after the bench"),
)

#: Every figure of ``results.json``, in report order (``copy_vs_memcpy`` has no target).
FIGURES = ("suite_seconds", "timing_error", "matmul_tf_vs_blas", "matmul_mx_vs_blas",
           "matmul_mx_best_vs_blas", "copy_vs_memcpy", "cluster_ready_seconds",
           "cluster_teardown_seconds", "orphans")

#: Per-notebook limit on the suite's run time, in seconds.
NOTEBOOK_LIMIT_S = 45.0


def check_targets(figures: dict[str, Any],
                  targets: Sequence[Target] = TARGETS) -> dict[str, dict[str, Any]]:
    """``{key: {"value", "target", "met"}}`` per target; met is None if not measured."""
    if not isinstance(figures, dict):
        raise ValueError(f"figures must be a dict of key -> number, not {type(figures).__name__}")
    return {
        t.key: {"value": figures.get(t.key), "target": t.text(), "met": t.met(figures.get(t.key)),
                "what": t.what}
        for t in targets
    }
