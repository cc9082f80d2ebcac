"""What machine produced a measurement: CPU, cores, memory, GPUs, versions.

A timing means little without knowing it came from 2 shared cores or from eight GPUs,
so every saved result, the ``make run`` report and the benchmarks record the machine
beside their numbers, all from this one description. It is read from ``/proc``,
``psutil``, ``nvidia-smi`` and the installed packages' metadata, never by importing
TensorFlow or MXNet: describing the machine must not cost a framework's start-up, nor
load a framework into a notebook that does not use it.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

#: Packages whose versions a description lists (a CUDA build stands in for ``mxnet``).
PACKAGES = ("tensorflow", "mxnet", "numpy", "nbval", "pytest")
#: A CUDA build of MXNet stands in for the `mxnet` pin.
_ALIASES = {"mxnet": ("mxnet", "mxnet-cu117", "mxnet-cu112")}


def package_version(package: str) -> str | None:
    """The installed version of ``package`` (or of its CUDA twin), None if absent."""
    for name in _ALIASES.get(package, (package,)):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    """The instruction-set flags of this CPU (Linux ``/proc/cpuinfo``; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def load_average() -> list[float] | None:
    """1, 5 and 15-minute load averages (runnable processes), None where unsupported."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def describe_machine() -> dict[str, Any]:
    """Everything a result states about the machine, as plain JSON values."""
    import psutil  # noqa: PLC0415  (pinned; only this function needs it)

    from helpers.devices.inventory import cpu_cores, nvidia_smi, physical_cores  # noqa: PLC0415

    smi = nvidia_smi()
    return {
        "cpu": cpu_model(),
        "logical_cpus": cpu_cores(),
        "physical_cores": physical_cores(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "gpus": [] if smi is None else [f"{row[1]} ({row[2]})" for row in smi.rows],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "profile": os.environ.get("SERIES_PROFILE"),
        "versions": {p: package_version(p) for p in PACKAGES},
    }
