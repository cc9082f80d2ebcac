"""How fast MXNet copies between contexts, next to a plain NumPy memory copy.

On a CPU-only machine the copy is ``cpu(0) -> cpu(1)``: both contexts are the same host
memory, so the copy is a memcpy scheduled through MXNet's engine, and NumPy's
``np.copyto`` into a preallocated array of the same size is the yardstick (both sides
copy into preallocated memory, so no allocation is timed). The figure is the median of
paired ratios ``t_numpy / t_mxnet`` (= MXNet bandwidth / NumPy bandwidth).

With a GPU the same section measures host-to-device and device-to-host bandwidth
through MXNet (``copyto(gpu(0))``) and TensorFlow (``tf.identity`` under
``tf.device``), synchronised.
"""

from __future__ import annotations

import sys
from typing import Any

from bench.stats import interleaved, median, paired_ratios
from helpers.measure import sync_mxnet


def gbps(nbytes: int, seconds: float) -> float:
    """Gigabytes (1e9 bytes) per second."""
    if nbytes <= 0 or not seconds > 0:
        raise ValueError(f"need bytes > 0 and seconds > 0, got {nbytes!r}, {seconds!r}")
    return nbytes / seconds / 1e9


def _row(name: str, nbytes: int, times: list[float], ref: list[float] | None) -> dict[str, Any]:
    row: dict[str, Any] = {"route": name, "bytes": nbytes, "gbps": gbps(nbytes, median(times)),
                           "seconds": times}
    if ref is not None:
        row["vs_memcpy"] = median(paired_ratios(ref, times))
    return row


def measure(sizes_mb: tuple[float, ...] = (4.0, 64.0), headline_mb: float = 64.0,
            rounds: int = 9, gpu_mb: float = 256.0, gpu: bool = False) -> dict[str, Any]:
    """Paired MXNet-vs-NumPy copies per size; GPU bandwidth when a GPU is present."""
    import numpy as np  # noqa: PLC0415

    from helpers.frameworks import import_mxnet  # noqa: PLC0415

    if headline_mb not in sizes_mb:
        raise ValueError(f"headline_mb={headline_mb} must be one of sizes_mb={sizes_mb}")
    mx = import_mxnet()
    rows = []
    for mb in sizes_mb:
        count = int(mb * 2**20) // 4
        nbytes = count * 4
        host = np.random.default_rng(2).random(count, dtype=np.float32)
        host_dst = np.empty_like(host)
        src = mx.nd.array(host, ctx=mx.cpu(0))
        dst = mx.nd.zeros(count, ctx=mx.cpu(1))
        mx.nd.waitall()
        samples = interleaved({
            "numpy copyto": (lambda h=host, d=host_dst: np.copyto(d, h), lambda _r: None),
            "mxnet copyto cpu(0)->cpu(1)": (lambda s=src, d=dst: s.copyto(d), sync_mxnet),
            "mxnet as_in_context (allocates)": (
                lambda s=src: s.as_in_context(mx.cpu(1)), sync_mxnet),
        }, rounds=rounds, warmup=1)
        if not np.array_equal(dst.asnumpy(), host):
            raise RuntimeError("the MXNet copy does not hold the source values")
        ref = samples["numpy copyto"]
        rows += [_row(name, nbytes, t, None if name == "numpy copyto" else ref)
                 for name, t in samples.items()]
    headline = next(r for r in rows if r["route"].startswith("mxnet copyto")
                    and r["bytes"] == int(headline_mb * 2**20) // 4 * 4)
    result: dict[str, Any] = {"rows": rows, "headline_bytes": headline["bytes"],
                              "copy_vs_memcpy": headline["vs_memcpy"]}
    # TensorFlow is imported only when the machine has a GPU (nvidia-smi answers).
    result["gpu"] = _gpu_bandwidth(gpu_mb, rounds) if gpu else {"gpus": 0, "rows": []}
    return result


def _gpu_bandwidth(mb: float, rounds: int) -> dict[str, Any]:
    """Host<->device GB/s through MXNet and TensorFlow; ``{"gpus": 0}`` without a GPU."""
    import numpy as np  # noqa: PLC0415

    from helpers.frameworks import import_mxnet, import_tensorflow  # noqa: PLC0415

    tf = import_tensorflow()
    mx = import_mxnet()
    gpus = len(tf.config.list_physical_devices("GPU"))
    out: dict[str, Any] = {"gpus": gpus, "rows": []}
    if not gpus and mx.context.num_gpus() == 0:
        return out
    count = int(mb * 2**20) // 4
    nbytes = count * 4
    host = np.random.default_rng(3).random(count, dtype=np.float32)
    routes = {}
    if mx.context.num_gpus() > 0:
        h = mx.nd.array(host, ctx=mx.cpu())
        d = mx.nd.zeros(count, ctx=mx.gpu(0))
        h_back = mx.nd.zeros(count, ctx=mx.cpu())
        routes["mxnet host->gpu(0)"] = (lambda: h.copyto(d), sync_mxnet)
        routes["mxnet gpu(0)->host"] = (lambda: d.copyto(h_back), sync_mxnet)
    if gpus:
        sync = lambda _r: tf.test.experimental.sync_devices()  # noqa: E731
        with tf.device("/CPU:0"):
            th = tf.constant(host)
        with tf.device("/GPU:0"):
            tg = tf.identity(th)

        def to_gpu() -> Any:
            with tf.device("/GPU:0"):
                return tf.identity(th)

        def to_host() -> Any:
            with tf.device("/CPU:0"):
                return tf.identity(tg)

        routes["tensorflow host->GPU:0"] = (to_gpu, sync)
        routes["tensorflow GPU:0->host"] = (to_host, sync)
    samples = interleaved(routes, rounds=rounds, warmup=2)
    out["rows"] = [_row(name, nbytes, t, None) for name, t in samples.items()]
    return out


if __name__ == "__main__":
    from bench.subproc import child_main

    sys.exit(child_main(measure))
