"""Both sides of an MXNet cluster's processes: the scheduler and servers, and the workers' kit.

``python -m helpers.workers.mx_worker`` is the ps-lite scheduler or server (by
``DMLC_ROLE``): there is nothing to write, because importing MXNet in such a process
creates the kvstore server, serves pushes and pulls (running the optimizer the workers
send) until every worker has finished, and exits from inside ``import mxnet``. The
``DMLC_*`` variables are checked first: MXNet crashes on a missing port and waits forever
on a count it cannot read. Security: ps-lite has no authentication and a server
*unpickles* what workers send (MXNet's ``kvstore_server.py``), so whoever reaches its port
can run code as you; it listens on ``DMLC_NODE_HOST``: 127.0.0.1 on one machine, a
private network, VPN or SSH tunnel across several.

A worker program (``python -m helpers.workers.mx_*``) and the launcher in
:mod:`helpers.mx_cluster` talk through the worker's log, which is all a real cluster
has in common too. This module holds both ends of that small protocol so they cannot
drift apart:

* :func:`connect` creates the distributed kvstore and prints :data:`READY` once MXNet
  returns it, which happens only after the scheduler has registered every server and
  worker: the launcher reads that line as "the cluster has formed";
* :func:`report` prints one ``RESULT {json}`` line; :func:`parse_results` reads them
  back, so numbers travel from worker processes into the notebook without files;
* :func:`time_push_pull` measures push + pull round trips over the kvstore, the raw
  data for a latency-bandwidth (alpha-beta) model of communication.

Nothing here imports MXNet at module level: worker programs call
:func:`helpers.frameworks.import_mxnet` themselves, first thing, and the functions here
reuse that import.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import statistics
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from helpers.frameworks import import_mxnet
from helpers.machine import require_int
from helpers.output import Table

READY = "mx-worker ready"
RESULT_PREFIX = "RESULT "
DIST_KINDS = ("dist_sync", "dist_async", "dist_sync_device", "dist_device_sync")
REQUIRED_ENV = ("DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER",
                "DMLC_NUM_WORKER")


def dmlc_env_problem(environ: Mapping[str, str] | None = None,
                     roles: Sequence[str] = ("worker",)) -> str | None:
    """Why this process cannot join a ps-lite cluster in one of ``roles``, or None.

    Checks what MXNet reads without checking: every ``DMLC_*`` variable set, the role
    expected, the port a port, the counts whole numbers. Unchecked, a missing port
    crashes a scheduler inside MXNet (a segfault) and a count such as ``abc`` is read
    as 0 and makes the processes wait for each other forever.
    """
    env = os.environ if environ is None else environ
    missing = [name for name in REQUIRED_ENV if not env.get(name)]
    if missing:
        return (f"{', '.join(missing)} not set: this program is a process of an MXNet "
                "cluster; start it with helpers.mx_cluster.LocalMXCluster, or set the "
                "variables printed by helpers.mx_cluster.shell_commands()")
    role = env["DMLC_ROLE"]
    if role not in roles:
        other = ("servers and the scheduler run helpers.workers.mx_worker" if role in (
            "server", "scheduler") else "workers run a worker program such as "
            "helpers.workers.mx_pushpull" if role == "worker" else
            "DMLC_ROLE is one of scheduler, server, worker")
        return f"DMLC_ROLE is {role!r} but this program runs the {'/'.join(roles)} role; {other}"
    try:
        for name, minimum, maximum in (("DMLC_PS_ROOT_PORT", 1, 65535),
                                       ("DMLC_NUM_SERVER", 1, 10_000),
                                       ("DMLC_NUM_WORKER", 1, 10_000)):
            text = env[name].strip()
            require_int(name, int(text) if text.isdigit() else text, minimum, maximum)
    except ValueError as error:
        return str(error)
    for name in ("DMLC_PS_ROOT_URI", "DMLC_NODE_HOST"):
        host = env.get(name)
        if host:
            try:
                socket.getaddrinfo(host, None)
            except (socket.gaierror, UnicodeError):
                return f"{name}={host!r} does not resolve to an address; give a host name or IP"
    return None


def check_worker_env(environ: Mapping[str, str] | None = None) -> None:
    """Raise RuntimeError, saying what to set, unless this process is a ps-lite worker.

    Without these variables MXNet's distributed kvstore waits for a scheduler that will
    never answer; failing at once with the list of missing variables is kinder.
    """
    problem = dmlc_env_problem(environ, ("worker",))
    if problem:
        raise RuntimeError(problem)


def _exit_at_once(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    """Print the traceback and end the process without MXNet's shutdown barrier."""
    sys.__excepthook__(kind, value, tb)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(1)


def connect(kind: str = "dist_sync") -> Any:
    """Create the distributed kvstore ``kind`` and announce readiness on stdout.

    It also makes an uncaught exception end the process at once with exit code 1. By
    default a worker that raises does not exit: on the way out MXNet's kvstore waits in
    ps-lite's shutdown barrier for workers that are themselves waiting for this one's
    next push, so the whole cluster hangs and the error is only found by a timeout.
    """
    if kind not in DIST_KINDS:
        raise ValueError(f"kind must be one of {DIST_KINDS}, not {kind!r}")
    check_worker_env()
    kv = import_mxnet().kv.create(kind)
    sys.excepthook = _exit_at_once
    print(f"{READY}: rank {kv.rank} of {kv.num_workers} ({kv.type})", flush=True)
    return kv


def say(kv: Any, message: str) -> None:
    """One progress line, prefixed with the worker's rank (ranks are given by the scheduler)."""
    print(f"[worker {kv.rank}] {message}", flush=True)


def report(kv: Any, **values: Any) -> None:
    """Print one machine-readable result line for the launcher to collect."""
    record = {"rank": kv.rank, "num_workers": kv.num_workers, **values}
    print(RESULT_PREFIX + json.dumps(record, sort_keys=True), flush=True)


def parse_results(text: str) -> list[dict[str, Any]]:
    """Every ``RESULT {json}`` line in ``text``, in order."""
    out = []
    for line in text.splitlines():
        if line.startswith(RESULT_PREFIX):
            out.append(json.loads(line[len(RESULT_PREFIX):]))
    return out


def training_table(records: Sequence[dict[str, Any]]) -> Table:
    """One row per worker of ``helpers.workers.mx_train`` results (medians over timed steps)."""
    table = Table(["rank", "task", "kvstore", "local batch", "compute ms", "comm ms",
                   "timed loop s", "train loss", "test acc", "weights (last pull)",
                   "weights (after barrier)"])
    for r in records:
        table.append([r["rank"], r.get("task"), r["kvstore"], r["local_batch"],
                      1e3 * statistics.median(r["compute_s"]),
                      1e3 * statistics.median(r["comm_s"]), r["loop_seconds"],
                      r["train_loss"], r["test_accuracy"], r["digest_last"],
                      r["digest_synced"]])
    return table


def median_step_seconds(records: Sequence[dict[str, Any]]) -> float:
    """Median seconds per training step (compute + communication) of the slowest worker.

    In synchronous training every step waits for the slowest worker, so its step time
    is the cluster's; the median keeps a few steps slowed by other programs out of it.
    """
    if not records:
        raise ValueError("no worker results: did the workers print their RESULT lines?")
    return max(statistics.median(np.add(r["compute_s"], r["comm_s"])) for r in records)


def digest(arrays: Iterable[Any]) -> str:
    """A short hash of arrays' exact bytes: equal digests mean bit-identical weights."""
    sha = hashlib.sha256()
    for array in arrays:
        sha.update(array.asnumpy().tobytes() if hasattr(array, "asnumpy") else bytes(array))
    return sha.hexdigest()[:16]


def message_key(first_key: int | str, index: int) -> int | str:
    """The key :func:`time_push_pull` uses for its ``index``-th message size."""
    return first_key + index if isinstance(first_key, int) else f"{first_key}{index}"


def time_push_pull(
    kv: Any, sizes_bytes: Sequence[int], repeat: int = 10, warmup: int = 2,
    first_key: int | str = 1000, init: bool = True,
) -> list[dict[str, Any]]:
    """Median seconds of one push followed by a pull of ``size`` bytes, per size.

    Every worker must call this with the same sizes (dist_sync waits for all of them).
    A kvstore takes int keys or str keys, never both: ``first_key`` says which (an int
    N gives keys N, N+1, ...; a str S gives S0, S1, ...), so it can share a store with
    Gluon's Trainer (int keys 0, 1, ... for its parameters).
    Each round trip ends with ``wait_to_read`` on the pulled array, since MXNet's
    engine returns from ``push``/``pull`` before the bytes have moved.
    ``init=False`` uses keys that every worker has already initialised (``kv.init`` is a
    collective call), so that only some of the workers can time round trips.
    """
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, not {repeat}, {warmup}")
    mx = import_mxnet()
    rows = []
    for i, size in enumerate(sizes_bytes):
        if size < 4:
            raise ValueError(f"message sizes are at least 4 bytes (one float32), not {size}")
        n = size // 4
        key = message_key(first_key, i)
        if init:
            kv.init(key, mx.nd.zeros((n,)))
        value, out = mx.nd.ones((n,)), mx.nd.zeros((n,))
        samples = []
        for r in range(warmup + repeat):
            start = time.perf_counter()
            kv.push(key, value)
            kv.pull(key, out=out)
            out.wait_to_read()
            if r >= warmup:
                samples.append(time.perf_counter() - start)
        rows.append({"bytes": 4 * n, "median_s": statistics.median(samples),
                     "best_s": min(samples), "samples": samples})
    return rows


def main(argv: list[str] | None = None) -> int:
    """The scheduler or a server: check the ``DMLC_*`` variables, then ``import mxnet``."""
    parser = argparse.ArgumentParser(description="a ps-lite scheduler or server (DMLC_ROLE)")
    parser.parse_args(argv)
    problem = dmlc_env_problem(roles=("scheduler", "server"))
    if problem:
        parser.error(problem)
    import_mxnet()  # a scheduler or server never returns from this call
    raise SystemExit(
        "helpers.workers.mx_worker returned from `import mxnet`, so DMLC_ROLE is not "
        "'scheduler' or 'server'; workers run a worker program such as helpers.workers.mx_pushpull"
    )


if __name__ == "__main__":
    sys.exit(main())
