"""What ran the bench: CPU, cores, memory, GPUs, versions and how busy the machine was.

Read without importing TensorFlow or MXNet (the orchestrating process stays light; the
frameworks load only in the measuring processes).
"""

from __future__ import annotations

import os
import platform
import time
from importlib import metadata
from typing import Any

PACKAGES = ("tensorflow", "mxnet", "numpy", "nbval", "pytest")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def load_average() -> list[float] | None:
    """1, 5 and 15-minute load averages (runnable processes), None where unsupported."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def machine_info() -> dict[str, Any]:
    """Everything RESULTS.md states about the machine, as plain JSON values."""
    import psutil  # noqa: PLC0415

    from helpers.devices.inventory import cpu_cores, nvidia_smi  # noqa: PLC0415

    smi = nvidia_smi()
    gpus = [] if smi is None else [f"{row[1]} ({row[2]})" for row in smi.rows]
    return {
        "cpu": cpu_model(),
        "logical_cpus": cpu_cores(),
        "physical_cores": psutil.cpu_count(logical=False) or cpu_cores(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "gpus": gpus,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {p: _version(p) for p in PACKAGES},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
