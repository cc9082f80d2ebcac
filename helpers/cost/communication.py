"""The latency-bandwidth model and the two gradient exchanges, as notebook 10 derives them.

Notebook 10 writes Amdahl's law, the Karp-Flatt metric and the step model in its cells;
notebooks 11 and 12 reuse the pieces kept here:

* **Latency-bandwidth (alpha-beta)**: moving ``m`` bytes costs ``alpha + beta * m``
  (``alpha`` the fixed cost of a message, ``1 / beta`` the bandwidth). The same straight
  line describes a training step's compute, ``fixed + per_example * batch``. Both are
  :class:`AlphaBeta`, fitted by :func:`fit_alpha_beta` to timings.
* **Gradient exchange**: a parameter server (:func:`parameter_server_seconds`), whose
  servers receive every worker's gradient, against ring all-reduce
  (:func:`ring_allreduce_seconds`), where each worker sends about ``2 m`` bytes whatever
  the number of workers but pays ``2 (n - 1)`` latencies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _check_workers(n: int, what: str = "workers") -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"the number of {what} must be an int >= 1, not {n!r}")


def _check_nonneg(value: float, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{what} must be a number, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be finite and >= 0, not {value!r}")


@dataclass(frozen=True)
class AlphaBeta:
    """A cost that is a straight line in the size: ``seconds = alpha + beta * size``.

    For a network link, size is bytes: ``alpha`` is the latency of one message (s) and
    ``beta`` the seconds per byte (1 / bandwidth). For a training step, size is examples:
    ``alpha`` the fixed cost per step, ``beta`` the cost of each example.
    """

    alpha: float
    beta: float
    name: str = ""

    def __post_init__(self) -> None:
        _check_nonneg(self.alpha, "alpha")
        _check_nonneg(self.beta, "beta")

    def time(self, size: float) -> float:
        """Seconds for one message (or step) of ``size``."""
        _check_nonneg(size, "size")
        return self.alpha + self.beta * size

    @property
    def bandwidth(self) -> float:
        """Units (bytes, examples) per second once the fixed cost is paid."""
        return math.inf if self.beta == 0 else 1.0 / self.beta

    @property
    def half_size(self) -> float:
        """The size at which fixed and per-unit costs are equal (``alpha / beta``):
        smaller messages are latency-bound, larger ones bandwidth-bound."""
        return math.inf if self.beta == 0 else self.alpha / self.beta

    @classmethod
    def network(cls, name: str, latency_s: float, gbit_per_s: float) -> AlphaBeta:
        """A link from its datasheet numbers: latency in seconds, speed in Gbit/s."""
        _check_nonneg(latency_s, "latency_s")
        _check_nonneg(gbit_per_s, "gbit_per_s")
        if gbit_per_s == 0:
            raise ValueError("a link needs a speed > 0 Gbit/s")
        return cls(latency_s, 8.0 / (gbit_per_s * 1e9), name)


def fit_alpha_beta(
    sizes: Sequence[float], seconds: Sequence[float], transfers: int = 1, name: str = "fitted",
) -> AlphaBeta:
    """Fit ``seconds = transfers * (alpha + beta * size)`` to measurements.

    ``transfers`` is how many one-way messages each measurement contains (a push followed
    by a pull is 2). The fit minimises *relative* errors, so the small sizes (which
    decide alpha) count as much as the large ones (which decide beta) even though their
    times are orders of magnitude apart; alpha and beta are kept >= 0.
    """
    x = np.asarray(sizes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if x.ndim != 1 or x.shape != t.shape:
        raise ValueError(f"sizes and seconds must be two lists of equal length, "
                         f"not {x.shape} and {t.shape}")
    if len(np.unique(x)) < 2:
        raise ValueError("fitting a line needs measurements at two or more different sizes")
    if np.any(x < 0) or np.any(t <= 0) or not np.all(np.isfinite(t)):
        raise ValueError("sizes must be >= 0 and times finite and > 0")
    _check_workers(transfers, "transfers")
    w = 1.0 / t
    design = np.stack([np.ones_like(x), x], axis=1) * w[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if beta < 0:  # sizes do not matter in this range: a constant
        alpha, beta = float(np.sum(w) / np.sum(w * w)), 0.0
    elif alpha < 0:  # no visible fixed cost: a line through the origin
        alpha, beta = 0.0, float(np.sum(w * x) / np.sum(w * w * x * x))
    return AlphaBeta(float(alpha) / transfers, float(beta) / transfers, name)


def ring_allreduce_seconds(workers: int, nbytes: float, link: AlphaBeta) -> float:
    """Ring all-reduce of ``nbytes`` per worker: 2 (n - 1) steps of ``nbytes / n`` each
    (reduce-scatter then all-gather), derived in notebook 10."""
    n = workers
    return 2 * (n - 1) * link.alpha + 2 * (n - 1) / n * nbytes * link.beta


def parameter_server_seconds(
    workers: int, nbytes: float, link: AlphaBeta, servers: int = 1,
) -> float:
    """Push ``nbytes`` of gradients from every worker to ``servers``, pull the weights back:
    the busier endpoint sets the time (derived in notebook 10)."""
    messages = max(workers, servers)
    load = max(workers / servers, 1.0)
    return 2 * (messages * link.alpha + load * nbytes * link.beta)
