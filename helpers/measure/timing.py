"""Time code on devices correctly: warm up, repeat, and wait for the device to finish.

Frameworks return before the work is done: MXNet's engine is asynchronous even on the
CPU, and TensorFlow queues GPU kernels. A timer that stops when the Python call returns
measures how fast work is *queued*, not done. Every timing here ends with a
synchronisation step for the framework that ran the work, discards warm-up runs (graph
tracing, memory allocation, cuBLAS/oneDNN setup) and reports the median and spread of
several repeats, because single timings on a shared machine are noise.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from helpers.checks import require_int

SYNCS = ("mxnet", "tensorflow", "none")


def sync_mxnet(_result: Any = None) -> None:
    """Block until MXNet's engine has finished every queued operation."""
    from helpers.frameworks import import_mxnet  # noqa: PLC0415

    import_mxnet().nd.waitall()


def sync_tensorflow(result: Any = None) -> None:
    """Block until TensorFlow's devices are idle and ``result`` (if any) is computed."""
    from helpers.frameworks import import_tensorflow  # noqa: PLC0415

    tf = import_tensorflow()
    tf.test.experimental.sync_devices()
    if result is not None:
        tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, result)


def _no_sync(_result: Any = None) -> None:
    """For work that is done when the call returns (NumPy), or to show a wrong timing."""


def resolve_sync(sync: str | Callable[[Any], None]) -> Callable[[Any], None]:
    """Accept a framework name or a callable that receives the timed function's result."""
    if callable(sync):
        return sync
    table = {"mxnet": sync_mxnet, "tensorflow": sync_tensorflow, "none": _no_sync}
    if sync not in table:
        raise ValueError(f"sync must be one of {SYNCS} or a callable, not {sync!r}")
    return table[sync]


def _check_positive(name: str, value: float | None, allow_zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, not {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, not {value!r}")


@dataclass
class TimingResult:
    """Repeated timings of one piece of work, with optional work counts for rates."""

    label: str
    samples: list[float] = field(default_factory=list)
    flops: float | None = None
    nbytes: float | None = None

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("a TimingResult needs at least one sample")
        _check_positive("flops", self.flops)
        _check_positive("nbytes", self.nbytes)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        return min(self.samples)

    @property
    def spread(self) -> float:
        """Max minus min of the samples, in seconds."""
        return max(self.samples) - min(self.samples)

    @property
    def gflops(self) -> float | None:
        """Billions of floating-point operations per second, from the median time."""
        return None if self.flops is None else self.flops / self.median / 1e9

    @property
    def gbps(self) -> float | None:
        """Gigabytes (1e9 bytes) moved per second, from the median time."""
        return None if self.nbytes is None else self.nbytes / self.median / 1e9

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(median=self.median, spread=self.spread, gflops=self.gflops, gbps=self.gbps)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimingResult:
        return cls(data["label"], list(data["samples"]), data.get("flops"), data.get("nbytes"))

    def __str__(self) -> str:
        text = f"{self.label}: median {self.median * 1e3:.3f} ms"
        text += f" (spread {self.spread * 1e3:.3f} ms over {len(self.samples)} runs)"
        if self.gflops is not None:
            text += f", {self.gflops:.2f} GFLOP/s"
        if self.gbps is not None:
            text += f", {self.gbps:.2f} GB/s"
        return text


def benchmark(
    fn: Callable[[], Any],
    *,
    sync: str | Callable[[Any], None],
    warmup: int = 1,
    repeat: int = 5,
    flops: float | None = None,
    nbytes: float | None = None,
    label: str = "",
) -> TimingResult:
    """Run ``fn`` ``warmup`` times untimed, then ``repeat`` times timed, each ending in ``sync``.

    ``sync`` is ``"mxnet"``, ``"tensorflow"``, ``"none"`` or a callable given ``fn``'s result.
    """
    if not callable(fn):
        raise ValueError(f"benchmark needs a function to call, not {fn!r}")
    wait = resolve_sync(sync)
    require_int("warmup", warmup, 0)
    require_int("repeat", repeat, 1)
    _check_positive("flops", flops)
    _check_positive("nbytes", nbytes)
    for _ in range(warmup):
        wait(fn())
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        wait(fn())
        samples.append(time.perf_counter() - start)
    return TimingResult(label or getattr(fn, "__name__", "work"), samples, flops, nbytes)
