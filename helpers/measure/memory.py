"""Measure how much memory this process holds, to check the memory arithmetic of training.

On a CPU a framework's tensors live in the process's own memory, so the growth of its
resident set size (RSS: the pages actually in RAM) while the notebook creates weights,
gradients and optimizer states is a measurement of what they occupy. Large tensors are
allocated with their own memory mappings and given back to the system when freed, so
the RSS follows them closely; small allocations and the framework's own caches add a
few megabytes of noise, which is why the lesson measures tensors of tens of megabytes or
more. On a GPU the same question is asked of the device (``tf.config.experimental.
get_memory_info``), not of the process.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from helpers.table import Table


def rss_bytes() -> int:
    """Resident set size of this process now, in bytes."""
    import psutil  # noqa: PLC0415

    return int(psutil.Process().memory_info().rss)


@dataclass
class MemorySteps:
    """Memory growth step by step: ``step(name, fn)`` runs ``fn`` and notes what it added.

    ``reader`` returns the bytes in use: this process's RSS (the default, for a CPU), or a
    GPU's allocated memory (``lambda: tf.config.experimental.get_memory_info("GPU:0")
    ["current"]``). Memory a process frees is usually kept for reuse rather than given
    back, so only growth into memory the process never used before is measured reliably:
    measure first thing in a process, and keep each step's result alive.
    """

    reader: Callable[[], int] = rss_bytes
    steps: list[tuple[str, int]] = field(default_factory=list)
    baseline: int = 0
    _last: int = 0

    def __post_init__(self) -> None:
        if not callable(self.reader):
            raise ValueError(f"reader must be a function returning bytes, not {self.reader!r}")
        self.baseline = self._last = int(self.reader())

    def step(self, name: str, fn: Callable[[], Any] = lambda: None) -> Any:
        """Run ``fn`` (its result is returned and must be kept alive by the caller) and
        record the RSS growth since the previous step."""
        result = fn()
        gc.collect()
        now = int(self.reader())
        self.steps.append((name, now - self._last))
        self._last = now
        return result

    def growth(self, name: str) -> int:
        """Bytes the step called ``name`` added."""
        for step, grown in self.steps:
            if step == name:
                return grown
        raise KeyError(f"no step {name!r}; steps are {[s for s, _ in self.steps]}")

    def table(self, expected: dict[str, float] | None = None) -> Table:
        """Measured growth per step in MB, beside the expected bytes where given."""
        expected = expected or {}
        table = Table(["step", "measured MB", "expected MB", "measured / expected"])
        for name, grown in self.steps:
            want = expected.get(name)
            table.append([name, grown / 1e6, None if want is None else want / 1e6,
                          None if not want else grown / want])
        return table
