"""Matrix-product speed of TensorFlow and MXNet relative to NumPy's BLAS, and why.

Each configuration runs in its own process (:mod:`bench.subproc`), because what decides
the speed is fixed when the libraries load (:mod:`helpers.measure` explains it):
MXNet's OpenMP pool size and the kernel set of the OpenBLAS inside MXNet's wheel. The
``series`` configuration is MXNet exactly as the notebooks get it, through
``helpers.frameworks.import_mxnet`` and its tuning (all physical cores, a safe OpenBLAS
core type); the others switch that tuning off (``SERIES_MXNET_TUNING=0``) and set one
piece of it at a time, so the report can say what each piece is worth. What the tuning
adds, the core count and the kernel sets all come from the helpers, which are the
series' one place for that knowledge.

Thread and kernel settings inherited from the machine's environment (an
``OPENBLAS_CORETYPE`` exported for every program, say) are removed from every probe, NumPy's
reference included, so NumPy runs its own best kernels and the series configuration is
exactly what ``import_mxnet`` makes of a plain environment; ``measure`` records what it
removed.

``nd.FullyConnected`` computes the same product (``X @ W.T``) through oneDNN instead of
OpenBLAS; TensorFlow's CPU matmul uses oneDNN by default (``TF_ENABLE_ONEDNN_OPTS=0``
turns it off) and sizes its intra-op pool from the cores.

Every probe times NumPy and the framework in alternating rounds in the same process,
so each figure is a paired ratio that the machine's load largely cancels out of.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from bench.stats import gflops_matmul, interleaved, median, paired_ratios, spread
from helpers.frameworks import MXNET_IMPORT_SETTINGS, TUNING_ENV, mxnet_tuning
from helpers.machine import physical_cores
from helpers.measure import (
    MXNET_THREAD_SETTINGS,
    blas_libraries,
    busy_threads,
    kernels_of,
    sync_mxnet,
)

#: Variables that decide TensorFlow's CPU matmul.
TF_VARS = ("TF_ENABLE_ONEDNN_OPTS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


# -- pure logic ----------------------------------------------------------------------
def mx_configs(tuning: dict[str, str]) -> list[dict[str, Any]]:
    """The MXNet configurations compared, each ``{name, what, env, unset}``.

    ``tuning`` is what ``import_mxnet`` adds on this machine (``mxnet_tuning({})``):
    ``series`` gets it the way the notebooks do; ``library defaults`` imports MXNet as
    installed; the others add one of its settings alone.
    """
    untuned = {TUNING_ENV: "0"}
    configs = [
        {"name": "series", "what": "as the notebooks run (helpers.frameworks.import_mxnet)",
         "env": {}, "unset": MXNET_THREAD_SETTINGS},
        {"name": "library defaults", "what": f"{TUNING_ENV}=0, no threading or BLAS variables",
         "env": untuned, "unset": MXNET_THREAD_SETTINGS},
    ]
    for key, name in (("MXNET_OMP_MAX_THREADS", "threads only"),
                      ("OPENBLAS_CORETYPE", "kernels only")):
        if key in tuning:
            configs.append({"name": name, "what": f"{key}={tuning[key]}",
                            "env": {**untuned, key: tuning[key]},
                            "unset": MXNET_THREAD_SETTINGS})
    return configs


def tf_configs() -> list[dict[str, Any]]:
    """The TensorFlow configurations compared (same shape as :func:`mx_configs`)."""
    unset = (*TF_VARS, *MXNET_THREAD_SETTINGS)
    return [
        {"name": "series", "what": "as the notebooks run (helpers.frameworks.import_tensorflow)",
         "env": {}, "unset": MXNET_THREAD_SETTINGS},
        {"name": "oneDNN off", "what": "TF_ENABLE_ONEDNN_OPTS=0",
         "env": {"TF_ENABLE_ONEDNN_OPTS": "0"}, "unset": unset},
        {"name": "1 intra-op thread", "what": "tf.config.threading intra-op = 1",
         "env": {}, "unset": unset, "intra_op": 1},
    ]


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
def _libraries() -> dict[str, Any]:
    """The BLAS and OpenMP libraries loaded in this process and the kernels each chose."""
    table = blas_libraries()
    return {"blas_libraries": table.records(),
            "kernels": {owner: kernels_of(table, owner) for owner in ("mxnet", "numpy")}}


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
    out["threads"] = {name: busy_threads(lambda w=work, s=sync: s(w()))
                      for name, (work, sync) in routes.items()}
    return out


def probe_mx(n: int = 2048, rounds: int = 5, budget_s: float = 20.0) -> dict[str, Any]:
    """NumPy vs MXNet ``nd.dot`` and ``nd.FullyConnected`` on n x n float32, in rounds.

    MXNet is imported the series' way; the configuration's environment decides whether
    ``import_mxnet`` tunes it.
    """
    import numpy as np  # noqa: PLC0415

    from helpers.frameworks import import_mxnet, mxnet_import_settings  # noqa: PLC0415

    mx = import_mxnet()
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
    out.update(_libraries())
    out["import_settings"] = mxnet_import_settings()
    out["env"] = {k: os.environ[k] for k in (*MXNET_IMPORT_SETTINGS, TUNING_ENV)
                  if k in os.environ}
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
    out.update(_libraries())
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

    tuning = mxnet_tuning({})  # what import_mxnet adds in an environment without settings
    result: dict[str, Any] = {"n": n, "physical_cores": physical_cores(), "tuning": tuning,
                              "removed_from_environment": {
                                  k: os.environ[k] for k in MXNET_THREAD_SETTINGS
                                  if k in os.environ},
                              "mxnet": [], "tensorflow": []}
    for framework, configs in (("mx", mx_configs(tuning)), ("tf", tf_configs())):
        for config in configs:
            options: dict[str, Any] = {"kind": framework, "n": n, "rounds": rounds,
                                       "budget_s": budget_s}
            if config.get("intra_op"):
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


def figures(section: dict[str, Any]) -> dict[str, float | None]:
    """The section's figures of ``results.json``, all from the ``series`` rows.

    ``matmul_mx_best_vs_blas`` is the faster of MXNet's two products as the series runs
    (``nd.dot`` through OpenBLAS, ``nd.FullyConnected`` through oneDNN).
    """
    dot = headline(section, "mxnet", "mxnet dot")
    fc = headline(section, "mxnet", "mxnet FullyConnected")
    return {"matmul_tf_vs_blas": headline(section, "tensorflow", "tensorflow matmul"),
            "matmul_mx_vs_blas": dot,
            "matmul_mx_best_vs_blas": max((r for r in (dot, fc) if r is not None), default=None)}


if __name__ == "__main__":
    from bench.subproc import child_main

    sys.exit(child_main(probe))
