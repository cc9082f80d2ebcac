"""Pick two MXNet contexts for a lesson about two devices, on whatever machine runs it.

MXNet names devices by context: ``mx.cpu(i)`` and ``mx.gpu(i)``. Every ``mx.cpu(i)`` is
the same device: all of the host's memory and cores. MXNet keeps the index (arrays
print ``@cpu(1)``) and gives each CPU context its own engine worker thread, but copying
between ``cpu(0)`` and ``cpu(1)`` is a host memory copy and both contexts share the
cores. MXNet cannot split one GPU into several either. So on a machine with fewer GPUs
than a lesson needs, the second context is a stand-in, and :class:`ContextPair` says so.

MXNet counts GPUs itself (``mx.context.num_gpus()``), which is 0 with the CPU-only
``mxnet`` wheel even where TensorFlow sees GPUs; the pair follows what MXNet can use.

Products on two CPU contexts at once need care: each context has its own engine thread,
and when both call the OpenBLAS bundled with MXNet at the same moment, each with a team of
several OpenMP threads, that OpenBLAS deadlocks (seen here with 2 threads per operator on
2 cores, every time). :attr:`ContextPair.matmul` is therefore ``nd.dot`` except on such a
pair, where it is the same product through oneDNN (``nd.FullyConnected``), which does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from helpers.frameworks import import_mxnet, mxnet_import_settings
from helpers.measure import mxnet_omp_threads

PURPOSES = ("compute", "transfer")

@dataclass(frozen=True)
class ContextPair:
    """Two contexts, what kind of machine gave them, and what that means for timings."""

    first: Any
    second: Any
    kind: str  # "two-gpus", "one-gpu" (both gpu(0)), "host-and-gpu" or "cpu-only"
    gpus: int
    omp_threads: int = 1  # OpenMP threads MXNet gives one CPU operator in this process

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

    @property
    def blas_deadlock_risk(self) -> bool:
        """True when ``nd.dot`` on both contexts at once could deadlock MXNet's OpenBLAS."""
        both_cpu = self.first.device_type == "cpu" and self.second.device_type == "cpu"
        return both_cpu and self.omp_threads > 1

    @property
    def matmul(self) -> Callable[[Any, Any], Any]:
        """The matrix product to run on both contexts at the same time (see the module
        docstring): ``nd.dot``, or oneDNN's product when ``nd.dot`` could deadlock."""
        nd = import_mxnet().nd
        if not self.blas_deadlock_risk:
            return nd.dot

        def onednn_dot(a: Any, b: Any) -> Any:
            """``a @ b`` as a fully connected layer: ``FullyConnected(x, w) = x @ w.T``."""
            return nd.FullyConnected(a, b.T, no_bias=True, num_hidden=b.shape[1])

        return onednn_dot

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
    Run products on both at once with the pair's :attr:`~ContextPair.matmul`.
    """
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {PURPOSES}, not {purpose!r}")
    gpus = mx.context.num_gpus()
    threads = mxnet_omp_threads(mxnet_import_settings().get("read", {}))
    if gpus >= 2:
        return ContextPair(mx.gpu(0), mx.gpu(1), "two-gpus", gpus, threads)
    if gpus == 1 and purpose == "compute":
        return ContextPair(mx.gpu(0), mx.gpu(0), "one-gpu", gpus, threads)
    if gpus == 1:
        return ContextPair(mx.cpu(0), mx.gpu(0), "host-and-gpu", gpus, threads)
    return ContextPair(mx.cpu(0), mx.cpu(1), "cpu-only", gpus, threads)
