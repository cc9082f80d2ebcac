"""What machine produced a measurement: CPU, cores, memory, GPUs, versions.

The bottom of the package (standard library and psutil only): the CPU's facts (cores,
instruction flags, the OpenBLAS core type they allow), ``nvidia-smi``'s answers and the CUDA
JIT cache. A timing means little without knowing whether 2 shared cores or eight GPUs made
it, so every saved result and report records :func:`describe_machine`, read from ``/proc``,
psutil, nvidia-smi and package metadata, never by importing a framework (no start-up cost).

At the same bottom: the checks of values a learner types (profiles, ``benchmark``,
cluster constructors, worker flags), reported at once and in words; they refuse bools
(``isinstance(True, int)`` holds) and NaN or infinity."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Collection
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

PACKAGES = ("tensorflow", "mxnet", "numpy", "nbval", "pytest")
_ALIASES = {"mxnet": ("mxnet", "mxnet-cu117", "mxnet-cu112")}  # a CUDA build stands in for it


def package_version(package: str) -> str | None:
    """The installed version of ``package`` (or of its CUDA twin), None if absent."""
    for name in _ALIASES.get(package, (package,)):
        with contextlib.suppress(metadata.PackageNotFoundError):
            return metadata.version(name)
    return None


def _cpuinfo(key: str) -> str | None:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(key)), None)


def cpu_flags() -> set[str]:
    """The instruction-set flags of this CPU (``/proc/cpuinfo``)."""
    return set((_cpuinfo("flags") or "").split())


def load_average() -> list[float]:
    """1, 5 and 15-minute load averages (runnable processes)."""
    return [round(x, 2) for x in os.getloadavg()]


def cpu_cores() -> int:
    """Cores this process may run on (respects taskset/cgroup affinity)."""
    return len(os.sched_getaffinity(0))


def physical_cores() -> int:
    """Cores this process may use, counting each physical core once (no hyper-threads)."""
    usable = cpu_cores()
    physical = psutil.cpu_count(logical=False) or usable
    logical = psutil.cpu_count(logical=True) or usable
    return max(1, min(usable, round(usable * physical / logical)))


def smi_output(*args: str) -> str | None:
    if (exe := shutil.which("nvidia-smi")) is None:
        return None
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        return subprocess.run([exe, *args], capture_output=True, text=True, timeout=20,
                              check=True).stdout
    return None


def query_nvidia_smi(fields: str) -> list[list[str]] | None:
    """``nvidia-smi --query-gpu=FIELDS`` as rows of strings; None without a working driver."""
    if (out := smi_output(f"--query-gpu={fields}", "--format=csv,noheader")) is None:
        return None
    return [[part.strip() for part in line.split(",")] for line in out.strip().splitlines()]


def suggested_coretype(flags: set[str] | None = None) -> str | None:
    """The best OpenBLAS kernel set this CPU's flags allow (never one it cannot run), or None.
    OpenBLAS takes the best set it has below one it was not built with: MXNet's 0.3.13
    answers ``SkylakeX`` with its ``Haswell`` kernels (AVX2 + FMA)."""
    flags = cpu_flags() if flags is None else flags
    return ("SkylakeX" if "avx512f" in flags else "Haswell" if {"avx2", "fma"} <= flags
            else "Sandybridge" if "avx" in flags else None)


JIT_CACHE_MAXSIZE = str(2**32)  # the largest the CUDA Programming Guide allows (default 1 GiB)


@functools.cache
def share_jit_cache(tf: Any) -> str:
    """Where TensorFlow has no SASS for a GPU, one big CUDA JIT cache for the series' processes.

    TensorFlow 2.21 ships SASS for sm_60/70/80/89 and only PTX for an H100 (9.0), which the
    driver JIT-compiles for minutes (tensorflow#60739) into a cache too small by default, so
    every process compiled again (SASS for X.y runs on X.z, z >= y). Sets ``CUDA_CACHE_PATH``
    (``~/.cache/pdl-series/cuda``) and ``CUDA_CACHE_MAXSIZE`` unless set, before CUDA starts
    (``import_tensorflow`` calls it first; children inherit them). Returns the banner's line."""
    rows = [(r[0], *map(int, r[-1].split("."))) for r in query_nvidia_smi("name,compute_cap")
            or [] if re.fullmatch(r"\d+\.\d+", r[-1])]
    built = tf.sysconfig.get_build_info().get("cuda_compute_capabilities", []) if rows else []
    sass = [(int(m[1]), int(m[2])) for a in built if (m := re.fullmatch(r"sm_(\d+)(\d)\D*", a))]
    lacking = sorted({(name, major, minor) for name, major, minor in rows
                      if built and not any(m == major and n <= minor for m, n in sass)})
    if not lacking:
        return ""
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache = os.environ.setdefault("CUDA_CACHE_PATH", str(home / "pdl-series" / "cuda"))
    os.environ.setdefault("CUDA_CACHE_MAXSIZE", JIT_CACHE_MAXSIZE)
    with contextlib.suppress(OSError):  # unwritable: CUDA then just does not cache
        Path(cache).mkdir(parents=True, exist_ok=True)
    return "\n".join(f"{name} (sm_{major}{minor}): TensorFlow {tf.__version__} ships PTX only "
                     f"for it, so the first run is slow: it JIT-compiles kernels into {cache} "
                     "(minutes, once; later runs and worker processes reuse them)"
                     for name, major, minor in lacking)


def describe_machine() -> dict[str, Any]:
    """Everything a result states about the machine, as plain JSON values."""
    smi = query_nvidia_smi("index,name,memory.total")
    return {"cpu": _cpuinfo("model name") or platform.processor() or platform.machine(),
            "logical_cpus": cpu_cores(), "physical_cores": physical_cores(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "gpus": [] if smi is None else [f"{row[1]} ({row[2]})" for row in smi],
            "platform": platform.platform(), "python": platform.python_version(),
            "profile": os.environ.get("SERIES_PROFILE"),
            "versions": {p: package_version(p) for p in PACKAGES}}


# -- Checks of the values learners type.
def _with(hint: str) -> str:
    return f"; {hint}" if hint else ""


def require_int(name: str, value: object, minimum: int, maximum: int | None = None,
                hint: str = "") -> int:
    """``value`` if it is an int (not a bool) in ``[minimum, maximum]``, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an int from {minimum} to {maximum}, not {value!r}"
                         f"{_with(hint)}")
    return value


def require_number(name: str, value: object, *, minimum: float | None = None,
                   maximum: float | None = None, above: float | None = None,
                   hint: str = "") -> float:
    """``value`` as a float if it is a finite number (not a bool) within the bounds
    (``minimum`` and ``maximum`` inclusive, ``above`` exclusive), else ValueError."""
    expected = " and ".join(f"{op} {bound:g}" for op, bound in (
        (">", above), (">=", minimum), ("<=", maximum)) if bound is not None)
    problem = ValueError(f"{name} must be a {'finite ' if not expected else ''}number"
                         f"{' ' + expected if expected else ''}, not {value!r}{_with(hint)}")
    x = math.nan if isinstance(value, bool) or not isinstance(value, (int, float)) else float(value)
    if not math.isfinite(x) or (above is not None and not x > above) or (
            minimum is not None and x < minimum) or (maximum is not None and x > maximum):
        raise problem
    return x


def require_choice(name: str, value: object, choices: Collection[object], hint: str = "") -> object:
    """``value`` if it is one of ``choices``, of the same type too (``True`` is not ``1``)."""
    if not any(value == c and type(value) is type(c) for c in choices):
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}, not {value!r}{_with(hint)}")
    return value
