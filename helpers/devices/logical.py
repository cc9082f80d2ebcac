"""Give a lesson the number of devices it needs, on whatever machine runs it.

A lesson about two devices must run on a laptop with no GPU. TensorFlow can split one
physical CPU into several *logical* CPUs, and one GPU into several *virtual* GPUs with
memory limits, but only before its runtime initialises (before the first op, or the
first listing of logical devices). :func:`requirements_banner` picks real GPUs when
there are enough, otherwise virtual GPUs or logical CPUs, configures them, and prints a
banner saying exactly what was simulated, so no notebook pretends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from helpers.checks import require_int
from helpers.devices.inventory import cpu_cores
from helpers.frameworks import import_tensorflow

_RESTART = "restart the kernel (Kernel > Restart) and run the notebook from the top"
#: The most devices a lesson may ask for: logical devices share the same cores or GPU.
MAX_LOGICAL_DEVICES = 64
_TOO_MANY = "logical devices share the same hardware; a lesson needs a few"


def _configure(device_type: str, physical: Any, configs: list[Any]) -> None:
    tf = import_tensorflow()
    current = tf.config.get_logical_device_configuration(physical)
    if current is not None and len(current) == len(configs):
        return
    try:
        tf.config.set_logical_device_configuration(physical, configs)
    except RuntimeError:
        existing = len(tf.config.list_logical_devices(device_type))
        if existing == len(configs):
            return
        raise RuntimeError(
            f"TensorFlow's runtime already started with {existing} logical {device_type}(s); "
            f"{len(configs)} can only be made before the first TensorFlow op: {_RESTART}"
        ) from None


def use_logical_cpus(n: int) -> list[str]:
    """Split the physical CPU into ``n`` logical CPUs; return their short names.

    Calling again with the same ``n`` does nothing; a different ``n`` once the runtime
    has started raises RuntimeError (only a kernel restart can change it).
    """
    require_int("the number of logical CPUs", n, 1, MAX_LOGICAL_DEVICES, _TOO_MANY)
    tf = import_tensorflow()
    cpu = tf.config.list_physical_devices("CPU")[0]
    _configure("CPU", cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)])
    return [f"/CPU:{i}" for i in range(n)]


def use_virtual_gpus(n: int, memory_mb: int = 1024) -> list[str]:
    """Split every physical GPU into ``n`` virtual GPUs of ``memory_mb`` each."""
    require_int("the number of virtual GPUs per physical GPU", n, 1)
    require_int("memory_mb", memory_mb, 1)
    tf = import_tensorflow()
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        raise RuntimeError(
            "this machine has no GPU TensorFlow can use, so it cannot be split; "
            "use use_logical_cpus(n) instead"
        )
    config = [tf.config.LogicalDeviceConfiguration(memory_limit=memory_mb) for _ in range(n)]
    for gpu in gpus:
        _configure("GPU", gpu, config)
    return [f"/GPU:{i}" for i in range(n * len(gpus))]


@dataclass(frozen=True)
class DevicePlan:
    """Which devices a lesson will use, and whether they are real or simulated."""

    needed: int
    kind: str  # "gpu", "virtual-gpu" or "logical-cpu"
    devices: tuple[str, ...]
    physical_gpus: int
    cores: int

    @property
    def simulated(self) -> bool:
        """True when the devices are carved out of fewer physical ones."""
        return self.kind == "virtual-gpu" or (self.kind == "logical-cpu" and self.needed > 1)

    def mxnet_contexts(self, mx: Any) -> list[Any]:
        """The matching MXNet contexts (MXNet cannot split a GPU: virtual ones share gpu(0))."""
        if self.kind == "gpu":
            return [mx.gpu(i) for i in range(self.needed)]
        if self.kind == "virtual-gpu":
            return [mx.gpu(i % self.physical_gpus) for i in range(self.needed)]
        return [mx.cpu(i) for i in range(self.needed)]

    def banner(self) -> str:
        have = f"this machine has {self.physical_gpus} GPU(s) and {self.cores} CPU core(s)"
        names = ", ".join(self.devices)
        if self.kind == "gpu":
            how = f"using {self.needed} real GPU(s): {names}"
        elif self.kind == "virtual-gpu":
            how = (
                f"SIMULATED: using {self.needed} virtual GPUs ({names}) carved out of "
                f"{self.physical_gpus} physical GPU(s); they share its compute, so splitting "
                "work across them cannot run faster"
            )
        elif self.needed == 1:
            how = f"using the CPU ({names})"
        else:
            how = (
                f"SIMULATED: using {self.needed} logical CPUs ({names}); they share the same "
                f"{self.cores} core(s), so splitting work across them cannot run faster"
            )
        text = f"This lesson needs {self.needed} device(s); {have}.\n{how}."
        width = min(max(len(line) for line in text.splitlines()), 100)
        return "\n".join(["=" * width, text, "=" * width])


def plan_devices(needed: int, gpu_memory_mb: int = 1024) -> DevicePlan:
    """Configure ``needed`` devices (real GPUs, else virtual GPUs, else logical CPUs)."""
    require_int("the number of devices a lesson needs", needed, 1, MAX_LOGICAL_DEVICES, _TOO_MANY)
    tf = import_tensorflow()
    gpus = len(tf.config.list_physical_devices("GPU"))
    if gpus >= needed:
        kind, devices = "gpu", [f"/GPU:{i}" for i in range(needed)]
    elif gpus > 0:
        kind = "virtual-gpu"
        devices = use_virtual_gpus(math.ceil(needed / gpus), gpu_memory_mb)[:needed]
    else:
        kind, devices = "logical-cpu", use_logical_cpus(needed)
    return DevicePlan(needed, kind, tuple(devices), gpus, cpu_cores())


def requirements_banner(needed: int, gpu_memory_mb: int = 1024) -> DevicePlan:
    """Configure the devices a lesson needs, print what is real and what is simulated."""
    plan = plan_devices(needed, gpu_memory_mb)
    print(plan.banner())
    return plan
