"""Start-up and tear-down of a local TensorFlow cluster, next to a fixed-sleep launch.

The cluster is the series' own: :class:`helpers.tf_cluster.LocalTFCluster` with two
workers running ``helpers.workers.tf_server``, ready when every task's gRPC port
accepts connections, stopped with SIGTERM then SIGKILL. Measured several times; the
figures are medians.

For comparison the official multi-worker tutorial starts the first worker in the
background, waits a fixed ``time.sleep(10)``, then starts the second one. That launch is
run here too (same program, same ports scheme, through ProcessGroup) and reports whether
the first worker was in fact ready when the sleep ended. A single worker started alone
shows how much of the two-worker time is just one process importing TensorFlow.
"""

from __future__ import annotations

import time
from typing import Any

from bench.stats import median
from helpers.machine import require_int

WORKER = "helpers.workers.tf_server"


def _gone(pids: list[int]) -> list[int]:
    """The pids from ``pids`` that still exist (and are not zombies)."""
    import psutil  # noqa: PLC0415

    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _cluster_once(workers: int, ready_timeout: float) -> dict[str, Any]:
    from helpers.tf_cluster import LocalTFCluster  # noqa: PLC0415

    with LocalTFCluster(WORKER, workers=workers, ready_timeout=ready_timeout) as cluster:
        ready = cluster.start()
        per_task = dict(cluster.ready_seconds)
        pids = [p.pid for p in cluster.group.processes.values()]
        teardown = cluster.stop()
    return {"ready_s": ready, "per_task_s": per_task, "teardown_s": teardown,
            "left_after_stop": _gone(pids)}


def _fixed_sleep_launch(sleep_s: float, ready_timeout: float) -> dict[str, Any]:
    """The tutorial's launch: worker 0, a fixed sleep, worker 1; then wait for both."""
    from helpers.processes import ProcessGroup, port_accepts, python_module_command  # noqa: PLC0415
    from helpers.tf_cluster import cluster_spec, tf_config  # noqa: PLC0415

    spec = cluster_spec(2)
    ports = [int(a.rsplit(":", 1)[1]) for a in spec["worker"]]
    command = python_module_command(WORKER)
    with ProcessGroup("tutorial-launch") as group:
        began = time.monotonic()
        first = group.start("worker-0", command, {"TF_CONFIG": tf_config(spec, "worker", 0)})
        time.sleep(sleep_s)
        first_ready = port_accepts(ports[0])
        second = group.start("worker-1", command, {"TF_CONFIG": tf_config(spec, "worker", 1)})
        group.wait_for_port(second, ports[1], ready_timeout)
        group.wait_for_port(first, ports[0], ready_timeout)
        ready = time.monotonic() - began
        pids = [p.pid for p in group.processes.values()]
        teardown = group.stop()
    return {"sleep_s": sleep_s, "ready_s": ready, "first_ready_when_sleep_ended": first_ready,
            "teardown_s": teardown, "left_after_stop": _gone(pids)}


def measure(repeats: int = 3, tutorial_sleep_s: float = 10.0,
            ready_timeout: float = 120.0) -> dict[str, Any]:
    """Ready and teardown seconds of the 2-worker cluster (medians) and the comparisons."""
    require_int("repeats", repeats, 1)
    runs = [_cluster_once(2, ready_timeout) for _ in range(repeats)]
    single = _cluster_once(1, ready_timeout)
    tutorial = _fixed_sleep_launch(tutorial_sleep_s, ready_timeout)
    ready = [r["ready_s"] for r in runs]
    teardown = [r["teardown_s"] for r in runs]
    left = sorted({pid for r in [*runs, single, tutorial] for pid in r["left_after_stop"]})
    return {
        "workers": 2, "worker_program": WORKER, "runs": runs, "single_worker": single,
        "fixed_sleep": tutorial,
        "cluster_ready_seconds": median(ready), "ready_max_s": max(ready),
        "cluster_teardown_seconds": median(teardown), "teardown_max_s": max(teardown),
        "left_after_stop": left,
    }
