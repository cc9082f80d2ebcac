"""Matrix-product speed of TensorFlow and MXNet relative to NumPy's BLAS, and why.

Each configuration runs in its own process (:mod:`bench.subproc`), because what decides
the speed is fixed when the libraries load:

* MXNet's pip wheel carries its own OpenBLAS (0.3.13, built with ``DYNAMIC_ARCH``),
  which picks its kernels from the CPU model at load time. A CPU newer than that
  OpenBLAS (e.g. a Sapphire Rapids VM reporting "Intel Xeon Processor") is not
  recognised and falls back to the ``Prescott`` (SSE3) kernels; ``OPENBLAS_CORETYPE``
  overrides the choice.
* MXNet sizes its OpenMP pool at load time too: on x86 it assumes hyper-threading and
  uses half the logical CPUs unless ``OMP_NUM_THREADS`` or ``MXNET_OMP_MAX_THREADS`` is
  set, so a 2-vCPU machine computes ``nd.dot`` on one thread.
* ``nd.FullyConnected`` goes through oneDNN instead of OpenBLAS, which is the same
  product (``X @ W.T``) with oneDNN's own CPU dispatch.
* TensorFlow's CPU matmul uses oneDNN by default (``TF_ENABLE_ONEDNN_OPTS=0`` turns it
  off) and sizes its intra-op pool from the cores.

Every probe times NumPy and the framework in alternating rounds in the same process,
so each figure is a paired ratio that the machine's load largely cancels out of.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from bench.stats import gflops_matmul, interleaved, median, paired_ratios, spread
from helpers.checks import require_int
from helpers.measure.timing import sync_mxnet

#: Variables that decide MXNet's and OpenBLAS's threads and kernels.
BLAS_VARS = ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS", "OPENBLAS_CORETYPE",
             "OPENBLAS_NUM_THREADS", "MXNET_ENGINE_TYPE", "MXNET_CPU_WORKER_NTHREADS")
TF_VARS = ("TF_ENABLE_ONEDNN_OPTS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


# -- pure logic ----------------------------------------------------------------------
def openblas_coretype_for(cpu_flags: set[str] | frozenset[str]) -> str | None:
    """The ``OPENBLAS_CORETYPE`` that matches a CPU's instruction sets, None if unsure.

    OpenBLAS falls back to the best kernel set it was built with (MXNet's 0.3.13 wheel
    has no AVX-512 kernels and uses Haswell's when asked for SkylakeX).
    """
    if not isinstance(cpu_flags, (set, frozenset)):
        raise ValueError(f"cpu_flags is a set of /proc/cpuinfo flags, not {cpu_flags!r}")
    if "avx512f" in cpu_flags:
        return "SkylakeX"
    if "avx2" in cpu_flags and "fma" in cpu_flags:
        return "Haswell"
    return None


def cpu_flags() -> set[str]:
    """Instruction-set flags of this CPU (Linux); empty where /proc/cpuinfo is absent."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def physical_cores() -> int:
    """Physical cores (not hyper-threads) this machine has, at least 1."""
    import psutil  # noqa: PLC0415

    from helpers.devices.inventory import cpu_cores  # noqa: PLC0415

    return max(1, min(psutil.cpu_count(logical=False) or cpu_cores(), cpu_cores()))


def mx_configs(cores: int, coretype: str | None) -> list[dict[str, Any]]:
    """The MXNet configurations compared, each ``{name, what, env, unset, helper}``.

    ``series`` is how the notebooks run (``helpers.frameworks.import_mxnet`` in an
    untouched environment); the others import MXNet bare, with only the listed settings.
    """
    require_int("cores", cores, 1)
    configs = [
        {"name": "series", "what": "as the notebooks run (helpers.frameworks.import_mxnet)",
         "env": {}, "unset": (), "helper": True},
        {"name": "library defaults", "what": "no threading or BLAS variables set",
         "env": {}, "unset": BLAS_VARS, "helper": False},
        {"name": "all cores", "what": f"MXNET_OMP_MAX_THREADS={cores}",
         "env": {"MXNET_OMP_MAX_THREADS": str(cores)}, "unset": BLAS_VARS, "helper": False},
    ]
    if coretype:
        configs.append({
            "name": "all cores + CPU kernels",
            "what": f"MXNET_OMP_MAX_THREADS={cores} OPENBLAS_CORETYPE={coretype}",
            "env": {"MXNET_OMP_MAX_THREADS": str(cores), "OPENBLAS_CORETYPE": coretype},
            "unset": BLAS_VARS, "helper": False})
    return configs


def tf_configs() -> list[dict[str, Any]]:
    """The TensorFlow configurations compared (same shape as :func:`mx_configs`)."""
    return [
        {"name": "series", "what": "as the notebooks run (helpers.frameworks.import_tensorflow)",
         "env": {}, "unset": (), "helper": True},
        {"name": "oneDNN off", "what": "TF_ENABLE_ONEDNN_OPTS=0",
         "env": {"TF_ENABLE_ONEDNN_OPTS": "0"}, "unset": TF_VARS, "helper": True},
        {"name": "1 intra-op thread", "what": "tf.config.threading intra-op = 1",
         "env": {}, "unset": TF_VARS, "helper": True, "intra_op": 1},
    ]


def busy_threads(cpu_seconds: list[float], share: float = 0.5) -> int:
    """Threads that did at least ``share`` of the busiest thread's CPU time.

    A BLAS call on k threads shows k threads with about equal CPU time; threads that
    only wake up briefly, or spin for a moment after the previous call, stay under it.
    """
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], not {share!r}")
    if not cpu_seconds:
        return 0
    top = max(cpu_seconds)
    return sum(1 for s in cpu_seconds if top > 0 and s >= share * top)


def summarise(n: int, samples: dict[str, list[float]], reference: str = "numpy",
              cpu: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """GFLOP/s per route (from the median time) and each route's paired ratio to NumPy.

    With ``cpu`` (CPU seconds per call) each route also gets ``vs_blas_per_cpu_s``:
    GFLOP per CPU-second relative to NumPy's, the kernels' efficiency, which other
    programs on the machine do not change (it ignores how many threads were used).
    """
    if reference not in samples:
        raise ValueError(f"the samples have no {reference!r} reference; got {sorted(samples)}")
    out: dict[str, Any] = {"n": n, "rounds": len(samples[reference]), "routes": {}}
    for name, times in samples.items():
        ratios = paired_ratios(samples[reference], times)
        route = {
            "gflops": gflops_matmul(n, median(times)),
            "vs_blas": median(ratios),
            "spread": spread(times),
            "seconds": times,
        }
        if cpu is not None and all(c > 0 for c in cpu.get(name, [0.0])):
            route["cpu_seconds"] = cpu[name]
            route["vs_blas_per_cpu_s"] = median(paired_ratios(cpu[reference], cpu[name]))
        out["routes"][name] = route
    return out


# -- probes (run in their own process) --------------------------------------------------
def _thread_cpu_seconds(fn: Any, sync: Any, runs: int = 2) -> list[float]:
    """CPU seconds each thread of this process spent while ``fn`` ran ``runs`` times."""
    import psutil  # noqa: PLC0415

    proc = psutil.Process()
    before = {t.id: t.user_time + t.system_time for t in proc.threads()}
    for _ in range(runs):
        sync(fn())
    after = {t.id: t.user_time + t.system_time for t in proc.threads()}
    return [after[i] - before.get(i, 0.0) for i in after]


def _blas_libraries() -> list[dict[str, Any]]:
    """The BLAS/OpenMP libraries loaded in this process, with the kernels they chose."""
    try:
        import threadpoolctl  # noqa: PLC0415
    except ImportError:
        return []
    return [{"library": os.path.basename(i.get("filepath", "")), "owner": library_owner(
                 i.get("filepath", "")), "api": i.get("internal_api"), "version": i.get("version"),
             "kernels": i.get("architecture"), "threads": i.get("num_threads")}
            for i in threadpoolctl.threadpool_info()]


def library_owner(path: str) -> str:
    """Which package shipped a shared library, from its path (``numpy.libs/...`` -> numpy)."""
    parts = path.replace("\\", "/").split("/")
    for part in reversed(parts[:-1]):
        name = part.removesuffix(".libs")
        if name in ("numpy", "scipy", "mxnet", "tensorflow", "scipy_openblas32", "scikit_learn"):
            return name
    return "system"


def _mx_openblas() -> dict[str, Any]:
    """Kernel set and version of the OpenBLAS inside MXNet's wheel (None for an MKL build)."""
    import ctypes  # noqa: PLC0415
    import glob  # noqa: PLC0415

    mx = sys.modules["mxnet"]
    paths = glob.glob(os.path.join(os.path.dirname(mx.__file__), "libopenblas*.so*"))
    if not paths:
        return {"kernels": None, "config": None}
    lib = ctypes.CDLL(paths[0])
    info = {}
    for key, fn in (("kernels", "openblas_get_corename"), ("config", "openblas_get_config")):
        f = getattr(lib, fn)
        f.restype = ctypes.c_char_p
        info[key] = f().decode()
    return info


def _time_routes(n: int, routes: dict[str, tuple[Any, Any]], rounds: int,
                 budget_s: float) -> dict[str, Any]:
    """Interleaved rounds of every route, summarised, with the threads each one used.

    ``cpu_share`` is the CPU-seconds per second this process got while timing: the
    number of cores when it had them all, less when other programs shared them.
    """
    cpu: dict[str, list[float]] = {}
    start, cpu_start = time.perf_counter(), time.process_time()
    samples = interleaved(routes, rounds=rounds, warmup=1, budget_s=budget_s, cpu_samples=cpu)
    share = (time.process_time() - cpu_start) / max(time.perf_counter() - start, 1e-9)
    out = summarise(n, samples, cpu=cpu)
    out["cpu_share"] = share
    per_thread = {name: sorted(_thread_cpu_seconds(*routes[name], runs=1), reverse=True)[:4]
                  for name in routes}
    out["thread_cpu_s"] = per_thread  # the evidence behind "threads": busiest four
    out["threads"] = {name: busy_threads(cpu) for name, cpu in per_thread.items()}
    return out


def probe_mx(n: int = 2048, rounds: int = 5, budget_s: float = 20.0,
             helper: bool = True) -> dict[str, Any]:
    """NumPy vs MXNet ``nd.dot`` and ``nd.FullyConnected`` on n x n float32, in rounds."""
    import numpy as np  # noqa: PLC0415

    if helper:
        from helpers.frameworks import import_mxnet  # noqa: PLC0415

        mx = import_mxnet()
    else:  # the bare library: only the numpy alias, none of the helper's settings
        vars(np).setdefault("bool", bool)
        import mxnet as mx  # noqa: PLC0415
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    A, B = mx.nd.array(a), mx.nd.array(b)
    BT = B.T.copy()  # FullyConnected computes X @ W.T
    mx.nd.waitall()
    routes = {
        "numpy": (lambda: a @ b, lambda _r: None),
        "mxnet dot": (lambda: mx.nd.dot(A, B), sync_mxnet),
        "mxnet FullyConnected": (
            lambda: mx.nd.FullyConnected(A, BT, num_hidden=n, no_bias=True), sync_mxnet),
    }
    check = mx.nd.FullyConnected(A, BT, num_hidden=n, no_bias=True).asnumpy()
    if not np.allclose(check, mx.nd.dot(A, B).asnumpy(), rtol=1e-3, atol=1e-2):
        raise RuntimeError("FullyConnected(A, B.T) does not equal dot(A, B): routes differ")
    out = _time_routes(n, routes, rounds, budget_s)
    out["mx_openblas"] = _mx_openblas()
    out["blas_libraries"] = _blas_libraries()
    out["env"] = {k: os.environ[k] for k in BLAS_VARS if k in os.environ}
    out["version"] = mx.__version__
    return out


def probe_tf(n: int = 2048, rounds: int = 5, budget_s: float = 20.0,
             intra_op: int | None = None) -> dict[str, Any]:
    """NumPy vs TensorFlow ``tf.matmul`` (eager, on the CPU) on n x n float32, in rounds."""
    import numpy as np  # noqa: PLC0415

    from helpers.frameworks import import_tensorflow, startup_log  # noqa: PLC0415

    tf = import_tensorflow()
    if intra_op:
        tf.config.threading.set_intra_op_parallelism_threads(intra_op)
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    with tf.device("/CPU:0"):
        A, B = tf.constant(a), tf.constant(b)
        if not np.allclose(tf.matmul(A, B).numpy(), a @ b, rtol=1e-3, atol=1e-2):
            raise RuntimeError("tf.matmul disagrees with NumPy")
        sync = lambda _r: tf.test.experimental.sync_devices()  # noqa: E731
        routes = {"numpy": (lambda: a @ b, lambda _r: None),
                  "tensorflow matmul": (lambda: tf.matmul(A, B), sync)}
        out = _time_routes(n, routes, rounds, budget_s)
    log = startup_log()
    out["onednn"] = ("oneDNN custom operations are on" in log
                     if os.environ.get("TF_ENABLE_ONEDNN_OPTS") != "0" else False)
    out["intra_op_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
    out["env"] = {k: os.environ[k] for k in TF_VARS if k in os.environ}
    out["version"] = tf.__version__
    out["blas_libraries"] = _blas_libraries()
    return out


def probe_gpu(sizes: tuple[int, ...] = (2048, 4096, 8192), rounds: int = 5) -> dict[str, Any]:
    """Float32 matmul on GPU 0 through TensorFlow (cuBLAS) and MXNet, against the best seen.

    The device's cuBLAS peak is taken as the best float32 GFLOP/s TensorFlow's matmul
    (a direct cuBLAS SGEMM call, TF32 off) reaches over ``sizes``; TF32 is shown apart.
    """
    from helpers.frameworks import import_mxnet, import_tensorflow  # noqa: PLC0415

    tf = import_tensorflow()
    gpus = tf.config.list_physical_devices("GPU")
    out: dict[str, Any] = {"gpus": len(gpus)}
    if not gpus:
        return out
    sync = lambda _r: tf.test.experimental.sync_devices()  # noqa: E731
    tf_gflops: dict[int, float] = {}
    with tf.device("/GPU:0"):
        tf.config.experimental.enable_tensor_float_32_execution(False)
        for n in sorted(sizes):
            A = tf.random.uniform((n, n))
            B = tf.random.uniform((n, n))
            t = interleaved({"tf": (lambda a=A, b=B: tf.matmul(a, b), sync)},
                            rounds=rounds, warmup=2)
            tf_gflops[n] = gflops_matmul(n, median(t["tf"]))
        n = max(sizes)  # A and B are n x n now
        tf.config.experimental.enable_tensor_float_32_execution(True)
        t = interleaved({"tf32": (lambda: tf.matmul(A, B), sync)}, rounds=rounds, warmup=2)
        tf.config.experimental.enable_tensor_float_32_execution(False)
    peak = max(tf_gflops.values())
    out.update(n=n, tf_gflops_by_size={str(k): v for k, v in tf_gflops.items()},
               cublas_peak_gflops=peak, tf_vs_peak=tf_gflops[n] / peak,
               tf32_gflops=gflops_matmul(n, median(t["tf32"])))
    mx = import_mxnet()
    if mx.context.num_gpus() > 0:
        ctx = mx.gpu(0)
        A = mx.nd.random.uniform(shape=(n, n), ctx=ctx)
        B = mx.nd.random.uniform(shape=(n, n), ctx=ctx)
        t = interleaved({"mx": (lambda: mx.nd.dot(A, B), sync_mxnet)},
                        rounds=rounds, warmup=2)
        out["mx_gflops"] = gflops_matmul(n, median(t["mx"]))
        out["mx_vs_peak"] = out["mx_gflops"] / peak
    else:
        out["mx_gflops"] = None
        out["mx_note"] = "this MXNet build has no CUDA (install an mxnet-cu* wheel)"
    return out


def probe(kind: str, **options: Any) -> dict[str, Any]:
    """Dispatch for the child process: ``kind`` is ``mx``, ``tf`` or ``gpu``."""
    probes = {"mx": probe_mx, "tf": probe_tf, "gpu": probe_gpu}
    if kind not in probes:
        raise ValueError(f"unknown probe {kind!r}; use one of {sorted(probes)}")
    return probes[kind](**options)


# -- the section (runs the probes) ----------------------------------------------------
def measure(n: int = 2048, rounds: int = 5, budget_s: float = 20.0,
            timeout: float = 240.0, gpu: bool = False) -> dict[str, Any]:
    """Run every configuration's probe; the ``series`` rows give the headline figures."""
    from bench.subproc import run_json  # noqa: PLC0415

    cores = physical_cores()
    coretype = openblas_coretype_for(frozenset(cpu_flags()))
    result: dict[str, Any] = {"n": n, "physical_cores": cores, "coretype_choice": coretype,
                              "mxnet": [], "tensorflow": []}
    for framework, configs in (("mx", mx_configs(cores, coretype)), ("tf", tf_configs())):
        for config in configs:
            options: dict[str, Any] = {"kind": framework, "n": n, "rounds": rounds,
                                       "budget_s": budget_s}
            if framework == "mx":
                options["helper"] = config["helper"]
            elif config.get("intra_op"):
                options["intra_op"] = config["intra_op"]
            row = {k: config[k] for k in ("name", "what")}
            try:
                row.update(run_json("bench.matmul", options, env=config["env"],
                                    unset=tuple(config["unset"]), timeout=timeout,
                                    name=f"matmul-{framework}"))
            except (RuntimeError, TimeoutError) as exc:
                row["error"] = str(exc)
            result["mxnet" if framework == "mx" else "tensorflow"].append(row)
    if gpu:
        try:
            result["gpu"] = run_json("bench.matmul", {"kind": "gpu"}, timeout=timeout,
                                     name="matmul-gpu")
        except (RuntimeError, TimeoutError) as exc:
            result["gpu"] = {"error": str(exc)}
    return result


def headline(section: dict[str, Any], framework: str, route: str) -> float | None:
    """The ``series`` configuration's ratio for ``route``, None if it was not measured."""
    for row in section.get(framework, []):
        if row.get("name") == "series":
            return row.get("routes", {}).get(route, {}).get("vs_blas")
    return None


if __name__ == "__main__":
    from bench.subproc import child_main

    sys.exit(child_main(probe))
