"""Count the bytes every device sends and receives in a collective.

An all-reduce written by hand moves tensors between devices with one small function
(``move(x, src, dst)``). :meth:`Traffic.watch` wraps the operations an algorithm is
given so that this function also records every transfer; notebook 11 then puts the
bytes each device sent and received beside the closed-form counts it writes, and
asserts that the algorithm moves exactly what the theory says. The counter knows
nothing about frameworks: it is told the size of each transfer by ``nbytes``, a
function of the tensor (:func:`tensor_nbytes` works for NumPy, TensorFlow and MXNet).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from helpers.checks import require_int
from helpers.table import Table


def tensor_nbytes(x: Any) -> int:
    """Bytes of a NumPy array, TensorFlow tensor or MXNet NDArray (elements x item size)."""
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    if shape is None or dtype is None:
        raise ValueError(f"tensor_nbytes needs an array with .shape and .dtype, not {x!r}")
    count = 1
    for dim in tuple(shape):
        count *= int(dim)
    import numpy as np  # noqa: PLC0415

    size = getattr(dtype, "size", None)  # TensorFlow DType
    itemsize = int(size) if isinstance(size, int) else np.dtype(dtype).itemsize
    return count * itemsize


@dataclass
class Traffic:
    """Every transfer of a collective: who sent how many bytes to whom, in order."""

    devices: Sequence[Hashable]
    transfers: list[tuple[Hashable, Hashable, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.devices = list(self.devices)
        if not self.devices or len(set(map(str, self.devices))) != len(self.devices):
            raise ValueError(f"Traffic needs distinct devices, not {self.devices!r}")

    def record(self, src: Hashable, dst: Hashable, nbytes: int) -> None:
        """Note one transfer of ``nbytes`` from ``src`` to ``dst`` (a copy to itself is free)."""
        for device in (src, dst):
            if device not in self.devices:
                raise ValueError(f"unknown device {device!r}; the devices are {self.devices}")
        require_int("nbytes", nbytes, 0)
        if src != dst:
            self.transfers.append((src, dst, nbytes))

    def watch(self, ops: Any, nbytes: Callable[[Any], int] = tensor_nbytes) -> Any:
        """``ops`` (an object with ``move(x, src, dst)`` and other operations) whose
        ``move`` also records its transfer; every other attribute is ``ops``'s own."""
        return _Watched(ops, self, nbytes)

    def sent(self, device: Hashable) -> int:
        return sum(b for s, _, b in self.transfers if s == device)

    def received(self, device: Hashable) -> int:
        return sum(b for _, d, b in self.transfers if d == device)

    def per_device(self) -> dict[str, tuple[int, int]]:
        """``{device: (bytes sent, bytes received)}``."""
        return {str(d): (self.sent(d), self.received(d)) for d in self.devices}

    def reset(self) -> None:
        self.transfers.clear()


class _Watched:
    """Stands in for a set of operations and counts what its ``move`` carries."""

    def __init__(self, ops: Any, traffic: Traffic, nbytes: Callable[[Any], int]) -> None:
        self._ops, self._traffic, self._nbytes = ops, traffic, nbytes

    def move(self, x: Any, src: Any, dst: Any) -> Any:
        self._traffic.record(src, dst, self._nbytes(x))
        return self._ops.move(x, src, dst)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ops, name)


def traffic_table(counts: dict[str, Sequence[tuple[int, int]]],
                  devices: Sequence[Hashable]) -> Table:
    """One row per device, a sent and a received column per scheme."""
    columns = ["device"]
    for scheme in counts:
        columns += [f"{scheme} sent", f"{scheme} received"]
    table = Table(columns)
    for i, device in enumerate(devices):
        row: list[Any] = [str(device)]
        for per_device in counts.values():
            row += list(per_device[i])
        table.append(row)
    return table
