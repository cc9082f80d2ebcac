"""Which BLAS does the matrix products, with which CPU kernels and how many threads.

Two frameworks in one process can multiply matrices at very different speeds on the
same cores, because each brings its own BLAS. MXNet 1.9.1's pip wheel ships OpenBLAS
0.3.13, built with ``DYNAMIC_ARCH``: at load time it picks a kernel set for the CPU it
recognises, and a CPU newer than the library falls back to an old generic set (for
example ``Prescott``, SSE3 only) that is several times slower than the AVX2/AVX-512 sets
NumPy's newer OpenBLAS picks. ``OPENBLAS_CORETYPE`` overrides the choice, but only
before the library is loaded, i.e. before MXNet is imported.

Threads matter as much: when ``OMP_NUM_THREADS`` is unset, MXNet gives each operator
half of the processors on x86 (it assumes two hyper-threads per core), which on a
machine with one thread per core leaves half of the cores idle.

This module reports those facts (through threadpoolctl, which asks every loaded BLAS
directly), counts the threads that really worked during a call (from ``/proc`` on
Linux), and measures MXNet's ``dot`` under other settings in a fresh process, since the
settings cannot change in a process that has already imported MXNet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from helpers.machine import cpu_cores, require_int, require_positive_number
from helpers.output import Table

_TASKS = Path("/proc/self/task")

#: Settings that change how fast MXNet multiplies on a CPU; all are read at import time.
MXNET_THREAD_SETTINGS = ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS", "MXNET_CPU_WORKER_NTHREADS",
                         "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE")

#: OpenBLAS kernel sets without AVX: what an OpenBLAS falls back to on a CPU it does not know.
GENERIC_KERNELS = ("Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai",
                   "Coppermine", "Northwood", "Opteron", "Barcelona", "Bobcat", "Generic")
#: Width in bits of the vectors each OpenBLAS kernel set computes with (AVX-512, AVX2/AVX).
KERNEL_VECTOR_BITS = {"SkylakeX": 512, "CooperLake": 512, "SapphireRapids": 512,
                      "Haswell": 256, "Zen": 256, "Sandybridge": 256, "Bulldozer": 256,
                      "Piledriver": 256, "Steamroller": 256, "Excavator": 256}


def blas_libraries() -> Table:
    """Every BLAS and OpenMP runtime loaded in this process, as threadpoolctl sees them.

    ``kernels`` is the CPU kernel set an OpenBLAS chose at load time. Import the
    frameworks first: a library that is not loaded yet is not listed.
    """
    try:
        from threadpoolctl import threadpool_info  # noqa: PLC0415
    except ImportError as err:  # pinned in requirements.txt; say what to install
        raise RuntimeError("blas_libraries needs threadpoolctl: pip install threadpoolctl") from err
    table = Table(["used by", "library", "version", "kernels", "threads", "threading"])
    for info in threadpool_info():
        table.append([_owner(info["filepath"]), info.get("internal_api"), info.get("version"),
                      info.get("architecture"), info.get("num_threads"),
                      info.get("threading_layer")])
    return table


def _owner(filepath: str) -> str:
    """The package a shared library came with: the folder in site-packages, else 'system'."""
    parts = Path(filepath).parts
    if "site-packages" in parts:
        name = parts[parts.index("site-packages") + 1]
        return name.removesuffix(".libs").removesuffix("_libs")
    return "system"


def kernels_of(table: Table, owner: str) -> str | None:
    """The kernel set of the OpenBLAS that ``owner`` (e.g. 'mxnet', 'numpy') loaded, if any."""
    for row in table.records():
        if row["used by"] == owner and row["library"] == "openblas":
            return row["kernels"]
    return None


def vector_bits(kernels: str | None) -> int | None:
    """How wide the vectors of an OpenBLAS kernel set are (128 for the generic SSE sets)."""
    if not kernels:
        return None
    name = kernels.lower()
    if name in {k.lower() for k in GENERIC_KERNELS}:
        return 128
    return {k.lower(): bits for k, bits in KERNEL_VECTOR_BITS.items()}.get(name)


def mxnet_omp_threads(environ: Mapping[str, str] | None = None) -> int:
    """OpenMP threads MXNet gives one CPU operator, from the settings it reads at import.

    ``MXNET_OMP_MAX_THREADS`` or ``OMP_NUM_THREADS`` when set; otherwise MXNet's own rule
    on x86, half of the processors (it assumes two hyper-threads per core).
    """
    env = os.environ if environ is None else environ
    for key in ("MXNET_OMP_MAX_THREADS", "OMP_NUM_THREADS"):
        value = env.get(key, "").split(",")[0].strip()
        if value:
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"{key}={env[key]!r} is not a thread count; unset it or give "
                                 "a whole number >= 1")
            return int(value)
    return max(1, cpu_cores() // 2)


def _thread_ticks() -> dict[str, int] | None:
    """CPU time (clock ticks, user + system) of every thread of this process, or None."""
    if not _TASKS.is_dir():
        return None
    ticks = {}
    for tid in os.listdir(_TASKS):
        try:
            fields = (_TASKS / tid / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended while we looked
            continue
        ticks[tid] = int(fields[11]) + int(fields[12])
    return ticks


def busy_threads(fn: Callable[[], Any], min_seconds: float = 0.3,
                 share: float = 0.25) -> int | None:
    """How many threads of this process did real work while ``fn`` ran again and again.

    ``fn`` runs until ``min_seconds`` have passed (the kernel counts CPU time in 10 ms
    ticks, so shorter runs cannot tell threads apart). A thread counts when it used at
    least ``share`` of the CPU time of the busiest one. ``fn`` must wait for its own
    result (e.g. end with ``wait_to_read()``). Returns None where ``/proc`` is missing
    (not Linux) or too little CPU time was used to tell.
    """
    if not callable(fn):
        raise ValueError(f"busy_threads needs a function to call, not {fn!r}")
    require_positive_number("min_seconds", min_seconds)
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], not {share!r}")
    fn()  # threads start lazily; let them exist before counting
    before = _thread_ticks()
    if before is None:
        return None
    start = time.perf_counter()
    while time.perf_counter() - start < min_seconds:
        fn()
    after = _thread_ticks() or {}
    used = [t - before.get(tid, 0) for tid, t in after.items()]
    top = max(used, default=0)
    if top < 5:  # under 50 ms of CPU time in the busiest thread: too little to tell
        return None
    return sum(1 for t in used if t >= share * top)


def cpu_seconds_per_call(fn: Callable[[], Any], min_seconds: float = 0.3) -> float:
    """CPU time this process spends per call of ``fn``, over all of its threads.

    Wall-clock time on a shared machine includes the time other programs held the cores;
    CPU time does not, so it compares two kernels fairly even when the machine is busy.
    ``fn`` runs once first (threads start lazily), then again and again until
    ``min_seconds`` of wall time have passed. Idle threads that spin while they wait are
    counted too, so compare runs that use the same number of threads.
    """
    if not callable(fn):
        raise ValueError(f"cpu_seconds_per_call needs a function to call, not {fn!r}")
    require_positive_number("min_seconds", min_seconds)
    fn()
    calls, start, cpu_start = 0, time.perf_counter(), time.process_time()
    while calls == 0 or time.perf_counter() - start < min_seconds:
        fn()
        calls += 1
    return (time.process_time() - cpu_start) / calls


def probe_mxnet_dot(env: Mapping[str, str] | None = None, size: int = 512, repeat: int = 5,
                    timeout: float = 120.0) -> dict[str, Any]:
    """Time MXNet's ``nd.dot`` and NumPy's ``@`` on ``size x size`` float32 in a fresh process.

    Each product gets a wall-clock rate (``gflops_*``, median of ``repeat``) and a rate per
    CPU-second (``cpu_gflops_*``): the second measures how efficient the kernels are and
    barely moves when other programs share the cores. ``env`` adds settings such as
    ``{"OPENBLAS_CORETYPE": "Haswell"}`` that only take effect before MXNet is imported.
    Such a setting reaches every OpenBLAS in the child, NumPy's too (``kernels_numpy``
    says which set NumPy got), so compare MXNet with MXNet across probes rather than
    with NumPy. ``import_mxnet`` adds no settings of its own in the probe, so ``{}`` is
    MXNet as installed. Only one MXNet context is used: settings that give several threads to
    each of several concurrently running contexts are not probed here.
    """
    require_int("size", size, 1)
    require_int("repeat", repeat, 1)
    extra = dict(env or {})
    for key, value in extra.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"env holds names and values as strings, not {key!r}: {value!r}")
    child_env = {**os.environ, **extra}
    for key in MXNET_THREAD_SETTINGS:  # start from the defaults, plus what was asked for
        if key not in extra:
            child_env.pop(key, None)
    child_env["SERIES_MXNET_TUNING"] = "0"  # exactly these settings, not import_mxnet's own
    command = [sys.executable, "-m", "helpers.blas", str(size), str(repeat)]
    try:
        done = subprocess.run(command, env=child_env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the MXNet probe with {extra} did not finish in {timeout:g} s; "
                           "the machine may be overloaded, try a smaller size") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the MXNet probe with {extra} failed (exit {done.returncode}):\n"
                           f"{done.stderr[-2000:]}")
    return {"settings": extra, **json.loads(lines[-1])}


def _probe(size: int, repeat: int) -> dict[str, Any]:
    """Run in the child: time both products, report kernels and busy threads."""
    from helpers.frameworks import import_mxnet  # noqa: PLC0415

    mx = import_mxnet()
    a = mx.nd.random.uniform(shape=(size, size))
    b = mx.nd.random.uniform(shape=(size, size))
    a_np, b_np = a.asnumpy(), b.asnumpy()

    def mx_dot() -> None:
        mx.nd.dot(a, b).wait_to_read()

    def np_dot() -> None:
        a_np @ b_np

    flops = 2.0 * size**3
    out: dict[str, Any] = {"size": size}
    for name, fn in (("mxnet", mx_dot), ("numpy", np_dot)):
        fn()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        samples.sort()
        out[f"gflops_{name}"] = flops / samples[len(samples) // 2] / 1e9
        out[f"cpu_gflops_{name}"] = flops / cpu_seconds_per_call(fn) / 1e9
        out[f"threads_{name}"] = busy_threads(fn)
    libraries = blas_libraries()
    out["kernels_mxnet"] = kernels_of(libraries, "mxnet")
    out["kernels_numpy"] = kernels_of(libraries, "numpy")
    return out


if __name__ == "__main__":
    print(json.dumps(_probe(int(sys.argv[1]), int(sys.argv[2]))))
