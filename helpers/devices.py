"""Devices: their names, what this machine has, and as many as a lesson needs (notebooks 01-05).

Each framework counts its own devices (MXNet's CPU wheel sees no GPU where TensorFlow does). A
lesson about two devices must run on a laptop too: TensorFlow splits a CPU into *logical* CPUs and a
GPU into *virtual* GPUs, only before its runtime starts, so :func:`requirements_banner` configures
them first and says what is simulated. TensorFlow takes nearly a whole card unless told to grow on
demand (``set_memory_growth``, and ``TF_FORCE_GPU_ALLOW_GROWTH`` for virtual GPUs and children); a
virtual GPU is capped at the lesson's need or a fair share of its card. A plan takes the cards in
turn (TensorFlow numbers virtual GPUs card by card), so its first k devices span most cards."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from helpers.frameworks import import_mxnet, import_tensorflow, mxnet_import_settings, mxnet_route
from helpers.machine import cpu_cores, query_nvidia_smi, require_int, share_jit_cache, smi_output
from helpers.measure import mxnet_omp_threads
from helpers.output import Table

# -- names -------------------------------------------------------------------------------------
KNOWN_TYPES = ("CPU", "GPU", "TPU")
_FORMS = ("'/cpu:0', '/gpu:1', 'GPU:0', '/device:GPU:0' or "
          "'/job:worker/replica:0/task:1/device:CPU:0'")
#: [/job:J][/replica:R][/task:T] then [/][device:]TYPE:INDEX, as TensorFlow reads them
_DEVICE = re.compile(r"(?:/job:(?P<job>\w+))?(?:/replica:(?P<replica>\d+))?(?:/task:(?P<task>\d+))?"
                     r"(?:^|/)(?:device:)?(?P<type>(?!job:|replica:|task:)[A-Za-z_]+):(?P<index>\d+)")


@dataclass(frozen=True)
class DeviceName:
    """A device string taken apart: where in the cluster, what kind, which one."""
    device_type: str
    index: int
    job: str | None = None
    replica: int | None = None
    task: int | None = None

    short = property(lambda self: f"/{self.device_type}:{self.index}")
    full = property(lambda self: (  # the form TensorFlow logs
        f"/job:{self.job or 'localhost'}/replica:{self.replica or 0}/task:{self.task or 0}"
        f"/device:{self.device_type}:{self.index}"))


def parse_device(spec: str) -> DeviceName:
    """Any TensorFlow device spelling, taken apart; ValueError shows the accepted forms."""
    text = spec.strip() if isinstance(spec, str) else ""
    match = _DEVICE.fullmatch(text)
    if match and match["type"].upper() in KNOWN_TYPES:
        return DeviceName(match["type"].upper(), int(match["index"]), match["job"], *(
            None if match[k] is None else int(match[k]) for k in ("replica", "task")))
    why = ("it is empty" if not text else
           f"unknown device type {match['type']!r}, known: {', '.join(KNOWN_TYPES)}" if match
           else "expected TYPE:INDEX, optionally after /job:NAME/replica:N/task:N")
    raise ValueError(f"{spec!r} is not a device string ({why}); use a form like {_FORMS}")


# -- what this machine has ---------------------------------------------------------------------
FRAMEWORKS = ("tensorflow", "mxnet")


def physical_gpu_count() -> int:
    """GPUs TensorFlow can use (looking does not initialise the runtime)."""
    return len(import_tensorflow().config.list_physical_devices("GPU"))


def list_devices(frameworks: tuple[str, ...] = FRAMEWORKS) -> Table:
    """TensorFlow's physical and logical devices and MXNet's contexts (listing logical
    devices starts TensorFlow's runtime: call :func:`requirements_banner` first)."""
    if isinstance(frameworks, str) or not set(frameworks) <= set(FRAMEWORKS):
        raise ValueError(f"frameworks is a tuple of {FRAMEWORKS}, not {frameworks!r}")
    table = Table(["framework", "level", "name", "kind", "memory"])
    if "tensorflow" in frameworks:
        tf = import_tensorflow()
        for level in ("physical", "logical"):  # memory: nvidia-smi's, or the banner's cap
            for dev in getattr(tf.config, f"list_{level}_devices")():
                table.append(["tensorflow", level, dev.name, dev.device_type, None])
    if "mxnet" in frameworks:
        mx = import_mxnet()
        table.append(["mxnet", "context", "cpu(0)", "CPU", "all host RAM, all cores"])
        for i in range(mx.context.num_gpus()):
            total = mx.context.gpu_memory_info(i)[1]
            table.append(["mxnet", "context", f"gpu({i})", "GPU", f"{total / 2**30:.1f} GiB"])
    return table


def nvidia_smi() -> Table | None:
    rows = query_nvidia_smi("index,name,memory.total,memory.used,utilization.gpu")
    return None if rows is None else Table(
        ["index", "name", "memory total", "memory used", "utilisation"], rows)


@dataclass(frozen=True)
class GPUCard:
    """One GPU TensorFlow can use (index after ``CUDA_VISIBLE_DEVICES``), memory in MiB."""
    index: int
    name: str
    memory_mb: int | None
    capability: tuple[int, int] | None  # e.g. (7, 5) for a T4

    def describe(self) -> str:
        memory = "memory unknown" if self.memory_mb is None else f"{self.memory_mb / 1024:.0f} GiB"
        cap = ", compute capability {}.{}".format(*self.capability) if self.capability else ""
        return f"{self.name} ({memory}{cap})"


def _smi_rows() -> list[list[str]]:
    """``index,uuid,name,memory.total`` per card, a card in MIG mode replaced by its slices
    (``nvidia-smi -L``): ``memory.total`` reports the whole card, a slice's memory is in its
    profile's name, in GB (10^9 bytes, a little less than it holds)."""
    slices: dict[str, list[list[str]]] = {}
    card = None
    for line in (smi_output("-L") or "").splitlines():
        if gpu := re.match(r"GPU (\d+): (.+) \(UUID: (\S+)\)", line):
            card = gpu.groups()
        elif (mig := re.match(r"\s+MIG (\S+)\s+Device\s+\d+: \(UUID: (\S+)\)", line)) and card \
                and (gb := re.search(r"(\d+)gb", mig[1])):
            slices.setdefault(card[2], []).append(
                [card[0], mig[2], f"{card[1]} MIG {mig[1]}", f"{int(gb[1]) * 10**9 // 2**20} MiB"])
    rows = query_nvidia_smi("index,uuid,name,memory.total") or []
    return [part for row in rows for part in slices.get(row[1], [row])]


def gpu_cards() -> tuple[GPUCard, ...]:
    """The GPUs TensorFlow can use, described before its runtime starts: the capability from
    TensorFlow, the memory from nvidia-smi, which numbers every card where CUDA numbers those
    ``CUDA_VISIBLE_DEVICES`` names (indices, ``GPU-``/``MIG-`` UUIDs or prefixes), in order."""
    tf, rows, visible = import_tensorflow(), _smi_rows(), os.environ.get("CUDA_VISIBLE_DEVICES")
    tokens = [t.strip() for t in (visible or "").split(",") if t.strip()]
    cards = []
    for i, device in enumerate(tf.config.list_physical_devices("GPU")):
        details = tf.config.experimental.get_device_details(device) or {}
        token = tokens[i] if i < len(tokens) else "-"  # "-" names no card
        row = (rows[i] if i < len(rows) else None) if visible is None else next(
            (r for r in rows if token in r[:2] or len(token) > 6 and r[1].startswith(token)), None)
        mig = row[2] if row and row[1].startswith("MIG-") else None
        memory = (row[3].split() or [""])[0] if row and len(row) > 3 else ""
        name = mig or details.get("device_name") or (row[2] if row else f"GPU {i}")
        cards.append(GPUCard(i, str(name), int(memory) if memory.isdigit() else None,
                             tuple(cap) if (cap := details.get("compute_capability")) else None))
    return tuple(cards)


# -- as many devices as a lesson needs ---------------------------------------------------------
_RESTART = "restart the kernel (Kernel > Restart) and run the notebook from the top"
MAX_LOGICAL_DEVICES = 64
_TOO_MANY = "logical devices share the same hardware; a lesson needs a few"
GROWTH_ENV = "TF_FORCE_GPU_ALLOW_GROWTH"  # TensorFlow's GPU allocator reads it: grow on demand
UNKNOWN_CARD_SHARE_MB = 2048  # a virtual GPU's cap when neither lesson nor nvidia-smi says more


def _configure(device_type: str, physical: Any, configs: list[Any]) -> None:
    tf = import_tensorflow()
    current = tf.config.get_logical_device_configuration(physical)
    if current is not None and len(current) == len(configs):
        return
    try:
        tf.config.set_logical_device_configuration(physical, configs)
    except RuntimeError:
        if (existing := len(tf.config.list_logical_devices(device_type))) != len(configs):
            raise RuntimeError(f"TensorFlow's runtime already started with {existing} logical "
                               f"{device_type}(s); {len(configs)} can only be made before the "
                               f"first TensorFlow op: {_RESTART}") from None


def use_logical_cpus(n: int) -> list[str]:
    """Split the CPU into ``n`` logical CPUs; the same ``n`` again does nothing."""
    require_int("the number of logical CPUs", n, 1, MAX_LOGICAL_DEVICES, _TOO_MANY)
    tf = import_tensorflow()
    _configure("CPU", tf.config.list_physical_devices("CPU")[0],
               [tf.config.LogicalDeviceConfiguration() for _ in range(n)])
    return [f"/CPU:{i}" for i in range(n)]


def reserve_mb(card_mb: int) -> int:
    """Memory of a card kept outside TensorFlow's virtual GPUs (CUDA, workspaces, MXNet)."""
    return max(1536, card_mb // 10)


@dataclass(frozen=True)
class MemoryBudget:
    """What each virtual GPU on a card may hold, and whether the lesson's need fits."""
    per_device_mb: int
    card_mb: int | None  # None when nvidia-smi did not say
    needed_mb: int | None  # the lesson's need per device, None for a fair share
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
    """The cap of each of ``per_card`` virtual GPUs: the need if it fits, else a fair share."""
    if card_mb is None:
        return MemoryBudget(needed_mb or UNKNOWN_CARD_SHARE_MB, None, needed_mb, None)
    share = (card_mb - reserve_mb(card_mb)) // per_card
    need = share if needed_mb is None else needed_mb
    return MemoryBudget(min(need, share), card_mb, needed_mb, need <= share)


def _grow_on_demand(tf: Any, gpus: list[Any]) -> None:
    os.environ.setdefault(GROWTH_ENV, "true")
    for gpu in gpus:
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except ValueError:  # virtual GPUs on it: the variable applies there
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
    physical_gpus: int
    cores: int
    cards: tuple[int, ...] = ()  # the physical GPU each device is on (GPU plans)
    gpus: tuple[GPUCard, ...] = ()
    memory: MemoryBudget | None = None  # the cap of each virtual GPU (virtual-gpu plans)
    mxnet_line: str = ""  # how MXNet runs on this GPU machine ('' without GPUs)
    jit_line: str = ""  # GPUs whose kernels TensorFlow JIT-compiles (share_jit_cache)

    simulated = property(lambda self: self.kind == "virtual-gpu" or (
        self.kind == "logical-cpu" and self.needed > 1))

    def distinct_cards(self, k: int) -> int:
        """How many different physical devices the first ``k`` devices run on."""
        return len(set(self.cards[:k])) if self.cards else 1

    def mxnet_contexts(self, mx: Any) -> list[Any]:
        """``needed`` distinct contexts: GPUs if MXNet itself sees enough, else CPUs (MXNet
        cannot split a GPU, and one context twice would be one device to Gluon)."""
        make = mx.gpu if mx.context.num_gpus() >= self.needed else mx.cpu
        return [make(i) for i in range(self.needed)]

    def describe_mxnet_contexts(self, mx: Any) -> str:
        gpus = mx.context.num_gpus()
        names = ", ".join(str(c) for c in self.mxnet_contexts(mx))
        if gpus >= self.needed:
            return f"MXNet: {names}, {self.needed} real GPU(s)"
        seen = "no GPU" if gpus == 0 else f"only {gpus} GPU(s) and cannot split one"
        if self.needed == 1:
            return f"MXNet: {names} (MXNet sees {seen})"
        return (f"MXNet: {names}, SIMULATED: MXNet sees {seen}, so these CPU contexts share "
                "the host's memory and cores")

    def _how(self, names: str) -> str:
        real = self.physical_gpus
        if self.kind == "gpu":
            return (f"using {self.needed} real GPU(s): {names}. TensorFlow allocates their "
                    "memory as it needs it (memory growth on), so MXNet and other processes "
                    "can share the cards")
        if self.kind == "virtual-gpu" and real == 1:
            return (f"SIMULATED: using {self.needed} virtual GPUs ({names}) carved out of "
                    f"{real} physical GPU(s); they share its compute, so splitting work across "
                    "them adds no compute")
        if self.kind == "virtual-gpu":
            placed = ", ".join(map("{} (card {})".format, self.devices, self.cards))
            return (f"SIMULATED: using {self.needed} virtual GPUs carved out of {real} physical "
                    f"GPUs, taken across the cards in turn: {placed}. The first {real} are on "
                    f"different cards; beyond {real}, devices share cards, so splitting work "
                    f"over more than {real} adds no compute to {real}")
        if self.needed == 1:
            return f"using the CPU ({names})"
        return (f"SIMULATED: using {self.needed} logical CPUs ({names}); they share the same "
                f"{self.cores} core(s), so splitting work across them adds no compute")

    def banner(self) -> str:
        gpus = f"{self.physical_gpus} GPU(s)"
        if self.gpus:
            gpus += f" ({'; '.join(sorted({c.describe() for c in self.gpus}))})"
        text = (f"This lesson needs {self.needed} device(s); this machine has {gpus} and "
                f"{self.cores} CPU core(s).\n{self._how(', '.join(self.devices))}.")
        if self.memory is not None:
            text += "\n" + self.memory.describe(max(self.cards.count(c) for c in self.cards))
        text += "".join(f"\n{line}." for line in (self.mxnet_line, self.jit_line) if line)
        width = min(max(len(line) for line in text.splitlines()), 100)
        return "\n".join(["=" * width, text, "=" * width])


def plan_devices(needed: int, gpu_memory_mb: int | None = None) -> DevicePlan:
    """Configure ``needed`` devices: real GPUs, else virtual GPUs, else logical CPUs;
    ``gpu_memory_mb`` is what the lesson needs per virtual GPU (None: a fair share of the card)."""
    require_int("the number of devices a lesson needs", needed, 1, MAX_LOGICAL_DEVICES, _TOO_MANY)
    if gpu_memory_mb is not None:
        require_int("gpu_memory_mb (MiB per device)", gpu_memory_mb, 1)
    tf = import_tensorflow()
    physical = tf.config.list_physical_devices("GPU")
    if not (gpus := len(physical)):
        return DevicePlan(needed, "logical-cpu", tuple(use_logical_cpus(needed)), 0, cpu_cores())
    cards = gpu_cards()
    lines = {"gpus": cards, "mxnet_line": mxnet_route().summary(), "jit_line": share_jit_cache(tf)}
    if gpus >= needed:
        _grow_on_demand(tf, physical)
        return DevicePlan(needed, "gpu", tuple(f"/GPU:{i}" for i in range(needed)), gpus,
                          cpu_cores(), cards=tuple(range(needed)), **lines)
    counts = [needed // gpus + (c < needed % gpus) for c in range(gpus)]
    first = [sum(counts[:c]) for c in range(gpus)]  # TensorFlow numbers card by card
    order = [(f"/GPU:{first[c] + j}", c) for j in range(max(counts)) for c in range(gpus)
             if j < counts[c]]
    known = [c.memory_mb for c in cards]
    smallest = None if not known or None in known else min(known)  # type: ignore[type-var]
    budget = virtual_gpu_budget(smallest, max(counts), gpu_memory_mb)
    os.environ.setdefault(GROWTH_ENV, "true")
    for gpu, count in zip(physical, counts, strict=True):
        _configure("GPU", gpu, [tf.config.LogicalDeviceConfiguration(
            memory_limit=budget.per_device_mb) for _ in range(count)])
    return DevicePlan(needed, "virtual-gpu", tuple(name for name, _ in order), gpus, cpu_cores(),
                      cards=tuple(card for _, card in order), memory=budget, **lines)


def requirements_banner(needed: int, gpu_memory_mb: int | None = None) -> DevicePlan:
    plan = plan_devices(needed, gpu_memory_mb)
    print(plan.banner())
    return plan


# -- one-process tf.distribute strategies --------------------------------------------------------
_KEY_RANGE = 100_000  # collective keys one strategy may use before the next one's start


def _require_existing(tf: Any, names: Sequence[str], what: str) -> None:
    """TensorFlow accepts a strategy over ``/GPU:7`` where there is none and soft-places its
    ops elsewhere (notebook 02), so a replica would not run where it is reported."""
    existing = {parse_device(d.name).short for d in tf.config.list_logical_devices()}
    if missing := [n for n in names if n not in existing]:
        raise ValueError(
            f"{what} {', '.join(missing)}, which this process does not have (its devices: "
            f"{', '.join(sorted(existing))}); TensorFlow would place the work elsewhere. Use "
            "devices that exist (list_devices(), or requirements_banner(n) to make them)")


def mirrored_over(devices: Sequence[str], k: int) -> Any:
    """A ``MirroredStrategy`` over the first ``k`` of ``devices``, with collective keys of its own.

    Every ``MirroredStrategy`` numbers its all-reduce groups from one starting key, so a second one
    over another count joins the first's group and TensorFlow aborts ("is joining a group with size
    2, but that group has size 4"); each here has its own key range, as TensorFlow's tests do."""
    if isinstance(devices, str):
        raise ValueError(f"devices is a list of device strings, not the string {devices!r}")
    names = [parse_device(d).short for d in devices]
    if len(set(names)) != len(names):
        raise ValueError(f"devices must be distinct, got {list(devices)}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(names):
        raise ValueError(
            f"k must be an int between 1 and {len(names)} (the devices given), not {k!r}; "
            "configure more logical devices with requirements_banner(n) at the top")
    tf = import_tensorflow()
    _require_existing(tf, names[:k], "a MirroredStrategy over")
    tf.distribute.MirroredStrategy._collective_key_base += _KEY_RANGE
    return tf.distribute.MirroredStrategy(names[:k])


def replica_devices(strategy: Any) -> list[str]:
    """Replica devices ([] for the default strategy); ValueError for a device this process lacks."""
    tf = import_tensorflow()
    if strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy():
        return []
    devices = [parse_device(d) for d in strategy.extended.worker_devices]
    local = [d.short for d in devices if d.job in (None, "localhost")]
    _require_existing(tf, local, f"this {type(strategy).__name__} has replicas on")
    return [d.short for d in devices]


# -- MXNet contexts ----------------------------------------------------------------------------
PURPOSES = ("compute", "transfer")


@dataclass(frozen=True)
class ContextPair:
    """Two MXNet contexts, what kind of machine gave them, and what that means for timings.

    Every ``mx.cpu(i)`` is the same device (all host memory and cores; each gets its own
    engine thread), and MXNet cannot split a GPU, so with fewer GPUs than two the second
    context is a stand-in. Products on two CPU contexts at once: when both call MXNet's
    bundled OpenBLAS, each with a team of several OpenMP threads, it deadlocks (every time,
    2 threads per operator on 2 cores), so :attr:`matmul` is then oneDNN's product instead."""
    first: Any
    second: Any
    kind: str  # "two-gpus", "one-gpu" (both gpu(0)), "host-and-gpu" or "cpu-only"
    gpus: int
    omp_threads: int = 1  # OpenMP threads MXNet gives one CPU operator in this process

    contexts = property(lambda self: [self.first, self.second])

    same_memory = property(lambda self: self.first.device_type == self.second.device_type and (
        self.first.device_type == "cpu" or self.first.device_id == self.second.device_id))

    simulated = property(lambda self: self.kind in ("one-gpu", "cpu-only"))

    blas_deadlock_risk = property(lambda self: self.omp_threads > 1 and (
        self.first.device_type == self.second.device_type == "cpu"))

    @property
    def matmul(self) -> Callable[[Any, Any], Any]:
        """``nd.dot``, or where it could deadlock oneDNN's ``FullyConnected(a, b.T)``."""
        nd = import_mxnet().nd
        if not self.blas_deadlock_risk:
            return nd.dot

        def onednn_dot(a: Any, b: Any) -> Any:
            return nd.FullyConnected(a, b.T, no_bias=True, num_hidden=b.shape[1])

        return onednn_dot

    def describe(self) -> str:
        return f"{self.first} and {self.second}" + {
            "two-gpus": ": two real GPUs, each with its own memory and compute",
            "host-and-gpu": ": the host and the GPU, separate memories joined by PCIe/NVLink",
            "one-gpu": ": SIMULATED, the same single GPU twice (MXNet cannot split a GPU); no "
                       "speed-up is possible",
            "cpu-only": ": SIMULATED, MXNet sees no GPU; both are the host's memory and cores. "
                        "MXNet gives each CPU context its own engine thread, but the cores are "
                        "shared"}[self.kind]


def context_pair(mx: Any, purpose: str = "compute") -> ContextPair:
    """Two contexts after what MXNet sees (no GPU with its CPU wheel): gpu(0), gpu(1); with
    one GPU gpu(0) twice for ``compute``, cpu(0), gpu(0) for ``transfer``; else cpu(0), cpu(1)."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {PURPOSES}, not {purpose!r}")
    gpus = mx.context.num_gpus()
    first, second, kind = ((mx.gpu(0), mx.gpu(1), "two-gpus") if gpus >= 2 else
                           (mx.gpu(0), mx.gpu(0), "one-gpu") if gpus and purpose == "compute" else
                           (mx.cpu(0), mx.gpu(0), "host-and-gpu") if gpus else
                           (mx.cpu(0), mx.cpu(1), "cpu-only"))
    return ContextPair(first, second, kind, gpus,
                       mxnet_omp_threads(mxnet_import_settings().get("read", {})))
