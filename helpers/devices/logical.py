"""Give a lesson the number of devices it needs, on whatever machine runs it.

A lesson about two devices must run on a laptop with no GPU. TensorFlow can split one
physical CPU into several *logical* CPUs, and one GPU into several *virtual* GPUs with
memory limits, but only before its runtime initialises (before the first op, or the
first listing of logical devices). :func:`requirements_banner` picks real GPUs when
there are enough, otherwise virtual GPUs or logical CPUs, configures them, and prints a
banner saying exactly what was simulated, so no notebook pretends.

GPU memory, one rule for every TensorFlow process of the series: allocate on demand.
By default TensorFlow's runtime reserves nearly all of a card when it starts, leaving
nothing for MXNet in the same notebook or for a cluster's other processes on the card.
:func:`plan_devices` turns memory growth on for real GPUs (``set_memory_growth``) and
sets ``TF_FORCE_GPU_ALLOW_GROWTH=true``, which the runtime also applies to virtual GPUs
(where ``set_memory_growth`` is refused) and which every process the notebook starts
inherits; the worker programs turn growth on themselves as well. Each virtual GPU also
has a cap: what the lesson says it needs, or else an equal share of the card, within
what the card holds after a reserve for CUDA's own context, the cuBLAS/cuDNN
workspaces and MXNet (:func:`virtual_gpu_budget`).

Several cards: TensorFlow numbers virtual GPUs card by card (card 0's first, then card
1's), so with 4 virtual GPUs on 2 cards ``/GPU:0`` and ``/GPU:1`` share card 0. The plan
lists its devices across the cards in turn instead (card 0, card 1, card 0, ...), so the
first k devices use as many different cards as possible, and the banner says which
devices share a card.

MXNet counts its own GPUs (``mx.context.num_gpus()``: 0 with its CPU wheel, whatever
TensorFlow sees) and cannot split one: :meth:`DevicePlan.mxnet_contexts` gives distinct
contexts only, and says when they are stand-ins.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from helpers.checks import require_int
from helpers.devices.inventory import GPUCard, gpu_cards
from helpers.frameworks import import_tensorflow, mxnet_route
from helpers.machine import cpu_cores, share_jit_cache

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

