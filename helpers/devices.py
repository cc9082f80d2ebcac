"""Devices: how TensorFlow names them, what this machine has, and the devices a lesson needs.

* Names: TensorFlow accepts ``/cpu:0``, ``CPU:0``, ``/device:CPU:0`` and the long form
  ``/job:localhost/replica:0/task:0/device:CPU:0`` that logs print (a device's place in a
  cluster as well as its type and index); :func:`parse_device` reads them all.
* Inventory: each framework is asked about its own devices (MXNet's CPU wheel sees no GPU
  where TensorFlow sees four). Listing TensorFlow's *logical* devices starts its runtime,
  after which logical CPUs and virtual GPUs can no longer be configured, so
  :func:`gpu_cards` describes the cards before that: compute capability from TensorFlow's
  device details, memory from ``nvidia-smi`` (or a MIG slice's own).
* Logical devices: a lesson about two devices must run on a laptop with no GPU.
  :func:`requirements_banner` picks real GPUs when there are enough, else virtual GPUs or
  logical CPUs, configures them before the runtime starts, and prints what was simulated.
  GPU memory is allocated on demand in every process (``set_memory_growth`` and
  ``TF_FORCE_GPU_ALLOW_GROWTH``, which virtual GPUs and child processes honour too), so
  MXNet and a cluster's other tasks find room; each virtual GPU is capped at what the
  lesson needs or an equal share, after a reserve for CUDA's context and workspaces.
  TensorFlow numbers virtual GPUs card by card; the plan takes the cards in turn, so the
  first k devices span as many cards as possible.
* Strategies: several ``MirroredStrategy`` objects over different device counts would
  share collective keys and abort ("is joining a group with size 2, but that group has
  size 4"); :func:`mirrored_over` gives each its own key range, as TensorFlow's tests do.
* MXNet contexts: every ``mx.cpu(i)`` is the same host memory and cores (with its own
  engine thread), and MXNet cannot split a GPU, so :class:`ContextPair` says when the
  second context is a stand-in. Two CPU contexts multiplying at once through MXNet's
  bundled OpenBLAS deadlock (its OpenMP teams collide); such a pair multiplies through
  oneDNN (``nd.FullyConnected``) instead.
"""

from __future__ import annotations

import os
import re
import shutil  # noqa: F401  (tests fake nvidia-smi through inventory.shutil and .subprocess)
import subprocess  # noqa: F401
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from helpers.frameworks import import_mxnet, import_tensorflow, mxnet_import_settings, mxnet_route
from helpers.machine import cpu_cores, query_nvidia_smi, require_int, share_jit_cache, smi_output
from helpers.measure import mxnet_omp_threads
from helpers.output import Table

KNOWN_TYPES = ("CPU", "GPU", "TPU")

_FORMS = (
    "'/cpu:0', '/gpu:1', 'GPU:0', '/device:GPU:0' or "
    "'/job:worker/replica:0/task:1/device:CPU:0'"
)
_PART = re.compile(r"^(job|replica|task|device):(.+)$")
_TYPE_INDEX = re.compile(r"^([A-Za-z_]+):(\d+)$")


@dataclass(frozen=True)
class DeviceName:
    """A device string taken apart: where in the cluster, what kind, which one."""

    device_type: str
    index: int
    job: str | None = None
    replica: int | None = None
    task: int | None = None

    @property
    def short(self) -> str:
        """The short form, e.g. ``/GPU:1``."""
        return f"/{self.device_type}:{self.index}"

    @property
    def full(self) -> str:
        """The fully qualified form TensorFlow logs, defaulting to a local process."""
        job = self.job or "localhost"
        return (
            f"/job:{job}/replica:{self.replica or 0}/task:{self.task or 0}"
            f"/device:{self.device_type}:{self.index}"
        )


def _bad(spec: str, why: str) -> ValueError:
    return ValueError(f"{spec!r} is not a device string ({why}); use a form like {_FORMS}")


def _type_and_index(spec: str, text: str) -> tuple[str, int]:
    match = _TYPE_INDEX.match(text)
    if not match:
        raise _bad(spec, f"expected TYPE:INDEX, got {text!r}")
    device_type = match.group(1).upper()
    if device_type not in KNOWN_TYPES:
        raise _bad(spec, f"unknown device type {match.group(1)!r}, known: {', '.join(KNOWN_TYPES)}")
    return device_type, int(match.group(2))


def parse_device(spec: str) -> DeviceName:
    """Parse any TensorFlow device spelling; raise ValueError with the accepted forms."""
    if not isinstance(spec, str) or not spec.strip():
        raise _bad(str(spec), "it is empty")
    text = spec.strip()
    if not text.startswith("/"):
        device_type, index = _type_and_index(spec, text)
        return DeviceName(device_type, index)
    parts: dict[str, str] = {}
    pieces = text[1:].split("/")
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        part = _PART.match(piece)
        if part is None:
            if len(pieces) == 1:  # '/cpu:0'
                device_type, index = _type_and_index(spec, piece)
                return DeviceName(device_type, index)
            raise _bad(spec, f"unknown part {piece!r}")
        key, value = part.groups()
        if key in parts:
            raise _bad(spec, f"{key!r} appears twice")
        parts[key] = value
        i += 1
    if "device" not in parts:
        raise _bad(spec, "it names no device")
    device_type, index = _type_and_index(spec, parts["device"])
    numbers = {}
    for key in ("replica", "task"):
        if key in parts:
            if not parts[key].isdigit():
                raise _bad(spec, f"{key} must be a number, got {parts[key]!r}")
            numbers[key] = int(parts[key])
    return DeviceName(
        device_type, index, parts.get("job"), numbers.get("replica"), numbers.get("task")
    )


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


_RESTART = "restart the kernel (Kernel > Restart) and run the notebook from the top"
#: The most devices a lesson may ask for: logical devices share the same cores or GPU.
MAX_LOGICAL_DEVICES = 64
_TOO_MANY = "logical devices share the same hardware; a lesson needs a few"
#: The environment variable TensorFlow's GPU allocator reads: grow on demand.
GROWTH_ENV = "TF_FORCE_GPU_ALLOW_GROWTH"
#: The cap of a virtual GPU when neither the lesson nor nvidia-smi says anything better.
UNKNOWN_CARD_SHARE_MB = 2048


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


def reserve_mb(card_mb: int) -> int:
    """Memory of a card kept outside TensorFlow's virtual GPUs (CUDA, workspaces, MXNet)."""
    return max(1536, card_mb // 10)


@dataclass(frozen=True)
class MemoryBudget:
    """What each virtual GPU on a card may hold, and whether the lesson's need fits."""

    per_device_mb: int
    card_mb: int | None  # the card's total memory, None when unknown
    needed_mb: int | None  # what the lesson asked for per device, None for a fair share
    fits: bool | None  # None when the card's memory is unknown

    def describe(self, per_card: int) -> str:
        if self.card_mb is None:
            return (f"Each virtual GPU is capped at {self.per_device_mb} MiB (nvidia-smi did "
                    "not report the card's memory), allocated as needed.")
        text = (f"Each virtual GPU may use up to {self.per_device_mb} MiB of its card's "
                f"{self.card_mb} MiB, allocated as needed; {reserve_mb(self.card_mb)} MiB "
                "stay outside TensorFlow for CUDA itself and MXNet.")
        if self.fits is False:
            text += (f" WARNING: the lesson needs {self.needed_mb} MiB per device, more than "
                     f"{per_card} virtual GPUs on this card can have: expect out-of-memory "
                     "errors, or choose a smaller profile (profile = \"laptop\").")
        return text


def virtual_gpu_budget(card_mb: int | None, per_card: int,
                       needed_mb: int | None = None) -> MemoryBudget:
    """The memory cap of each of ``per_card`` virtual GPUs on a card of ``card_mb`` MiB.

    The lesson's need when it states one and it fits, else an equal share of what the
    card holds after :func:`reserve_mb`.
    """
    require_int("virtual GPUs per card", per_card, 1)
    if needed_mb is not None:
        require_int("the memory a lesson needs per device (MiB)", needed_mb, 1)
    if card_mb is None:
        return MemoryBudget(needed_mb or UNKNOWN_CARD_SHARE_MB, None, needed_mb, None)
    share = (card_mb - reserve_mb(card_mb)) // per_card
    if needed_mb is None:
        return MemoryBudget(share, card_mb, None, True)
    return MemoryBudget(min(needed_mb, share), card_mb, needed_mb, needed_mb <= share)


def spread_over_cards(needed: int, cards: int) -> tuple[list[int], list[tuple[str, int]]]:
    """How many virtual GPUs each card gets, and the devices in the order a plan uses them.

    Returns ``(counts per card, [(TensorFlow name, card), ...])``: TensorFlow numbers
    each card's virtual GPUs one after the other; the list takes the cards in turn.
    """
    require_int("devices", needed, 1)
    require_int("cards", cards, 1)
    counts = [needed // cards + (c < needed % cards) for c in range(cards)]
    first = [sum(counts[:c]) for c in range(cards)]
    order = [(f"/GPU:{first[c] + j}", c) for j in range(max(counts)) for c in range(cards)
             if j < counts[c]]
    return counts, order


def use_virtual_gpus(n: int, memory_mb: int | None = None) -> list[str]:
    """Split every physical GPU into ``n`` virtual GPUs; return their names in TF's order.

    Each gets ``memory_mb`` MiB, or an equal share of its card when None
    (:func:`virtual_gpu_budget`).
    """
    require_int("the number of virtual GPUs per physical GPU", n, 1)
    if memory_mb is not None:
        require_int("memory_mb", memory_mb, 1)
    tf = import_tensorflow()
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        raise RuntimeError(
            "this machine has no GPU TensorFlow can use, so it cannot be split; "
            "use use_logical_cpus(n) instead"
        )
    budget = virtual_gpu_budget(_smallest_card_mb(gpu_cards()), n, memory_mb)
    _make_virtual_gpus(tf, gpus, [n] * len(gpus), budget.per_device_mb)
    return [f"/GPU:{i}" for i in range(n * len(gpus))]


def _make_virtual_gpus(tf: Any, gpus: list[Any], counts: list[int], memory_mb: int) -> None:
    os.environ.setdefault(GROWTH_ENV, "true")
    for gpu, count in zip(gpus, counts, strict=True):
        config = [tf.config.LogicalDeviceConfiguration(memory_limit=memory_mb)
                  for _ in range(count)]
        _configure("GPU", gpu, config)


def _smallest_card_mb(cards: tuple[GPUCard, ...]) -> int | None:
    known = [c.memory_mb for c in cards]
    return None if not known or None in known else min(known)  # type: ignore[type-var]


def _grow_on_demand(tf: Any, gpus: list[Any]) -> None:
    """Memory growth on every real GPU (see the module docstring)."""
    os.environ.setdefault(GROWTH_ENV, "true")
    for gpu in gpus:
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except ValueError:  # virtual GPUs were configured on it: the variable applies there
            continue
        except RuntimeError:
            if not tf.config.experimental.get_memory_growth(gpu):
                raise RuntimeError(
                    "TensorFlow's runtime already started without memory growth, so it holds "
                    f"nearly all GPU memory: {_RESTART}") from None


@dataclass(frozen=True)
class DevicePlan:
    """Which devices a lesson will use, and whether they are real or simulated."""

    needed: int
    kind: str  # "gpu", "virtual-gpu" or "logical-cpu"
    devices: tuple[str, ...]  # in the order the lesson should use them
    physical_gpus: int  # GPUs TensorFlow can use
    cores: int
    cards: tuple[int, ...] = ()  # the physical GPU each device is on (GPU plans)
    gpus: tuple[GPUCard, ...] = ()  # the physical GPUs, as described by gpu_cards()
    memory: MemoryBudget | None = None  # the cap of each virtual GPU (virtual-gpu plans)
    mxnet_line: str = ""  # how MXNet runs on this GPU machine ('' without GPUs)
    jit_line: str = ""  # GPUs whose kernels TensorFlow JIT-compiles (share_jit_cache)

    @property
    def simulated(self) -> bool:
        """True when the devices are carved out of fewer physical ones."""
        return self.kind == "virtual-gpu" or (self.kind == "logical-cpu" and self.needed > 1)

    def distinct_cards(self, k: int) -> int:
        """How many different physical devices the first ``k`` devices run on."""
        require_int("k", k, 1, len(self.devices))
        return len(set(self.cards[:k])) if self.cards else 1

    def mxnet_contexts(self, mx: Any) -> list[Any]:
        """``needed`` distinct MXNet contexts: GPUs when MXNet itself sees enough, else CPUs.

        MXNet cannot split a GPU, and two copies of one context would be one device to
        Gluon, so with fewer MXNet GPUs than needed every context is a CPU context
        (``cpu(i)`` are stand-ins that share the host: :meth:`describe_mxnet_contexts`).
        """
        if mx.context.num_gpus() >= self.needed:
            return [mx.gpu(i) for i in range(self.needed)]
        return [mx.cpu(i) for i in range(self.needed)]

    def describe_mxnet_contexts(self, mx: Any) -> str:
        """One line saying what :meth:`mxnet_contexts` gives and whether it is simulated."""
        gpus = mx.context.num_gpus()
        names = ", ".join(str(c) for c in self.mxnet_contexts(mx))
        if gpus >= self.needed:
            return f"MXNet: {names}, {self.needed} real GPU(s)"
        seen = "no GPU" if gpus == 0 else f"only {gpus} GPU(s) and cannot split one"
        if self.needed == 1:
            return f"MXNet: {names} (MXNet sees {seen})"
        return (f"MXNet: {names}, SIMULATED: MXNet sees {seen}, so these CPU contexts share "
                "the host's memory and cores")

    def _gpu_text(self) -> str:
        if not self.gpus:
            return f"{self.physical_gpus} GPU(s)"
        names = sorted({c.describe() for c in self.gpus})
        each = names[0] if len(names) == 1 else "; ".join(names)
        return f"{self.physical_gpus} GPU(s) ({each})"

    def _how(self, names: str) -> str:
        if self.kind == "gpu":
            return (f"using {self.needed} real GPU(s): {names}. TensorFlow allocates their "
                    "memory as it needs it (memory growth on), so MXNet and other processes "
                    "can share the cards")
        if self.kind == "virtual-gpu" and self.physical_gpus == 1:
            return (f"SIMULATED: using {self.needed} virtual GPUs ({names}) carved out of "
                    f"{self.physical_gpus} physical GPU(s); they share its compute, so splitting "
                    "work across them cannot run faster")
        if self.kind == "virtual-gpu":
            placed = ", ".join(f"{d} (card {c})" for d, c in zip(self.devices, self.cards,
                                                                 strict=True))
            real = self.physical_gpus
            return (f"SIMULATED: using {self.needed} virtual GPUs carved out of {real} physical "
                    f"GPUs, taken across the cards in turn: {placed}. The first {real} are on "
                    f"different cards; beyond {real}, devices share cards, so splitting work "
                    f"over more than {real} cannot run faster than over {real}")
        if self.needed == 1:
            return f"using the CPU ({names})"
        return (f"SIMULATED: using {self.needed} logical CPUs ({names}); they share the same "
                f"{self.cores} core(s), so splitting work across them cannot run faster")

    def banner(self) -> str:
        have = f"this machine has {self._gpu_text()} and {self.cores} CPU core(s)"
        text = (f"This lesson needs {self.needed} device(s); {have}.\n"
                f"{self._how(', '.join(self.devices))}.")
        if self.memory is not None:
            text += "\n" + self.memory.describe(max(self.cards.count(c) for c in self.cards))
        if self.mxnet_line:
            text += "\n" + self.mxnet_line + "."
        if self.jit_line:
            text += "\n" + self.jit_line + "."
        width = min(max(len(line) for line in text.splitlines()), 100)
        return "\n".join(["=" * width, text, "=" * width])


def plan_devices(needed: int, gpu_memory_mb: int | None = None) -> DevicePlan:
    """Configure ``needed`` devices (real GPUs, else virtual GPUs, else logical CPUs).

    ``gpu_memory_mb`` is what the lesson needs on each device if it runs on virtual
    GPUs; None gives each an equal share of its card. On GPUs, memory growth is turned
    on first (see the module docstring).
    """
    require_int("the number of devices a lesson needs", needed, 1, MAX_LOGICAL_DEVICES,
                _TOO_MANY)
    tf = import_tensorflow()
    physical = tf.config.list_physical_devices("GPU")
    gpus = len(physical)
    if gpus == 0:
        return DevicePlan(needed, "logical-cpu", tuple(use_logical_cpus(needed)), 0, cpu_cores())
    cards = gpu_cards()
    mxnet_line, jit_line = mxnet_route().summary(), share_jit_cache(tf)
    if gpus >= needed:
        _grow_on_demand(tf, physical)
        return DevicePlan(needed, "gpu", tuple(f"/GPU:{i}" for i in range(needed)), gpus,
                          cpu_cores(), cards=tuple(range(needed)), gpus=cards,
                          mxnet_line=mxnet_line, jit_line=jit_line)
    counts, order = spread_over_cards(needed, gpus)
    budget = virtual_gpu_budget(_smallest_card_mb(cards), max(counts), gpu_memory_mb)
    _make_virtual_gpus(tf, physical, counts, budget.per_device_mb)
    return DevicePlan(needed, "virtual-gpu", tuple(name for name, _ in order), gpus,
                      cpu_cores(), cards=tuple(card for _, card in order), gpus=cards,
                      memory=budget, mxnet_line=mxnet_line, jit_line=jit_line)


def requirements_banner(needed: int, gpu_memory_mb: int | None = None) -> DevicePlan:
    """Configure the devices a lesson needs, print what is real and what is simulated."""
    plan = plan_devices(needed, gpu_memory_mb)
    print(plan.banner())
    return plan


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


PURPOSES = ("compute", "transfer")

@dataclass(frozen=True)
class ContextPair:
    """Two contexts, what kind of machine gave them, and what that means for timings."""

    first: Any
    second: Any
    kind: str  # "two-gpus", "one-gpu" (both gpu(0)), "host-and-gpu" or "cpu-only"
    gpus: int
    omp_threads: int = 1  # OpenMP threads MXNet gives one CPU operator in this process

    @property
    def contexts(self) -> list[Any]:
        return [self.first, self.second]

    @property
    def same_memory(self) -> bool:
        """True when both contexts address the same memory (two CPU contexts, or one GPU twice)."""
        return self.first.device_type == self.second.device_type and (
            self.first.device_type == "cpu" or self.first.device_id == self.second.device_id)

    @property
    def simulated(self) -> bool:
        """True unless the two contexts are two different physical devices."""
        return self.kind in ("one-gpu", "cpu-only")

    @property
    def blas_deadlock_risk(self) -> bool:
        """True when ``nd.dot`` on both contexts at once could deadlock MXNet's OpenBLAS."""
        both_cpu = self.first.device_type == "cpu" and self.second.device_type == "cpu"
        return both_cpu and self.omp_threads > 1

    @property
    def matmul(self) -> Callable[[Any, Any], Any]:
        """The matrix product to run on both contexts at the same time (see the module
        docstring): ``nd.dot``, or oneDNN's product when ``nd.dot`` could deadlock."""
        nd = import_mxnet().nd
        if not self.blas_deadlock_risk:
            return nd.dot

        def onednn_dot(a: Any, b: Any) -> Any:
            """``a @ b`` as a fully connected layer: ``FullyConnected(x, w) = x @ w.T``."""
            return nd.FullyConnected(a, b.T, no_bias=True, num_hidden=b.shape[1])

        return onednn_dot

    def describe(self) -> str:
        names = f"{self.first} and {self.second}"
        if self.kind == "two-gpus":
            return f"{names}: two real GPUs, each with its own memory and compute"
        if self.kind == "host-and-gpu":
            return f"{names}: the host and the GPU, separate memories joined by PCIe/NVLink"
        if self.kind == "one-gpu":
            return (f"{names}: SIMULATED, the same single GPU twice (MXNet cannot split a "
                    "GPU); no speed-up is possible")
        return (f"{names}: SIMULATED, MXNet sees no GPU; both are the host's memory and cores. "
                "MXNet gives each CPU context its own engine thread, but the cores are shared")


def context_pair(mx: Any, purpose: str = "compute") -> ContextPair:
    """Two contexts for a lesson: ``compute`` (run work on two devices) or ``transfer``.

    ``compute``: gpu(0), gpu(1) with two GPUs; gpu(0) twice with one; cpu(0), cpu(1)
    without. ``transfer`` (copies between memories): gpu(0), gpu(1) with two GPUs;
    cpu(0), gpu(0) with one, the copy that matters most there; cpu(0), cpu(1) without.
    Run products on both at once with the pair's :attr:`~ContextPair.matmul`.
    """
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {PURPOSES}, not {purpose!r}")
    gpus = mx.context.num_gpus()
    threads = mxnet_omp_threads(mxnet_import_settings().get("read", {}))
    if gpus >= 2:
        return ContextPair(mx.gpu(0), mx.gpu(1), "two-gpus", gpus, threads)
    if gpus == 1 and purpose == "compute":
        return ContextPair(mx.gpu(0), mx.gpu(0), "one-gpu", gpus, threads)
    if gpus == 1:
        return ContextPair(mx.cpu(0), mx.gpu(0), "host-and-gpu", gpus, threads)
    return ContextPair(mx.cpu(0), mx.cpu(1), "cpu-only", gpus, threads)
