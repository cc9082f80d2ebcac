"""Problem sizes for the whole series, in one place, chosen from the hardware.

The same notebook must finish in seconds on a 2-core CI machine and show the seeds'
full-size experiments (10^4 x 10^4 matrices, n = 10) on GPUs. Every size a notebook uses
comes from a :class:`Profile`:

* ``ci``: 2-core CPU machines and the stored notebooks; the whole series runs in minutes.
* ``laptop``: a CPU machine with 4 or more cores; bigger sizes, still minutes.
* ``gpu``: one or more GPUs; the seeds' sizes.

The profile is chosen from the hardware, unless the ``SERIES_PROFILE`` environment
variable or a papermill ``parameters`` cell (``profile = "laptop"``) names one.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

ENV_VAR = "SERIES_PROFILE"


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
    image_size: int  # 05: CNN input side (the seed uses 150)
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
    step_batches: tuple[int, ...]  # 12: per-replica batches timed for the critical batch
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
        name="ci",
        description="2-core CPU machine: small sizes, the whole series in minutes",
        warmup=1, repeat=5,
        copy_sizes_mb=(0.004, 0.064, 1.0, 16.0, 256.0),
        matmul_sizes=(16, 128, 1024),
        log_steps=1000,
        matpow_size=512, matpow_n=10,
        image_size=32, batch_per_replica=32, train_examples=1024, epochs=2,
        replica_counts=(1, 2), timed_examples=384,
        cluster_workers=2, cluster_steps=30,
        scaling_workers=(1, 2, 4),
        message_sizes_kb=(1, 16, 256, 4096),
        collective_devices=4, collective_elements=4 * 4096,
        collective_sizes_kb=(4, 256, 4096), collective_workers=(1, 2, 4), fusion_tensors=16,
        roofline_elements=2**24, step_batches=(8, 32, 128, 512, 2048, 8192), micro_batches=4,
        memory_width=1024, memory_layers=16, memory_batch=256,
        pipeline_width=1024, pipeline_batch=256, pipeline_microbatches=(1, 2, 4, 8),
        tensor_parallel_size=1024,
    ),
    "laptop": Profile(
        name="laptop",
        description="CPU machine with 4+ cores: larger sizes, still minutes",
        warmup=2, repeat=7,
        copy_sizes_mb=(0.004, 0.064, 1.0, 16.0, 256.0, 1024.0),
        matmul_sizes=(16, 128, 1024, 2048),
        log_steps=1000,
        matpow_size=2000, matpow_n=10,
        image_size=64, batch_per_replica=32, train_examples=4096, epochs=3,
        replica_counts=(1, 2, 4), timed_examples=4096,
        cluster_workers=2, cluster_steps=100,
        scaling_workers=(1, 2, 4),
        message_sizes_kb=(1, 16, 256, 4096, 65536),
        collective_devices=4, collective_elements=4 * 65536,
        collective_sizes_kb=(4, 256, 4096, 16384), collective_workers=(1, 2, 4),
        fusion_tensors=64,
        roofline_elements=2**25, step_batches=(8, 32, 128, 512, 2048, 8192), micro_batches=4,
        memory_width=1024, memory_layers=16, memory_batch=1024,
        pipeline_width=1024, pipeline_batch=1024, pipeline_microbatches=(1, 2, 4, 8, 16),
        tensor_parallel_size=2048,
    ),
    "gpu": Profile(
        name="gpu",
        description="one or more GPUs: the seeds' full sizes",
        warmup=2, repeat=10,
        copy_sizes_mb=(0.004, 0.064, 1.0, 16.0, 256.0, 1024.0),
        matmul_sizes=(16, 128, 1024, 4096),
        log_steps=1000,
        matpow_size=10000, matpow_n=10,
        image_size=150, batch_per_replica=64, train_examples=8192, epochs=3,
        replica_counts=(1, 2, 4, 8), timed_examples=8192,
        cluster_workers=2, cluster_steps=200,
        scaling_workers=(1, 2, 4),
        message_sizes_kb=(1, 16, 256, 4096, 65536),
        collective_devices=4, collective_elements=4 * 262144,
        collective_sizes_kb=(4, 256, 4096, 65536), collective_workers=(1, 2, 4),
        fusion_tensors=128,
        roofline_elements=2**26, step_batches=(16, 64, 256, 1024, 4096, 16384), micro_batches=4,
        memory_width=2048, memory_layers=16, memory_batch=2048,
        pipeline_width=2048, pipeline_batch=1024, pipeline_microbatches=(1, 2, 4, 8, 16),
        tensor_parallel_size=8192,
    ),
}


def detect_profile_name() -> str:
    """``gpu`` when TensorFlow sees a GPU, ``laptop`` with 4+ cores, else ``ci``."""
    from helpers.devices.inventory import cpu_cores, physical_gpu_count  # noqa: PLC0415

    if physical_gpu_count() > 0:
        return "gpu"
    return "laptop" if cpu_cores() >= 4 else "ci"


def get_profile(name: str | None = None, **overrides: Any) -> Profile:
    """The profile called ``name``, else ``$SERIES_PROFILE``, else the hardware's.

    Keyword arguments replace single fields, e.g. ``get_profile("ci", matpow_n=4)``.
    """
    chosen = name or os.environ.get(ENV_VAR) or detect_profile_name()
    if chosen not in PROFILES:
        source = "argument" if name else f"${ENV_VAR}"
        raise ValueError(
            f"unknown profile {chosen!r} (from the {source}); choose one of "
            f"{', '.join(PROFILES)} or unset {ENV_VAR} to choose from the hardware"
        )
    fields = {f.name for f in dataclasses.fields(Profile)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"unknown profile field(s) {unknown}; fields are {sorted(fields)}")
    return dataclasses.replace(PROFILES[chosen], **overrides)
