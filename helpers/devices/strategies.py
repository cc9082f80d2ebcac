"""Choose a ``tf.distribute`` strategy for one process, the way the seed does, on any machine.

The seed's rule is: two or more GPUs -> ``MirroredStrategy`` over all of them, otherwise
the default strategy (one device, no replication). On a machine without GPUs that rule
would never show mirroring at all, so :func:`choose_strategy` adds one step: when the
lesson configured two or more *logical* CPUs (see :mod:`helpers.devices.logical`), it
mirrors over those and says loudly that the replicas are simulated on shared cores.

:func:`mirrored_over` builds a strategy over the first ``k`` devices, for timing 1, 2, 4
... replicas in one process. Several ``MirroredStrategy`` objects over different device
counts do not coexist out of the box: each numbers its collective all-reduce groups from
the same starting key, so the second strategy's all-reduce joins a group that the first
registered with another size and TensorFlow aborts ("is joining a group with size 2, but
that group has size 4"). Every strategy made here therefore starts its keys in a range
of its own, as TensorFlow's own test suites do; where a TensorFlow version lacks that
knob, the strategy falls back to ``ReductionToOneDevice``, which uses no collective keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from helpers.devices.names import parse_device
from helpers.frameworks import import_tensorflow

KINDS = ("gpu", "virtual-gpu", "logical-cpu", "default")
_KEY_RANGE = 100_000  # collective keys one strategy may use before the next one's start


def _short_names(devices: Sequence[str]) -> tuple[str, ...]:
    if isinstance(devices, str):
        raise ValueError(f"devices is a list of device strings, not the string {devices!r}")
    names = tuple(parse_device(d).short for d in devices)
    if len(set(names)) != len(names):
        raise ValueError(f"devices must be distinct, got {list(devices)}")
    return names


def _require_existing(tf: Any, names: Sequence[str], what: str) -> None:
    """ValueError for a device this process does not have.

    TensorFlow accepts a strategy over ``/GPU:7`` on a machine without it and soft-places
    the ops elsewhere (the behaviour notebook 02 teaches), so its replica would not run
    on the device it is reported on.
    """
    existing = {parse_device(d.name).short for d in tf.config.list_logical_devices()}
    missing = [n for n in names if n not in existing]
    if missing:
        raise ValueError(
            f"{what} {', '.join(missing)}, which this process does not have (its devices: "
            f"{', '.join(sorted(existing))}); TensorFlow would place the work elsewhere. Use "
            "devices that exist (list_devices(), or requirements_banner(n) to make them)")


def new_mirrored_strategy(devices: Sequence[str]) -> Any:
    """``tf.distribute.MirroredStrategy(devices)`` with collective keys no other strategy uses.

    See the module docstring: without this, a second strategy over a different number of
    devices in the same process aborts in its first all-reduce. Every device must exist.
    """
    names = _short_names(devices)
    if not names:
        raise ValueError("a MirroredStrategy needs at least one device")
    tf = import_tensorflow()
    _require_existing(tf, names, "a MirroredStrategy over")
    cls = tf.distribute.MirroredStrategy
    if isinstance(getattr(cls, "_collective_key_base", None), int):
        cls._collective_key_base += _KEY_RANGE
        return cls(list(names))
    return cls(list(names), cross_device_ops=tf.distribute.ReductionToOneDevice())


@dataclass(frozen=True)
class StrategyChoice:
    """The strategy picked, what kind of devices it replicates over, and why."""

    strategy: Any
    kind: str  # one of KINDS
    devices: tuple[str, ...]
    reason: str

    @property
    def replicas(self) -> int:
        return int(self.strategy.num_replicas_in_sync)

    @property
    def simulated(self) -> bool:
        """True when the replicas share hardware (virtual GPUs, logical CPUs)."""
        return self.kind in ("virtual-gpu", "logical-cpu")

    def describe(self) -> str:
        name = type(self.strategy).__name__
        where = ", ".join(self.devices) if self.devices else "one device"
        text = f"{name} with {self.replicas} replica(s) on {where}: {self.reason}"
        if self.simulated:
            text = "SIMULATED replicas. " + text
        return text


def choose_strategy(announce: bool = True) -> StrategyChoice:
    """MirroredStrategy over all GPUs (2+), else over logical CPUs (2+), else the default.

    Looks at TensorFlow's *logical* devices, which initialises its runtime: configure
    logical CPUs or virtual GPUs (``requirements_banner``) before calling this.
    """
    tf = import_tensorflow()
    gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
    cpus = [d.name for d in tf.config.list_logical_devices("CPU")]
    physical_gpus = len(tf.config.list_physical_devices("GPU"))
    if len(gpus) >= 2:
        kind = "gpu" if physical_gpus >= len(gpus) else "virtual-gpu"
        devices = _short_names(gpus)
        reason = (f"{len(gpus)} GPUs" if kind == "gpu" else
                  f"{len(gpus)} virtual GPUs on {physical_gpus} physical GPU(s)")
        choice = StrategyChoice(new_mirrored_strategy(devices), kind, devices, reason)
    elif len(cpus) >= 2 and not gpus:
        devices = _short_names(cpus)
        choice = StrategyChoice(
            new_mirrored_strategy(devices), "logical-cpu", devices,
            f"no GPUs, {len(cpus)} logical CPUs configured on the same cores")
    else:
        why = "one GPU" if gpus else "one CPU and no GPU"
        choice = StrategyChoice(tf.distribute.get_strategy(), "default", (),
                                f"{why}: nothing to mirror over")
    if announce:
        print(choice.describe())
    return choice


def mirrored_over(devices: Sequence[str], k: int) -> Any:
    """A MirroredStrategy over the first ``k`` of ``devices``.

    Strategies over different counts can be built one after another in the same process
    (see the module docstring).
    """
    names = _short_names(devices)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(names):
        raise ValueError(
            f"k must be an int between 1 and {len(names)} (the devices given), not {k!r}; "
            "configure more logical devices with requirements_banner(n) at the top")
    return new_mirrored_strategy(names[:k])


def replica_devices(strategy: Any) -> list[str]:
    """The short names of the devices a strategy's replicas run on.

    The default strategy has no device list of its own (it runs where TensorFlow places
    ops), so it reports an empty list rather than TensorFlow's RuntimeError. A strategy
    built over a device this process does not have raises ValueError.
    """
    tf = import_tensorflow()
    if not isinstance(strategy, tf.distribute.Strategy):
        raise ValueError(f"expected a tf.distribute.Strategy, not {type(strategy).__name__}")
    if strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy():
        return []
    devices = [parse_device(d) for d in strategy.extended.worker_devices]
    local = [d.short for d in devices if d.job in (None, "localhost")]
    _require_existing(tf, local, f"this {type(strategy).__name__} has replicas on")
    return [d.short for d in devices]
