"""What devices this machine has, as TensorFlow, MXNet and the NVIDIA driver see them.

Listing TensorFlow's *logical* devices initialises its runtime, after which logical CPUs
and virtual GPUs can no longer be configured: call :func:`helpers.requirements_banner`
(or :mod:`helpers.devices.logical`) first, then list.

Each framework is asked about its own devices: TensorFlow's GPU count says nothing about
MXNet's (the CPU wheel sees none on the same machine). :func:`gpu_cards` describes the
GPUs TensorFlow can use before its runtime starts: the compute capability from
TensorFlow's device details, the memory from ``nvidia-smi`` (TensorFlow reports memory
only once its runtime runs, and then only what it allocated), a MIG slice's own.
"""

from __future__ import annotations

import os
import re
import shutil  # noqa: F401  (tests fake nvidia-smi through inventory.shutil and .subprocess)
import subprocess  # noqa: F401
from dataclasses import dataclass

from helpers.frameworks import import_mxnet, import_tensorflow
from helpers.machine import query_nvidia_smi, smi_output
from helpers.output import Table

FRAMEWORKS = ("tensorflow", "mxnet")


def _check_framework(framework: str) -> None:
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {FRAMEWORKS}, not {framework!r}")


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
    rows = query_nvidia_smi("index,name,memory.total,memory.used,utilization.gpu")
    if rows is None:
        return None
    return Table(["index", "name", "memory total", "memory used", "utilisation"], rows)


@dataclass(frozen=True)
class GPUCard:
    """One GPU TensorFlow can use: its name, memory and compute capability."""

    index: int  # TensorFlow's physical GPU index (after CUDA_VISIBLE_DEVICES)
    name: str
    memory_mb: int | None  # total memory in MiB (nvidia-smi), None when unknown
    capability: tuple[int, int] | None  # compute capability, e.g. (7, 5) for a T4

    def describe(self) -> str:
        memory = "memory unknown" if self.memory_mb is None else f"{self.memory_mb / 1024:.0f} GiB"
        cap = "" if self.capability is None else f", compute capability {self.capability[0]}." \
            f"{self.capability[1]}"
        return f"{self.name} ({memory}{cap})"


def _mib(text: str) -> int | None:
    number = text.split()[0] if text.split() else ""
    return int(number) if number.isdigit() else None


def _smi_row_of(position: int, rows: list[list[str]]) -> list[str] | None:
    """The ``index,uuid,name,memory.total`` row of TensorFlow's GPU ``position``.

    nvidia-smi lists every GPU; CUDA (and so TensorFlow) numbers only the visible ones,
    in the order ``CUDA_VISIBLE_DEVICES`` gives (indices, ``GPU-`` or ``MIG-`` UUIDs).
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        tokens = [t.strip() for t in visible.split(",") if t.strip()]
        token = tokens[position] if position < len(tokens) else None
        return next((row for row in rows if token is not None and (
            token in (row[0], row[1]) or (len(token) > 6 and row[1].startswith(token)))), None)
    return rows[position] if position < len(rows) else None


def _with_mig_slices(rows: list[list[str]]) -> list[list[str]]:
    """``index,uuid,name,memory.total`` rows, each card in MIG mode replaced by its slices.

    Under MIG, CUDA sees the slices (``MIG-`` UUIDs, listed by ``nvidia-smi -L`` as
    ``  MIG 1g.10gb     Device  0: (UUID: MIG-...)``), and ``memory.total`` still reports
    the whole card. A slice's memory is in its profile's name, in GB (read as 10^9 bytes,
    a little less than the slice holds).
    """
    slices: dict[str, list[list[str]]] = {}
    card = None
    for line in (smi_output("-L") or "").splitlines():
        if gpu := re.match(r"GPU (\d+): (.+) \(UUID: (\S+)\)", line):
            card = gpu.groups()
        elif (mig := re.match(r"\s+MIG (\S+)\s+Device\s+\d+: \(UUID: (\S+)\)", line)) and card \
                and (gb := re.search(r"(\d+)gb", mig[1])):
            slices.setdefault(card[2], []).append(
                [card[0], mig[2], f"{card[1]} MIG {mig[1]}", f"{int(gb[1]) * 10**9 // 2**20} MiB"])
    return [part for row in rows for part in slices.get(row[1], [row])]


def gpu_cards() -> tuple[GPUCard, ...]:
    """The GPUs TensorFlow can use, described without starting its runtime (MIG slices too)."""
    tf = import_tensorflow()
    rows = _with_mig_slices(query_nvidia_smi("index,uuid,name,memory.total") or [])
    cards = []
    for i, device in enumerate(tf.config.list_physical_devices("GPU")):
        details = tf.config.experimental.get_device_details(device) or {}
        row = _smi_row_of(i, rows)
        capability = details.get("compute_capability")
        mig = row[2] if row and row[1].startswith("MIG-") else None
        cards.append(GPUCard(
            index=i,
            name=str(mig or details.get("device_name") or (row[2] if row else f"GPU {i}")),
            memory_mb=_mib(row[3]) if row and len(row) > 3 else None,
            capability=tuple(capability) if capability else None,
        ))
    return tuple(cards)
