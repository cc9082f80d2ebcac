"""What devices this machine has, as TensorFlow, MXNet and the NVIDIA driver see them.

Listing TensorFlow's *logical* devices initialises its runtime, after which logical CPUs
and virtual GPUs can no longer be configured: call :func:`helpers.requirements_banner`
(or :mod:`helpers.devices.logical`) first, then list.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from helpers.frameworks import import_mxnet, import_tensorflow
from helpers.table import Table

FRAMEWORKS = ("tensorflow", "mxnet")


def _check_framework(framework: str) -> None:
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {FRAMEWORKS}, not {framework!r}")


def _check_index(i: int) -> None:
    if not isinstance(i, int) or isinstance(i, bool) or i < 0:
        raise ValueError(f"a GPU index is an int >= 0, not {i!r}")


def cpu_cores() -> int:
    """Cores this process may run on (respects taskset/cgroup affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def physical_gpu_count() -> int:
    """GPUs TensorFlow can use (looking does not initialise the runtime)."""
    return len(import_tensorflow().config.list_physical_devices("GPU"))


def _gib(nbytes: float | None) -> str | None:
    return None if nbytes is None else f"{nbytes / 2**30:.1f} GiB"


def list_devices(frameworks: tuple[str, ...] = FRAMEWORKS) -> Table:
    """One table of TensorFlow's physical and logical devices and MXNet's contexts."""
    for framework in frameworks:
        _check_framework(framework)
    table = Table(["framework", "level", "name", "kind", "memory"])
    if "tensorflow" in frameworks:
        tf = import_tensorflow()
        for dev in tf.config.list_physical_devices():
            table.append(["tensorflow", "physical", dev.name, dev.device_type, None])
        for dev in tf.config.list_logical_devices():
            memory = None
            if dev.device_type == "GPU":
                memory = _gib(tf.config.experimental.get_memory_info(dev.name).get("peak"))
            table.append(["tensorflow", "logical", dev.name, dev.device_type, memory])
    if "mxnet" in frameworks:
        mx = import_mxnet()
        table.append(["mxnet", "context", "cpu(0)", "CPU", "all host RAM, all cores"])
        for i in range(mx.context.num_gpus()):
            _free, total = mx.context.gpu_memory_info(i)
            table.append(["mxnet", "context", f"gpu({i})", "GPU", _gib(total)])
    return table


def nvidia_smi() -> Table | None:
    """A short ``nvidia-smi`` summary, or None where there is no NVIDIA driver."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    fields = "index,name,memory.total,memory.used,utilization.gpu"
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    table = Table(["index", "name", "memory total", "memory used", "utilisation"])
    for line in out.strip().splitlines():
        table.append([part.strip() for part in line.split(",")])
    return table


def try_gpu(i: int = 0, framework: str = "tensorflow") -> Any:
    """GPU ``i`` if it exists, else the CPU: a device string for TF, a context for MXNet."""
    _check_index(i)
    _check_framework(framework)
    if framework == "mxnet":
        mx = import_mxnet()
        return mx.gpu(i) if i < mx.context.num_gpus() else mx.cpu()
    return f"/GPU:{i}" if i < physical_gpu_count() else "/CPU:0"


def try_all_gpus(framework: str = "tensorflow") -> list[Any]:
    """Every GPU, or ``[CPU]`` when there is none."""
    _check_framework(framework)
    if framework == "mxnet":
        mx = import_mxnet()
        return [mx.gpu(i) for i in range(mx.context.num_gpus())] or [mx.cpu()]
    return [f"/GPU:{i}" for i in range(physical_gpu_count())] or ["/CPU:0"]
