"""When communication, not compute, limits a data-parallel training step, and the levers.

One synchronous data-parallel step computes the gradient of each replica's batch ``b``
and then all-reduces it. Compute grows with ``b`` (a straight line, ``fixed +
per_example * b``: an :class:`helpers.cost.communication.AlphaBeta` in examples);
the all-reduce does not, since the gradient has the size of the model whatever the
batch. So below a *critical batch* a step spends more time communicating than
computing its examples (:func:`critical_batch`). Three levers move that point:

* a larger batch per replica (more compute per byte exchanged);
* overlap: start all-reducing the last layers' gradients while the backward pass is
  still computing the first ones, so a step takes ``max(compute, comm)`` at best instead
  of ``compute + comm`` (:func:`overlap_bounds`);
* gradient accumulation: add the gradients of ``k`` micro-batches locally and all-reduce
  once, trading one gradient-sized buffer of memory for ``k - 1`` fewer exchanges
  (:func:`accumulation_seconds`).
"""

from __future__ import annotations

from helpers.checks import require_int, require_number
from helpers.cost.communication import AlphaBeta


def critical_batch(per_example_seconds: float, comm_seconds: float) -> float:
    """The per-replica batch whose examples take as long to compute as the exchange takes.

    Smaller batches are communication-bound. The fixed cost a step pays whatever its
    batch (launching operations, the training loop) is left out on purpose: it is
    neither computation that grows with the batch nor communication, and subtracting it
    from a similar exchange time would make the answer swing wildly with either.
    """
    require_number("per_example_seconds", per_example_seconds, above=0)
    require_number("comm_seconds", comm_seconds, minimum=0)
    return comm_seconds / per_example_seconds


def critical_batch_from_rates(flops_per_example: float, flops_per_second: float,
                              comm_seconds: float) -> float:
    """The same for a model known by its FLOPs, computed at ``flops_per_second``."""
    require_number("flops_per_example", flops_per_example, above=0)
    require_number("flops_per_second", flops_per_second, above=0)
    return critical_batch(flops_per_example / flops_per_second, comm_seconds)


def overlap_bounds(compute_seconds: float, comm_seconds: float) -> tuple[float, float]:
    """(best, worst) step time: perfect overlap ``max``, none at all ``sum``.

    Overlap can save at most ``min(compute, comm)``, half of the step when the two are
    equal, nothing when one of them is negligible.
    """
    require_number("compute_seconds", compute_seconds, minimum=0)
    require_number("comm_seconds", comm_seconds, minimum=0)
    return max(compute_seconds, comm_seconds), compute_seconds + comm_seconds


def accumulation_seconds(micro_batches: int, micro_batch: int, compute: AlphaBeta,
                         comm_seconds: float, accumulate: bool = True) -> float:
    """Time to process ``micro_batches`` micro-batches of ``micro_batch`` examples per replica.

    Accumulating: ``k`` compute passes, one exchange. Not accumulating: ``k`` full steps,
    each with its own exchange. (The optimizer update is counted in ``compute``.)
    """
    require_int("micro_batches", micro_batches, 1)
    require_int("micro_batch", micro_batch, 1)
    require_number("comm_seconds", comm_seconds, minimum=0)
    exchanges = 1 if accumulate else micro_batches
    return micro_batches * compute.time(micro_batch) + exchanges * comm_seconds
