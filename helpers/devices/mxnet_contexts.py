"""Pick two MXNet contexts for a lesson about two devices, on whatever machine runs it.

MXNet names devices by context: ``mx.cpu(i)`` and ``mx.gpu(i)``. Every ``mx.cpu(i)`` is
the same device: all of the host's memory and cores. MXNet keeps the index (arrays
print ``@cpu(1)``) and gives each CPU context its own engine worker thread, but copying
between ``cpu(0)`` and ``cpu(1)`` is a host memory copy and both contexts share the
cores. MXNet cannot split one GPU into several either. So on a machine with fewer GPUs
than a lesson needs, the second context is a stand-in, and :class:`ContextPair` says so.

MXNet counts GPUs itself (``mx.context.num_gpus()``), which is 0 with the CPU-only
``mxnet`` wheel even where TensorFlow sees GPUs; the pair follows what MXNet can use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

PURPOSES = ("compute", "transfer")

#: Settings that give every MXNet CPU operator several OpenMP threads.
_OMP_SETTINGS = ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS")


def omp_threads_requested(environ: dict[str, str] | None = None) -> int | None:
    """The OpenMP thread count the environment asks MXNet for, or None when unset."""
    environ = dict(os.environ) if environ is None else environ
    for key in _OMP_SETTINGS:
        value = environ.get(key, "").split(",")[0].strip()
        if value:
            if not value.isdigit():
                raise ValueError(f"{key}={environ[key]!r} is not a thread count; unset it")
            return int(value)
    return None


@dataclass(frozen=True)
class ContextPair:
    """Two contexts, what kind of machine gave them, and what that means for timings."""

    first: Any
    second: Any
    kind: str  # "two-gpus", "one-gpu" (both gpu(0)), "host-and-gpu" or "cpu-only"
    gpus: int

    @property
    def contexts(self) -> list[Any]:
        return [self.first, self.second]

    @property
    def same_memory(self) -> bool:
        """True when both contexts address the same memory (two CPU contexts, or one GPU twice)."""
        return self.first.device_type == self.second.device_type and (
            self.first.device_type == "cpu" or self.first.device_id == self.second.device_id)

    @property
    def simulated(self) -> bool:
        """True unless the two contexts are two different physical devices."""
        return self.kind in ("one-gpu", "cpu-only")

    def describe(self) -> str:
        names = f"{self.first} and {self.second}"
        if self.kind == "two-gpus":
            return f"{names}: two real GPUs, each with its own memory and compute"
        if self.kind == "host-and-gpu":
            return f"{names}: the host and the GPU, separate memories joined by PCIe/NVLink"
        if self.kind == "one-gpu":
            return (f"{names}: SIMULATED, the same single GPU twice (MXNet cannot split a "
                    "GPU); no speed-up is possible")
        return (f"{names}: SIMULATED, MXNet sees no GPU; both are the host's memory and cores. "
                "MXNet gives each CPU context its own engine thread, but the cores are shared")


def context_pair(mx: Any, purpose: str = "compute") -> ContextPair:
    """Two contexts for a lesson: ``compute`` (run work on two devices) or ``transfer``.

    ``compute``: gpu(0), gpu(1) with two GPUs; gpu(0) twice with one; cpu(0), cpu(1)
    without. ``transfer`` (copies between memories): gpu(0), gpu(1) with two GPUs;
    cpu(0), gpu(0) with one, the copy that matters most there; cpu(0), cpu(1) without.

    Raises RuntimeError for ``compute`` on a CPU-only machine when the environment asks
    for several OpenMP threads per operator (see the message: that combination hangs).
    """
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {PURPOSES}, not {purpose!r}")
    gpus = mx.context.num_gpus()
    if gpus >= 2:
        return ContextPair(mx.gpu(0), mx.gpu(1), "two-gpus", gpus)
    if gpus == 1 and purpose == "compute":
        return ContextPair(mx.gpu(0), mx.gpu(0), "one-gpu", gpus)
    if gpus == 1:
        return ContextPair(mx.cpu(0), mx.gpu(0), "host-and-gpu", gpus)
    threads = omp_threads_requested()
    if purpose == "compute" and threads is not None and threads > 1:
        raise RuntimeError(
            f"OMP_NUM_THREADS / MXNET_OMP_MAX_THREADS ask for {threads} threads per operator. "
            "With that, matrix products running at the same time on cpu(0) and cpu(1) call "
            "the OpenBLAS bundled with MXNet from two threads at once, each with its own "
            "OpenMP team, and this was seen to hang for good. Unset both variables and "
            "restart the kernel (MXNet then picks its own thread count)."
        )
    return ContextPair(mx.cpu(0), mx.cpu(1), "cpu-only", gpus)
