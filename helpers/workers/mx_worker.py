"""Both sides of a local MXNet cluster: what a worker program calls, and (run as a program,
``python -m helpers.workers.mx_worker``) the ps-lite scheduler or server.

A worker talks to its launcher (:mod:`helpers.mx_cluster`) through its log: :func:`connect`
prints :data:`READY` once every server and worker has registered, ``RESULT {json}`` lines
(:func:`report`) carry the numbers. MXNet is imported only after the checks.
"""

import argparse
import os
import socket
import statistics
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from helpers.frameworks import import_mxnet
from helpers.machine import require_int
from helpers.measure import benchmark
from helpers.output import Table
from helpers.processes import port_bindable
from helpers.workers import common
from helpers.workers.common import READY

DIST_KINDS = ("dist_sync", "dist_async", "dist_sync_device", "dist_device_sync")
REQUIRED_ENV = ("DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER",
                "DMLC_NUM_WORKER")


def connect(kind: str = "dist_sync") -> Any:
    """Create the distributed kvstore ``kind``, announce readiness, and make an uncaught
    exception end the process at once (exit code 1): by default a worker that raises waits
    in ps-lite's shutdown barrier for workers that wait for its next push, and all hang."""
    kv = import_mxnet().kv.create(kind)
    sys.excepthook = _exit_at_once
    print(f"{READY}: rank {kv.rank} of {kv.num_workers} ({kv.type})", flush=True)
    return kv


def _exit_at_once(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    sys.__excepthook__(kind, value, tb)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(1)


def say(kv: Any, message: str) -> None:
    """One progress line, prefixed with the worker's rank (ranks are given by the scheduler)."""
    print(f"[worker {kv.rank}] {message}", flush=True)


def report(kv: Any, **values: Any) -> None:
    common.report(rank=kv.rank, num_workers=kv.num_workers, **values)


def message_key(first_key: int | str, index: int) -> int | str:
    """The key :func:`time_push_pull` uses for its ``index``-th message size."""
    return first_key + index if isinstance(first_key, int) else f"{first_key}{index}"


def time_push_pull(kv: Any, sizes_bytes: Sequence[int], repeat: int = 10, warmup: int = 2,
                   first_key: int | str = 1000, init: bool = True) -> list[dict[str, Any]]:
    """Median and best seconds of one push followed by a pull of ``size`` bytes, per size
    (each round ends in waitall: MXNet returns from both before the bytes have moved).
    A kvstore takes int keys or str keys, never both: ``first_key`` says which (N: N, N+1,
    ...; S: S0, S1, ...), so it can share a store with Gluon's Trainer (int keys 0, 1, ...).
    ``init=False`` uses keys every worker initialised before (``kv.init`` is collective)."""
    mx = import_mxnet()
    rows = []
    for i, size in enumerate(sizes_bytes):
        key, n = message_key(first_key, i), size // 4
        if init:
            kv.init(key, mx.nd.zeros((n,)))
        value, out = mx.nd.ones((n,)), mx.nd.zeros((n,))
        samples = benchmark(lambda k=key, v=value, o=out: (kv.push(k, v), kv.pull(k, out=o)),
                            sync=lambda _: mx.nd.waitall(), warmup=warmup,
                            repeat=repeat).samples
        rows.append({"bytes": 4 * n, "median_s": statistics.median(samples),
                     "best_s": min(samples)})
    return rows


def training_table(records: Sequence[dict[str, Any]]) -> Table:
    """One row per worker of ``helpers.workers.mx_train`` results (medians over timed steps)."""
    return Table(["rank", "task", "kvstore", "local batch", "compute ms", "comm ms",
                  "timed loop s", "train loss", "test acc", "weights (last pull)",
                  "weights (after barrier)"],
                 [[r["rank"], r.get("task"), r["kvstore"], r["local_batch"],
                   1e3 * statistics.median(r["compute_s"]), 1e3 * statistics.median(r["comm_s"]),
                   r["loop_seconds"], r["train_loss"], r["test_accuracy"], r["digest_last"],
                   r["digest_synced"]] for r in records])


def median_step_seconds(records: Sequence[dict[str, Any]]) -> float:
    """Median seconds per step (compute + communication) of the slowest worker, whom every
    synchronous step waits for; the median leaves out steps slowed by other programs."""
    return max(statistics.median(map(sum, zip(r["compute_s"], r["comm_s"], strict=True)))
               for r in records)


def dmlc_env_problem(environ: Mapping[str, str] | None = None,
                     roles: Sequence[str] = ("worker",)) -> str | None:
    """Why this process cannot join a ps-lite cluster in one of ``roles``, or None: MXNet
    does not check the ``DMLC_*`` variables (a missing port segfaults a scheduler, a count
    ``abc`` reads as 0 and the processes wait for each other forever)."""
    env = os.environ if environ is None else environ
    if missing := [name for name in REQUIRED_ENV if not env.get(name)]:
        return (f"{', '.join(missing)} not set: this program is a process of an MXNet "
                "cluster; start it with helpers.mx_cluster.LocalMXCluster, or set the "
                "variables printed by helpers.mx_cluster.shell_commands()")
    if (role := env["DMLC_ROLE"]) not in roles:
        servers = "servers and the scheduler run python -m helpers.workers.mx_worker"
        other = {"scheduler": servers, "server": servers, "worker": "workers run a worker "
                 "program such as helpers.workers.mx_pushpull"}.get(
                     role, "DMLC_ROLE is one of scheduler, server, worker")
        return f"DMLC_ROLE is {role!r} but this program runs the {'/'.join(roles)} role; {other}"
    try:
        for name, maximum in (("DMLC_PS_ROOT_PORT", 65535), ("DMLC_NUM_SERVER", 10_000),
                              ("DMLC_NUM_WORKER", 10_000)):
            text = env[name].strip()
            require_int(name, int(text) if text.isdigit() else text, 1, maximum)
    except ValueError as error:
        return str(error)
    for name in (n for n in ("DMLC_PS_ROOT_URI", "DMLC_NODE_HOST") if env.get(n)):
        try:
            socket.getaddrinfo(env[name], None)
        except (socket.gaierror, UnicodeError):
            return f"{name}={env[name]!r} does not resolve to an address; give a host name or IP"
        if name == "DMLC_NODE_HOST" and not port_bindable(0, env[name]):  # it listens there
            return (f"DMLC_NODE_HOST={env[name]!r} is not an address of this machine, so this "
                    "process could not listen there; set it to this machine's own address")
    return None


def main(argv: list[str] | None = None) -> str:
    """The scheduler or a server (``DMLC_ROLE``): nothing to write, as importing MXNet in
    such a process serves pushes and pulls (and runs the optimizer the workers send) until
    every worker has finished, then exits the process from inside ``import mxnet``."""
    parser = argparse.ArgumentParser(description="A ps-lite scheduler or server (DMLC_ROLE).")
    parser.parse_args(argv)
    if problem := dmlc_env_problem(roles=("scheduler", "server")):
        parser.error(problem)
    import_mxnet()  # a scheduler or server never returns from this call
    return "returned from `import mxnet`: DMLC_ROLE is not 'scheduler' or 'server'"


if __name__ == "__main__":
    sys.exit(main())
