"""The seed's matrix-power program: A^n + B^n, its work count, and how to check its result.

The historical program computes ``A^n + B^n`` with a recursive ``matpow(M, n)`` that
multiplies ``M`` by ``matpow(M, n - 1)`` and stops at ``n < 1`` by returning ``M``. The
recursion therefore performs ``n`` matrix products and returns ``M`` to the power
``n + 1``, not ``n``; this module keeps that behaviour (it is the program being timed)
and names the true power wherever a number depends on it.

The same function serves TensorFlow, MXNet and NumPy: it takes the framework's matrix
product (``tf.matmul``, ``mx.nd.dot``, ``np.matmul``) as an argument, so each framework
runs exactly the same chain of products and the timings compare like with like.

Checking the result needs care. With entries drawn from U[0, 1) the entries of ``M^k``
grow like ``mean^k * size^(k-1)``, so for the seed's 10^4 x 10^4 matrices and n = 10
they reach about 10^36, just below float32's largest value (about 3.4e38). A full float64
reference would cost as much as the computation itself on a GPU-sized problem, so the
check multiplies the result by a vector and compares with ``n + 1`` matrix-vector
products in float64, which costs ``O(n * size^2)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from helpers.machine import require_int

FLOAT32_MAX = float(np.finfo(np.float32).max)

#: Relative error accepted for float32 matrix products on a CPU. Sums of positive terms
#: keep float32's relative rounding error (about 6e-8) small; 1e-3 leaves room for the
#: n chained products and any BLAS's summation order.
FLOAT32_RTOL = 1e-3

#: On NVIDIA GPUs from Ampere on, TensorFlow (and cuBLAS) multiply float32 matrices in
#: TensorFloat-32 by default: 10 mantissa bits, a relative rounding error near 5e-4 per
#: product, compounding over the chain.
TF32_RTOL = 2e-2

#: The largest ``n`` :func:`matpow` accepts: it recurses once per product, and float32
#: entries of a 64 x 64 product already overflow near n = 26 (the seed uses 10).
MAX_N = 200

#: Host matrices a matpow lesson holds at once: A and B, each chain's latest products,
#: their sum, and the results kept for checking.
HOST_MATRICES = 8


def matpow(M: Any, n: int, matmul: Callable[[Any, Any], Any]) -> Any:
    """The seed's recursion: ``matmul(M, matpow(M, n - 1))``, and ``M`` when ``n < 1``.

    Performs ``n`` products and returns ``M ** (n + 1)``. ``matmul`` is the framework's
    product, e.g. ``tf.matmul`` or ``mx.nd.dot``; the products run wherever that
    framework places them (inside ``tf.device(...)``, or on the arrays' MXNet context).
    """
    require_int("n", n, 0, MAX_N, "matpow recurses once per product")
    shape = tuple(getattr(M, "shape", ()))
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"M must be a square matrix (a power needs M @ M), not shape {shape}")
    if not callable(matmul):
        raise ValueError(f"matmul must be a function such as tf.matmul or nd.dot, not {matmul!r}")
    if n < 1:
        return M
    return matmul(M, matpow(M, n - 1, matmul))


def require_fits_in_memory(size: int, matrices: int = HOST_MATRICES, bytes_per_entry: int = 4,
                           available: int | None = None) -> int:
    """Bytes ``matrices`` float32 ``size x size`` matrices take; ValueError if more than free.

    Called before allocating, so a size too large for this machine is refused with the
    numbers instead of a MemoryError, or the machine swapping, minutes later.
    ``available`` defaults to the memory free now (psutil).
    """
    require_int("the matrix size", size, 1)
    require_int("matrices", matrices, 1)
    need = matrices * size * size * bytes_per_entry
    if available is None:
        import psutil  # noqa: PLC0415

        available = psutil.virtual_memory().available
    if need > available:
        largest = math.isqrt(available // (matrices * bytes_per_entry))
        raise ValueError(
            f"{matrices} matrices of {size} x {size} take {need / 2**30:.1f} GiB but this "
            f"machine has {available / 2**30:.1f} GiB free; use a size of at most {largest}"
        )
    return need


def true_power(n: int) -> int:
    """The power ``matpow(M, n)`` really computes: ``n + 1``."""
    require_int("n", n, 0)
    return n + 1


def matpow_flops(size: int, n: int, matrices: int = 2) -> float:
    """Floating-point operations of ``matrices`` chains of ``matpow(M, n)`` plus their sum.

    A product of two ``size x size`` matrices costs ``2 * size**3`` operations (one
    multiply and one add per term); the final sum adds ``(matrices - 1) * size**2``.
    """
    require_int("the matrix size", size, 1)
    require_int("n", n, 0)
    require_int("matrices", matrices, 1)
    return float(matrices * n * 2 * size**3 + (matrices - 1) * size**2)


def entry_log10(size: int, power: int, mean: float = 0.5) -> float:
    """log10 of the typical entry of ``M**power`` for ``M`` with i.i.d. entries of ``mean``.

    ``M`` is close to ``mean * ones`` plus noise, and ``(mean * ones)**k`` has every entry
    equal to ``mean**k * size**(k - 1)``; the noise changes that by a few per cent.
    Returned as a logarithm because the value itself can exceed any float.
    """
    require_int("the matrix size", size, 1)
    require_int("power", power, 1)
    if not mean > 0:
        raise ValueError(f"mean must be > 0 (U[0, 1) entries have mean 0.5), not {mean!r}")
    return power * math.log10(mean) + (power - 1) * math.log10(size)


def overflows(size: int, n: int, mean: float = 0.5, limit: float = FLOAT32_MAX,
              matrices: int = 2) -> bool:
    """Whether the sum of ``matrices`` results of ``matpow(M, n)`` should exceed ``limit``."""
    return entry_log10(size, true_power(n), mean) + math.log10(matrices) > math.log10(limit)


def largest_safe_n(size: int, mean: float = 0.5, limit: float = FLOAT32_MAX,
                   matrices: int = 2) -> int:
    """The largest ``n`` for which ``matpow(M, n)`` summed ``matrices`` times stays finite.

    Raises ValueError when even ``n = 0`` is beyond ``limit`` (entries that large cannot
    be stored in the first place).
    """
    if overflows(size, 0, mean, limit, matrices):
        raise ValueError(f"entries of mean {mean} already exceed the limit {limit:g}")
    if size == 1 and mean <= 1:
        raise ValueError("1x1 matrices with mean <= 1 never overflow; there is no largest n")
    n = 0
    while not overflows(size, n + 1, mean, limit, matrices):
        n += 1
        if n > 10_000:
            raise ValueError("the entries do not grow with n; there is no largest n")
    return n


def matvec_power(M: np.ndarray, power: int, v: np.ndarray) -> np.ndarray:
    """``M**power @ v`` in float64 as ``power`` matrix-vector products (cheap reference)."""
    require_int("power", power, 0)
    M = np.asarray(M)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be a square matrix, not an array of shape {M.shape}")
    x = np.asarray(v, dtype=np.float64)
    if x.shape != (M.shape[0],):
        raise ValueError(f"v must have shape ({M.shape[0]},) to multiply M, not {x.shape}")
    M64 = M.astype(np.float64)
    for _ in range(power):
        x = M64 @ x
    return x


def relative_error(result: Any, reference: Any) -> float:
    """``max |result - reference| / max |reference|``, computed in float64.

    Relative to the largest reference entry, so it is meaningful whether entries are
    near 1 or near 1e36. Non-finite results (an overflow) give ``inf``.
    """
    r = np.asarray(result, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if r.shape != ref.shape:
        raise ValueError(f"result has shape {r.shape} but the reference has {ref.shape}")
    if ref.size == 0:
        raise ValueError("nothing to compare: the reference is empty")
    if not np.all(np.isfinite(r)):
        return math.inf
    scale = float(np.max(np.abs(ref)))
    if scale == 0.0:
        return float(np.max(np.abs(r)))
    return float(np.max(np.abs(r - ref)) / scale)


def check_matpow_sum(result: Any, matrices: list[np.ndarray], n: int, seed: int = 0) -> float:
    """Relative error of ``result`` as ``sum(matpow(M, n) for M in matrices)``, via a vector.

    Multiplies ``result`` by a random positive vector and compares with float64
    matrix-vector products, so it costs ``O(len(matrices) * n * size**2)`` whatever the
    size. Positive entries and a positive vector mean no cancellation can hide an error.
    """
    if not matrices:
        raise ValueError("give the input matrices the result was computed from")
    res = np.asarray(result)
    size = res.shape[0] if res.ndim == 2 else -1
    if res.ndim != 2 or res.shape[1] != size:
        raise ValueError(f"result must be a square matrix, not an array of shape {res.shape}")
    v = np.random.default_rng(seed).uniform(0.5, 1.5, size)
    reference = sum(matvec_power(M, true_power(n), v) for M in matrices)
    return relative_error(res.astype(np.float64) @ v, reference)


def device_memory_mb(size: int, chains: int = 2) -> int:
    """Memory (MiB) one device needs to run ``chains`` matpow chains of ``size x size`` float32.

    Each chain holds its input, the product being computed and the previous one, a copy
    on its way to the host for the final sum, and one spare for the allocator's
    fragmentation: five matrices. Used to size virtual GPUs (whose default 1 GiB is too
    small for the seed's 10^4 x 10^4 matrices).
    """
    require_int("the matrix size", size, 1)
    require_int("chains", chains, 1)
    return math.ceil(chains * 5 * size * size * 4 / 2**20)
