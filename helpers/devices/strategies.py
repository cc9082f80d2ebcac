"""One-process ``tf.distribute`` strategies over the devices a lesson configured.

Notebook 05 builds its ``MirroredStrategy`` in a cell; what needs care is in here.
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
from typing import Any

from helpers.devices.names import parse_device
from helpers.frameworks import import_tensorflow

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
