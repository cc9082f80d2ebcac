"""Stand-ins for GPU discovery, so GPU code paths run on a machine without a GPU.

What is faked is exactly what the helpers ask: TensorFlow's physical GPUs, their device
details (name, compute capability), its logical-device and memory-growth configuration
(with the runtime's one-time rule), ``nvidia-smi``'s answers (modelled, or recorded on a
real card), and MXNet's own GPU count and contexts. The helpers' logic above those calls is
the real one.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

#: name as TensorFlow reports it, total memory in MiB as nvidia-smi reports it, capability
CARDS: dict[str, tuple[str, int, tuple[int, int]]] = {
    "T4": ("Tesla T4", 15360, (7, 5)),
    "L4": ("NVIDIA L4", 23034, (8, 9)),
    "A100-40GB": ("NVIDIA A100-SXM4-40GB", 40960, (8, 0)),
    "A100-80GB": ("NVIDIA A100-SXM4-80GB", 81920, (8, 0)),
    "H100": ("NVIDIA H100 80GB HBM3", 81559, (9, 0)),
}
#: Cards whose ``nvidia-smi`` answers were recorded on a real machine (``gpu_reference/``):
#: one of them is answered from the recording, several from the model.
RECORDED_CARDS = {"H200": ("NVIDIA H200", 143771, (9, 0))}
ALL_CARDS = CARDS | RECORDED_CARDS


@dataclass(frozen=True)
class FakeDevice:
    name: str
    device_type: str


@dataclass
class FakeLogicalDeviceConfiguration:
    memory_limit: int | None = None


@dataclass
class FakeTFConfig:
    """``tf.config`` of a machine with ``gpus`` cards of one kind."""

    gpus: int
    card: str = "T4"
    started: bool = False
    logical: dict[str, list[Any]] = field(default_factory=dict)
    growth: dict[str, bool] = field(default_factory=dict)

    LogicalDeviceConfiguration = FakeLogicalDeviceConfiguration

    def __post_init__(self) -> None:
        self.experimental = self  # set_memory_growth & co. live under tf.config.experimental

    def list_physical_devices(self, kind: str | None = None) -> list[FakeDevice]:
        cpu = [FakeDevice("/physical_device:CPU:0", "CPU")]
        gpu = [FakeDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(self.gpus)]
        return {"CPU": cpu, "GPU": gpu, None: cpu + gpu}[kind]

    def get_device_details(self, device: FakeDevice) -> dict[str, Any]:
        if device.device_type != "GPU":
            return {}
        name, _memory, capability = ALL_CARDS[self.card]
        return {"device_name": name, "compute_capability": capability}

    def get_logical_device_configuration(self, device: FakeDevice) -> list[Any] | None:
        return self.logical.get(device.name)

    def set_logical_device_configuration(self, device: FakeDevice, configs: list[Any]) -> None:
        if device.device_type == "GPU" and any(c.memory_limit is None for c in configs):
            raise ValueError("Setting memory limit is required for GPU virtual devices")
        if self.logical.get(device.name) == list(configs):
            return
        if self.started:
            raise RuntimeError("Virtual devices cannot be modified after being initialized")
        self.logical[device.name] = list(configs)

    def list_logical_devices(self, kind: str) -> list[FakeDevice]:
        self.started = True
        out = []
        for device in self.list_physical_devices(kind):
            out += [device] * len(self.logical.get(device.name) or [None])
        return [FakeDevice(f"/device:{kind}:{i}", kind) for i in range(len(out))]

    def set_memory_growth(self, device: FakeDevice, enable: bool) -> None:
        if device.name in self.logical:
            raise ValueError("Cannot set memory growth on device when virtual devices configured")
        if self.growth.get(device.name) == enable:
            return
        if self.started:
            raise RuntimeError("Physical devices cannot be modified after being initialized")
        self.growth[device.name] = enable

    def get_memory_growth(self, device: FakeDevice) -> bool:
        return self.growth.get(device.name, False)


#: ``tf.sysconfig.get_build_info()["cuda_compute_capabilities"]`` of the TensorFlow 2.21.0
#: wheel from PyPI, as it prints (read on a CPU machine: the wheel is the CUDA build).
TF_2_21_CAPABILITIES = ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]


class FakeTF:
    """The ``tf`` module as the device helpers use it."""

    __version__ = "2.21.0"

    def __init__(self, gpus: int, card: str = "T4") -> None:
        self.config = FakeTFConfig(gpus, card)
        build = {"is_cuda_build": True, "cuda_compute_capabilities": TF_2_21_CAPABILITIES}
        self.sysconfig = SimpleNamespace(get_build_info=lambda: build)


@dataclass(frozen=True)
class FakeContext:
    device_type: str
    device_id: int

    def __str__(self) -> str:
        return f"{self.device_type}({self.device_id})"


class FakeMX:
    """``mxnet`` as far as context choice goes: its own GPU count and its contexts."""

    def __init__(self, gpus: int) -> None:
        self.context = self
        self._gpus = gpus

    def num_gpus(self) -> int:
        return self._gpus

    def gpu(self, i: int = 0) -> FakeContext:
        return FakeContext("gpu", i)

    def cpu(self, i: int = 0) -> FakeContext:
        return FakeContext("cpu", i)


def fake_nvidia_smi(card: str, gpus: int, extra_mb: int = 0, mig: tuple[str, ...] = ()) -> Any:
    """A ``subprocess.run`` that answers ``nvidia-smi --query-gpu=...`` and ``-L`` like the driver.

    Card ``i`` reports ``i * extra_mb`` MiB more than the model's memory (0: all alike).
    ``mig`` puts every card in MIG mode with slices of these profiles (``"1g.10gb"``):
    ``-L`` lists them under their card, and ``memory.total`` still reports the whole card.
    """
    if card in RECORDED_CARDS and gpus == 1 and not (extra_mb or mig):
        return recorded_nvidia_smi(card)
    name, memory, capability = ALL_CARDS[card]
    values = {"index": lambda i: str(i), "uuid": lambda i: f"GPU-{i:08d}-aaaa-bbbb-cccc",
              "name": lambda i: name, "memory.total": lambda i: f"{memory + i * extra_mb} MiB",
              "memory.used": lambda i: "0 MiB", "utilization.gpu": lambda i: "0 %",
              "compute_cap": lambda i: f"{capability[0]}.{capability[1]}"}

    def run(command: list[str], **_kwargs: Any) -> subprocess.CompletedProcess:
        if command[1] == "-L":  # the format of nvidia-smi -L, MIG slices indented
            lines = []
            for i in range(gpus):
                lines.append(f"GPU {i}: {name} (UUID: {values['uuid'](i)})")
                lines += [f"  MIG {profile:<12}Device {j:>2}: (UUID: {mig_uuid(i, j)})"
                          for j, profile in enumerate(mig)]
        else:
            fields = command[1].split("=", 1)[1].split(",")
            lines = [", ".join(values[f](i) for f in fields) for i in range(gpus)]
        return subprocess.CompletedProcess(command, 0, "\n".join(lines) + "\n", "")

    return run


def mig_uuid(card: int, slice_: int) -> str:
    """The ``MIG-`` UUID :func:`fake_nvidia_smi` gives slice ``slice_`` of card ``card``."""
    return f"MIG-{card:04d}{slice_:04d}-dddd-eeee-ffff-{card * 8 + slice_:012d}"


#: Outputs of ``nvidia-smi`` recorded on real cards (gpu_reference/README.md says where).
REFERENCE = Path(__file__).with_name("gpu_reference")
#: The fields of a recorded ``--query-gpu`` answer (``h200-smi-query.txt``), in its order.
RECORDED_FIELDS = ("index", "uuid", "name", "memory.total", "memory.used", "utilization.gpu",
                   "compute_cap")


def recorded(card: str, what: str) -> str:
    """The recorded output ``what`` (``L``, ``q``, ``query``; ``""`` for plain ``nvidia-smi``)."""
    return (REFERENCE / f"{card.lower()}-smi{'-' + what if what else ''}.txt").read_text()


def recorded_nvidia_smi(card: str = "H200") -> Any:
    """A ``subprocess.run`` that answers ``nvidia-smi`` as the recorded card did: ``-L`` and
    ``-q`` word for word, ``--query-gpu`` with any of the recorded fields, in the order asked;
    other programs (``uname -p`` for ``platform``) run for real."""
    rows = [dict(zip(RECORDED_FIELDS, (p.strip() for p in line.split(",")), strict=True))
            for line in recorded(card, "query").splitlines() if line.strip()]
    real = subprocess.run

    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        if not str(command[0]).endswith("nvidia-smi"):
            return real(command, **kwargs)
        args = command[1:]
        if args in (["-L"], ["-q"]):
            out = recorded(card, args[0][1:])
        elif args[0].startswith("--query-gpu=") and args[1:] == ["--format=csv,noheader"]:
            fields = args[0].split("=", 1)[1].split(",")
            out = "".join(", ".join(row[f] for f in fields) + "\n" for row in rows)
        else:
            raise AssertionError(f"nvidia-smi {' '.join(args)} was not recorded on the {card}")
        return subprocess.CompletedProcess(command, 0, out, "")

    return run
