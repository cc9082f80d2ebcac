"""The bubble of a GPipe-style pipeline: how much of the devices' time is spent waiting.

A model cut into ``p`` stages, one per device, processes a batch cut into ``m``
micro-batches: stage ``s`` can start micro-batch ``j`` once stage ``s - 1`` has finished
it, so the first stages run ahead while the last ones wait, and at the end of the
forward pass (and of the backward pass, which runs the other way) the first ones wait.
With every stage taking the same time per micro-batch, a pass lasts ``m + p - 1`` slots
of which each device works ``m``: the idle share, the *bubble*, is
``(p - 1) / (m + p - 1)`` (Huang et al., 2019). More micro-batches shrink it, at the
price of smaller (less efficient) products and of keeping the activations of every
micro-batch until its backward pass.
"""

from __future__ import annotations

from helpers.checks import require_int


def bubble_fraction(stages: int, microbatches: int) -> float:
    """``(p - 1) / (m + p - 1)``: the share of device time a balanced pipeline idles."""
    require_int("stages", stages, 1)
    require_int("microbatches", microbatches, 1)
    return (stages - 1) / (microbatches + stages - 1)


def gpipe_schedule(stages: int, microbatches: int) -> list[tuple[int, int, str, int]]:
    """The ideal schedule as ``(stage, microbatch, phase, slot)``, phase ``"F"`` or ``"B"``.

    Forward: stage ``s`` runs micro-batch ``j`` in slot ``s + j``. Backward starts when
    the last stage has finished its last forward, and runs the micro-batches in reverse
    from the last stage to the first. Every stage and phase takes one slot.
    """
    require_int("stages", stages, 1)
    require_int("microbatches", microbatches, 1)
    p, m = stages, microbatches
    forward = [(s, j, "F", s + j) for s in range(p) for j in range(m)]
    start = m + p - 1  # the forward pass occupies slots 0 .. m + p - 2
    backward = [(s, j, "B", start + (p - 1 - s) + (m - 1 - j))
                for s in range(p) for j in range(m)]
    return forward + backward
