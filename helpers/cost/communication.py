"""Why speed-up levels off: small cost models of data-parallel training.

Three models, each a line or two of arithmetic, so a notebook can calibrate them on the
machine it runs on and then ask "what if":

* **Amdahl's law**: a fraction ``p`` of the work parallelises, so ``n`` workers give at
  most ``1 / ((1 - p) + p / n)``; :func:`karp_flatt` reads the serial fraction back from
  a measured speed-up.
* **Latency-bandwidth (alpha-beta)**: moving ``m`` bytes costs ``alpha + beta * m``
  (``alpha`` the fixed cost of a message, ``1 / beta`` the bandwidth). The same straight
  line describes a training step's compute, ``fixed + per_example * batch``. Both are
  :class:`AlphaBeta`, fitted by :func:`fit_alpha_beta` to timings.
* **Gradient exchange**: a parameter server (:func:`parameter_server_seconds`), whose
  servers receive every worker's gradient, against ring all-reduce
  (:func:`ring_allreduce_seconds`), where each worker sends about ``2 m`` bytes whatever
  the number of workers but pays ``2 (n - 1)`` latencies.

:func:`step_seconds` adds compute and communication (no overlap: the pessimistic case)
for a fixed global batch split over ``n`` workers sharing ``slots`` devices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SCHEMES = ("ps", "ring", "none")


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


def amdahl_speedup(workers: int, parallel_fraction: float) -> float:
    """Amdahl's law: the speed-up of ``workers`` when ``parallel_fraction`` of the work
    parallelises perfectly and the rest does not at all."""
    _check_workers(workers)
    _check_nonneg(parallel_fraction, "parallel_fraction")
    if parallel_fraction > 1:
        raise ValueError(f"parallel_fraction is between 0 and 1, not {parallel_fraction!r}")
    return 1.0 / ((1.0 - parallel_fraction) + parallel_fraction / workers)


def karp_flatt(speedup: float, workers: int) -> float:
    """The serial fraction implied by a measured speed-up (Karp-Flatt metric).

    If it grows with the number of workers, the loss is not a fixed serial part (Amdahl)
    but an overhead that grows with the workers, such as communication.
    """
    _check_workers(workers)
    if workers == 1:
        raise ValueError("the serial fraction needs a speed-up measured with 2 or more workers")
    _check_nonneg(speedup, "speedup")
    if speedup == 0:
        raise ValueError("a speed-up must be > 0")
    return (1.0 / speedup - 1.0 / workers) / (1.0 - 1.0 / workers)


def ring_allreduce_seconds(workers: int, nbytes: float, link: AlphaBeta) -> float:
    """Ring all-reduce of ``nbytes`` per worker: 2 (n - 1) steps of ``nbytes / n`` each
    (reduce-scatter then all-gather); zero for one worker."""
    _check_workers(workers)
    _check_nonneg(nbytes, "nbytes")
    n = workers
    return 2 * (n - 1) * link.alpha + 2 * (n - 1) / n * nbytes * link.beta


def parameter_server_seconds(
    workers: int, nbytes: float, link: AlphaBeta, servers: int = 1,
) -> float:
    """Push ``nbytes`` of gradients from every worker, pull as many weights back.

    The gradients are sharded over ``servers``. In each direction the busiest endpoint
    sets the time: a server handles one message from each worker (``workers`` messages
    of ``nbytes / servers``), a worker one message to each server. Messages at one
    endpoint are handled one after another, so both the latency and the bandwidth terms
    grow with the workers per server. With one worker and one server it is a push plus a
    pull, ``2 (alpha + beta m)``: what a round trip over a local ps-lite cluster measures.
    """
    _check_workers(workers)
    _check_workers(servers, "servers")
    _check_nonneg(nbytes, "nbytes")
    messages = max(workers, servers)
    load = max(workers / servers, 1.0)
    return 2 * (messages * link.alpha + load * nbytes * link.beta)


def compute_seconds(
    workers: int, global_batch: int, per_step: AlphaBeta, slots: int | None = None,
) -> float:
    """Compute time of one step when ``workers`` split ``global_batch`` examples.

    Each worker pays ``per_step.time(global_batch / workers)``. With ``slots`` devices
    (cores, GPUs) shared by the workers, only ``min(workers, slots)`` of them run at once,
    so the total work is spread over that many; ``None`` means one device per worker.
    """
    _check_workers(workers)
    _check_workers(global_batch, "examples in the global batch")
    if slots is not None:
        _check_workers(slots, "slots")
    parallel = workers if slots is None else min(workers, slots)
    return per_step.time(global_batch / workers) * workers / parallel


def step_seconds(
    workers: int, global_batch: int, per_step: AlphaBeta, nbytes: float, link: AlphaBeta,
    scheme: str = "ps", servers: int = 1, slots: int | None = None,
) -> float:
    """Compute plus gradient exchange for one step (no overlap between them)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, not {scheme!r}")
    compute = compute_seconds(workers, global_batch, per_step, slots)
    if scheme == "ps":
        return compute + parameter_server_seconds(workers, nbytes, link, servers)
    if scheme == "ring":
        return compute + ring_allreduce_seconds(workers, nbytes, link)
    return compute
