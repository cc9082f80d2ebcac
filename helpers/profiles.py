"""Problem sizes for the whole series, in one place, chosen from the hardware.

The same notebook must finish in seconds on a 2-core CI machine and show the sources' full-size
experiments (10^4 x 10^4 matrices, n = 10) on GPUs. Every size a notebook uses comes from a
:class:`Profile`: ``ci`` (2-core CPU machines and the stored notebooks), ``laptop`` (4 or
more cores) or ``gpu`` (the sources' sizes, with notebook 04's matrix side shrunk in steps of
1000 where 10^4 x 10^4 does not fit the smallest card). The hardware chooses, unless
``SERIES_PROFILE`` or a papermill ``parameters`` cell (``profile = "laptop"``) names one."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any

import psutil

from helpers import frameworks
from helpers.devices import gpu_cards, physical_gpu_count, reserve_mb
from helpers.machine import cpu_cores, require_int, require_number
from helpers.processes import LOCAL_TASKS_HINT, MAX_LOCAL_TASKS

ENV_VAR = "SERIES_PROFILE"
SHRINK_VAR = "SERIES_SHRINK"


@dataclass(frozen=True)
class Profile:
    """Sizes and counts used by the notebooks. Field comments say which notebook uses them."""
    name: str
    description: str
    warmup: int  # timing: untimed runs first
    repeat: int  # timing: timed runs, median reported
    copy_sizes_mb: tuple[float, ...]  # 03: copy-cost sweep
    matmul_sizes: tuple[int, ...]  # 03: small and large matmuls (crossover)
    log_steps: int  # 03: exercise 3, matmuls logged each step
    matpow_size: int  # 04: matrix side
    matpow_n: int  # 04: power
    image_size: int  # 05: CNN input side (the multi-GPU tf.distribute tutorial uses 150)
    batch_per_replica: int  # 05-07
    train_examples: int  # 05-07: examples per epoch
    epochs: int  # 05
    replica_counts: tuple[int, ...]  # 05: replicas timed
    timed_examples: int  # 05: examples per timed epoch when comparing replica counts
    cluster_workers: int  # 06-09: worker processes
    cluster_steps: int  # 06-09: training steps
    scaling_workers: tuple[int, ...]  # 10: workers for the measured speed-up
    message_sizes_kb: tuple[int, ...]  # 10: alpha-beta calibration
    collective_devices: int  # 11: devices the hand-written all-reduces run over
    collective_elements: int  # 11: float32 values per device in the hand-written all-reduces
    collective_sizes_kb: tuple[int, ...]  # 11: message sizes timed across processes
    collective_workers: tuple[int, ...]  # 11: worker counts timed (one cluster of the largest)
    fusion_tensors: int  # 11: small tensors all-reduced one by one or packed
    roofline_elements: int  # 12: float32 values of the element-wise ops and copies
    step_batches: tuple[int, ...]  # 12: per-replica batches timed for b*; 15: MFU by batch
    micro_batches: int  # 12: gradient accumulation, micro-batches per exchange
    memory_width: int  # 13: width of the dense model whose memory is measured
    memory_layers: int  # 13: its depth
    memory_batch: int  # 13: its batch
    pipeline_width: int  # 13: width of the layers of each pipeline stage
    pipeline_batch: int  # 13: examples per pipelined batch
    pipeline_microbatches: tuple[int, ...]  # 13: micro-batch counts timed
    tensor_parallel_size: int  # 13: side of the matrices of the split product


PROFILES: dict[str, Profile] = {
    "ci": Profile(
        name="ci", description="2-core CPU machine: small sizes, the whole series in minutes",
        warmup=1, repeat=5, copy_sizes_mb=(0.004, 0.064, 1.0, 16.0, 64.0),
        matmul_sizes=(16, 128, 1024), log_steps=1000, matpow_size=512, matpow_n=10,
        image_size=32, batch_per_replica=32, train_examples=1024, epochs=2,
        replica_counts=(1, 2), timed_examples=256, cluster_workers=2, cluster_steps=30,
        scaling_workers=(1, 2, 3),  # 3 workers already outnumber the 2 cores
        message_sizes_kb=(1, 16, 256, 4096),
        collective_devices=4, collective_elements=4 * 4096, collective_workers=(1, 2, 4),
        collective_sizes_kb=(4, 256, 4096), fusion_tensors=16,
        roofline_elements=2**24, step_batches=(8, 32, 128, 512, 2048, 8192), micro_batches=4,
        memory_width=1024, memory_layers=16, memory_batch=256, tensor_parallel_size=1024,
        pipeline_width=1024, pipeline_batch=256, pipeline_microbatches=(1, 2, 4, 8)),
    "laptop": Profile(
        name="laptop", description="CPU machine with 4+ cores: larger sizes, still minutes",
        warmup=2, repeat=7, copy_sizes_mb=(0.004, 0.064, 1.0, 16.0, 256.0, 1024.0),
        matmul_sizes=(16, 128, 1024, 2048), log_steps=1000, matpow_size=2000, matpow_n=10,
        image_size=48, batch_per_replica=32, train_examples=2048, epochs=2,
        replica_counts=(1, 2, 4), timed_examples=1024, cluster_workers=2, cluster_steps=100,
        scaling_workers=(1, 2, 4), message_sizes_kb=(1, 16, 256, 4096, 65536),
        collective_devices=4, collective_elements=4 * 65536, collective_workers=(1, 2, 4),
        collective_sizes_kb=(4, 256, 4096, 16384), fusion_tensors=64,
        roofline_elements=2**25, step_batches=(8, 32, 128, 512, 2048, 8192), micro_batches=4,
        memory_width=1024, memory_layers=16, memory_batch=1024, tensor_parallel_size=2048,
        pipeline_width=1024, pipeline_batch=1024, pipeline_microbatches=(1, 2, 4, 8, 16)),
    "gpu": Profile(
        name="gpu", description="one or more GPUs: the sources' full sizes",
        warmup=2, repeat=10, copy_sizes_mb=(0.004, 0.064, 1.0, 16.0, 256.0, 1024.0),
        matmul_sizes=(16, 128, 1024, 4096), log_steps=1000, matpow_size=10000, matpow_n=10,
        image_size=150, batch_per_replica=64, train_examples=8192, epochs=3,
        replica_counts=(1, 2, 4, 8), timed_examples=8192, cluster_workers=2, cluster_steps=200,
        scaling_workers=(1, 2, 4), message_sizes_kb=(1, 16, 256, 4096, 65536),
        collective_devices=4, collective_elements=4 * 262144, collective_workers=(1, 2, 4),
        collective_sizes_kb=(4, 256, 4096, 65536), fusion_tensors=128,
        roofline_elements=2**26, step_batches=(16, 64, 256, 1024, 4096, 16384), micro_batches=4,
        memory_width=2048, memory_layers=16, memory_batch=2048, tensor_parallel_size=8192,
        pipeline_width=2048, pipeline_batch=1024, pipeline_microbatches=(1, 2, 4, 8, 16)),
}


# -- Does notebook 04's matrix power fit this machine? (04 writes the program itself.)
def device_memory_mb(size: int, chains: int = 2) -> int:
    """MiB one device needs for ``chains`` matrix-power chains of ``size x size`` float32: its
    input, the product being computed and the previous one, a copy on its way to the host,
    and a spare for the allocator's fragmentation (five matrices per chain)."""
    return math.ceil(chains * 5 * size * size * 4 / 2**20)


def require_fits_in_memory(size: int, matrices: int = 8, available: int | None = None) -> int:
    """Bytes of ``matrices`` float32 ``size x size`` matrices (A, B, each chain's products,
    their sum, results kept for checking); ValueError, with the largest size that fits, when
    that is more than ``available`` (the memory free now), before anything is allocated."""
    need = matrices * size * size * 4
    available = psutil.virtual_memory().available if available is None else available
    if need > available:
        raise ValueError(f"{matrices} matrices of {size} x {size} take {need / 2**30:.1f} GiB but "
                         f"this machine has {available / 2**30:.1f} GiB free; use a size of at "
                         f"most {math.isqrt(available // (matrices * 4))}")
    return need


def matpow_gpu_mb(size: int, cards: int, mxnet_on_gpu: bool) -> int:
    """GPU memory (MiB) notebook 04 needs on its busiest card for ``size x size`` matrices.

    On one card both of TensorFlow's virtual GPUs live there, and the single-device run puts
    both chains plus the sum on one of them (three chains each); with two or more cards the
    busiest holds three chains. MXNet's pair adds two chains on ``gpu(0)`` when it runs there."""
    tensorflow = device_memory_mb(size, chains=3) * (2 if cards == 1 else 1)
    return tensorflow + (device_memory_mb(size, chains=2) if mxnet_on_gpu else 0)


def fit_gpu_profile(profile: Profile, card_mb: list[int], mxnet_on_gpu: bool) -> Profile:
    """``profile`` with ``matpow_size`` shrunk to fit the smallest of the cards (MiB each)."""
    usable = min(card_mb) - reserve_mb(min(card_mb))
    size = profile.matpow_size
    while size > 1000 and matpow_gpu_mb(size, len(card_mb), mxnet_on_gpu) > usable:
        size -= 1000
    if size == profile.matpow_size:
        return profile
    where = "with MXNet on the same card" if mxnet_on_gpu else "on this card"
    return dataclasses.replace(profile, matpow_size=size, description=(
        f"{profile.description}; matpow_size {size}: {profile.matpow_size} does not fit "
        f"{min(card_mb)} MiB {where}"))


# -- A big profile's code paths on a small machine (``make run PROFILE=gpu SHRINK=16``).
#: Fields that are lengths (a matrix side, an image side, a layer width): divided by sqrt(k).
_SIDES = ("matmul_sizes", "matpow_size", "image_size", "memory_width", "pipeline_width",
          "tensor_parallel_size")
#: Fields that are amounts (bytes, examples, values): divided by k. The rest are counts
#: (replicas, workers, micro-batches, repeats, training steps) and stay: they choose the code
#: paths, and a claim that training converges needs the profile's steps.
_AMOUNTS = ("copy_sizes_mb", "batch_per_replica", "train_examples", "timed_examples",
            "message_sizes_kb", "collective_elements", "collective_sizes_kb",
            "roofline_elements", "step_batches", "memory_batch", "pipeline_batch")


def shrink(profile: Profile, factor: int) -> Profile:
    """``profile`` with every amount divided by ``factor`` and every side by its square root, every
    count kept: the ``gpu`` profile's loops (8 replicas, 5 micro-batch counts, its batch sizes) run
    on a CPU in minutes. It checks the notebooks' code and arithmetic at that profile's shapes; its
    timings say nothing about a GPU (its description says so). Values stay multiples of what divides
    them (examples of global batches, batches of micro-batches) as both shrink by one factor."""
    if factor not in (1, 4, 16, 64):
        raise ValueError(f"${SHRINK_VAR} must be 1, 4, 16 or 64, not {factor!r}: a square "
                         "power of two keeps every side whole and every batch divisible")
    if factor == 1:
        return profile
    side = math.isqrt(factor)

    def scaled(value: Any, by: int, least: int) -> Any:
        if isinstance(value, tuple):  # sizes that meet at the floor count once
            return tuple(dict.fromkeys(scaled(v, by, least) for v in value))
        return value / by if isinstance(value, float) else max(least, value // by)

    changes = {f: scaled(getattr(profile, f), side, 16) for f in _SIDES}
    changes |= {f: scaled(getattr(profile, f), factor, 1) for f in _AMOUNTS}
    return dataclasses.replace(profile, **changes, description=(
        f"{profile.description}; shrunk {factor}x ({SHRINK_VAR}): its code paths on this machine, "
        "not its timings"))


def detect_profile_name() -> str:
    return "gpu" if physical_gpu_count() > 0 else "laptop" if cpu_cores() >= 4 else "ci"


#: (minimum, maximum, hint) of every int field; the other fields are non-empty tuples.
_RANGES: dict[str, tuple[int, int | None, str]] = {
    "warmup": (0, 1000, ""), "repeat": (1, 1000, ""), "log_steps": (1, None, ""),
    "matpow_size": (1, 100_000, ""), "timed_examples": (1, None, ""),
    "matpow_n": (1, 200, "notebook 04's matpow recurses once per product"),
    "image_size": (16, 1024, "the CNN of notebook 05 halves the image four times"),
    "batch_per_replica": (1, 65536, ""), "train_examples": (1, None, ""), "epochs": (1, 1000, ""),
    "cluster_workers": (1, MAX_LOCAL_TASKS, LOCAL_TASKS_HINT), "cluster_steps": (1, None, "")}


def _check_override(field: str, value: Any) -> None:
    """ValueError, in the words of :mod:`helpers.machine`, for an override out of range."""
    name = f"the profile's {field}"
    if field in ("name", "description"):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-empty str, not {value!r}")
    elif field in _RANGES:
        require_int(name, value, *_RANGES[field])
        if field == "matpow_size":
            require_fits_in_memory(value)
    else:
        if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or not value:
            raise ValueError(f"{name} must be a non-empty tuple, not {value!r}")
        for item in value:
            if field == "copy_sizes_mb":
                require_number(f"each of {name}", item, above=0)
            elif field in ("replica_counts", "scaling_workers"):
                require_int(f"each of {name}", item, 1, MAX_LOCAL_TASKS, LOCAL_TASKS_HINT)
            else:
                require_int(f"each of {name}", item, 1)
        if field == "scaling_workers" and (list(value[:2]) != [1, 2]
                                           or list(value) != sorted(set(value))):
            raise ValueError(f"{name} must rise from 1, 2 (10 divides by one worker's step and "
                             f"sets two workers beside one), as (1, 2, 4), not {value!r}")


def get_profile(name: str | None = None, **overrides: Any) -> Profile:
    """The profile called ``name``, else ``$SERIES_PROFILE``, else the hardware's (the gpu profile
    fitted to the GPUs TensorFlow uses, a MIG slice's memory, not its card's). Keyword arguments
    replace fields (``get_profile("ci", matpow_n=4)``), checked here, not deep in a notebook."""
    chosen = name or os.environ.get(ENV_VAR) or detect_profile_name()
    if chosen not in PROFILES:
        source = "argument" if name else f"${ENV_VAR}"
        raise ValueError(f"unknown profile {chosen!r} (from the {source}); choose one of "
                         f"{', '.join(PROFILES)} or unset {ENV_VAR} to choose from the hardware")
    fields = {f.name for f in dataclasses.fields(Profile)}
    if unknown := sorted(set(overrides) - fields):
        raise ValueError(f"unknown profile field(s) {unknown}; fields are {sorted(fields)}")
    for field, value in overrides.items():
        _check_override(field, value)
    profile = PROFILES[chosen]
    if chosen == "gpu" and (memory := [card.memory_mb for card in gpu_cards() if card.memory_mb]):
        profile = fit_gpu_profile(profile, memory, frameworks.mxnet_route().on_gpu)
    factor = os.environ.get(SHRINK_VAR, "1") or "1"
    return shrink(dataclasses.replace(profile, **overrides),
                  int(factor) if factor.isdigit() else factor)  # type: ignore[arg-type]
