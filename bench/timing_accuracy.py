"""Is ``helpers.measure`` right? Compare it with an independent clock on the same work.

The workload is a batch of float32 matrix products sized so one synchronised run takes
about ``target_s``: independent products for MXNet, a chain of dependent ones for
TensorFlow (its graph optimiser would merge identical independent products into one).
Two independent references:

* **bracketing (the headline)**: a bare clock written here, ``time.monotonic_ns()`` (not
  the helper's ``perf_counter``), is read before calling
  ``helpers.measure.benchmark(work, sync=..., warmup=0, repeat=1)`` and again after the
  framework's own wait (``mx.nd.waitall()`` / ``tf.test.experimental.sync_devices()``),
  so both clocks time *the same execution*. If the helper stopped its clock before the
  work was done, the outer clock would see the rest of the work and the two would
  disagree; the machine's load affects both equally, so noise cancels.
* **separate runs**: the same bare loop times its own run of the workload, alternating
  with the helper's run. This shows how much two runs of the same work differ on this
  machine (load noise), which is not the helper's error.

``timing_error`` is ``|median(helper / reference) - 1|`` over the bracketed rounds, the
larger of MXNet's and TensorFlow's. The same rounds time MXNet *without*
synchronisation (``sync="none"``; the outer clock waits for the engine) to show how far
from the truth an unsynchronised timing of an asynchronous engine is.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from bench.stats import median, paired_ratios, relative_error, spread
from helpers.measure import sync_mxnet


def batch_size_for(one_run_s: float, target_s: float, most: int = 64) -> int:
    """How many products make one run last about ``target_s`` (at least 1, at most ``most``)."""
    if not one_run_s > 0 or not target_s > 0:
        raise ValueError(f"times must be > 0, got one_run_s={one_run_s!r}, target_s={target_s!r}")
    return max(1, min(most, math.ceil(target_s / one_run_s)))


def _reference(work: Any, wait: Any) -> float:
    """The bare reference: an independent clock around the work and the framework's wait."""
    start = time.monotonic_ns()
    wait(work())
    return (time.monotonic_ns() - start) / 1e9


def _bracket(work: Any, sync: str, wait: Any) -> tuple[float, float]:
    """(helper's seconds, outer clock's seconds) for one and the same execution."""
    from helpers.measure import benchmark  # noqa: PLC0415

    start = time.monotonic_ns()
    inner = benchmark(work, sync=sync, warmup=0, repeat=1).samples[0]
    wait(None)
    return inner, (time.monotonic_ns() - start) / 1e9


def paired_error(inner: list[float], outer: list[float]) -> float:
    """``|median(inner_i / outer_i) - 1|``: how far the helper is from the outer clock."""
    return abs(median(paired_ratios(inner, outer)) - 1.0)


def _compare(work: Any, sync: str, wait: Any, wait_result: Any, rounds: int,
             unsync: bool = False) -> dict[str, Any]:
    inner, outer, separate = [], [], []
    unsynced, unsynced_outer = [], []
    for r in range(rounds):
        if r % 2:
            separate.append(_reference(work, wait_result))
            h, o = _bracket(work, sync, wait)
        else:
            h, o = _bracket(work, sync, wait)
            separate.append(_reference(work, wait_result))
        inner.append(h)
        outer.append(o)
        if unsync:
            u, uo = _bracket(work, "none", wait)
            unsynced.append(u)
            unsynced_outer.append(uo)
    out: dict[str, Any] = {
        "helper_s": inner, "outer_s": outer, "separate_s": separate,
        "error": paired_error(inner, outer),
        "helper_median_s": median(inner), "outer_median_s": median(outer),
        "separate_median_s": median(separate),
        "separate_runs_difference": relative_error(median(inner), median(separate)),
        "separate_spread": spread(separate),
    }
    if unsync:
        out["unsynchronised_s"] = unsynced
        out["unsynchronised_median_s"] = median(unsynced)
        out["unsynchronised_fraction"] = median(paired_ratios(unsynced, unsynced_outer))
    return out


def measure(n: int = 512, target_s: float = 0.1, rounds: int = 9) -> dict[str, Any]:
    """Both frameworks' comparisons and the headline ``timing_error`` (the worse one)."""
    import numpy as np  # noqa: PLC0415

    from helpers.frameworks import import_mxnet, import_tensorflow  # noqa: PLC0415

    mx = import_mxnet()
    tf = import_tensorflow()
    rng = np.random.default_rng(1)
    a = rng.random((n, n), dtype=np.float32)
    result: dict[str, Any] = {"n": n, "rounds": rounds,
                              "method": "outer monotonic_ns clock around the same execution"}

    A = mx.nd.array(a)
    mx.nd.dot(A, A).wait_to_read()  # first call: allocation and kernel set-up
    one = median([_reference(lambda: mx.nd.dot(A, A), sync_mxnet)
                  for _ in range(3)])
    k_mx = batch_size_for(one, target_s)

    def mx_work() -> list[Any]:
        return [mx.nd.dot(A, A) for _ in range(k_mx)]

    mx_work()
    mx.nd.waitall()
    result["mxnet"] = _compare(mx_work, "mxnet", sync_mxnet, sync_mxnet, rounds, unsync=True)
    result["mxnet"]["products"] = k_mx

    T = tf.constant(a)
    W = tf.constant(a * (2.0 / n))  # largest eigenvalue about 1: the chain stays finite

    @tf.function
    def tf_batch(x: Any, k: int) -> Any:
        # A chain: each product needs the previous one. Independent copies of the same
        # product would be merged into one by TensorFlow's graph optimiser.
        for _ in range(k):
            x = tf.matmul(x, W)
        return x

    tf_batch(T, 1).numpy()  # trace first: calibrate on the run, not on the tracing
    one = median([_reference(lambda: tf_batch(T, 1), lambda r: r.numpy()) for _ in range(3)])
    k_tf = batch_size_for(one, target_s)
    tf_work = lambda: tf_batch(T, k_tf)  # noqa: E731
    tf_work().numpy()
    tf_wait = lambda _r: tf.test.experimental.sync_devices()  # noqa: E731
    result["tensorflow"] = _compare(tf_work, "tensorflow", tf_wait, lambda r: r.numpy(), rounds)
    result["tensorflow"]["products"] = k_tf
    result["timing_error"] = max(result["mxnet"]["error"], result["tensorflow"]["error"])
    return result


if __name__ == "__main__":
    from bench.subproc import child_main

    sys.exit(child_main(measure))
