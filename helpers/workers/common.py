"""What every worker program shares after its lesson: flags, cluster, results, deadlines.

A worker program is started by a launcher, often on another machine: a bad flag or a bad
launch ends it at once in one clear line (argparse's ``prog: error: ...``, exit code 2),
before TensorFlow or MXNet is imported, never a traceback from deep inside them. It learns
its cluster from TF_CONFIG, SLURM or Kubernetes, gives up on peers that never come, and
sends its numbers back as ``RESULT {json}`` lines on stdout, which the notebook reads from
its log (the TensorFlow timing programs share how they call the strategy's all-reduce and
take this worker's copy of a per-replica result).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from helpers.machine import require_int, require_number
from helpers.workers.mx_worker import RESULT_PREFIX


def check_flags(parser: argparse.ArgumentParser, args: argparse.Namespace,
                ints: Mapping[str, tuple[int, int | None]] | None = None,
                numbers: Mapping[str, Mapping[str, float]] | None = None) -> None:
    """``parser.error`` for the first flag outside its range.

    ``ints`` maps a destination (``global_batch``) to ``(minimum, maximum or None)``;
    ``numbers`` maps one to :func:`~helpers.machine.require_number`'s bounds
    (``{"above": 0}``), which also refuse NaN and infinity. A list value (``nargs``) is
    checked element by element.
    """
    try:
        for dest, (minimum, maximum) in (ints or {}).items():
            for value in _values(getattr(args, dest)):
                require_int(_flag(dest), value, minimum, maximum)
        for dest, bounds in (numbers or {}).items():
            for value in _values(getattr(args, dest)):
                require_number(_flag(dest), value, **bounds)
    except ValueError as error:
        parser.error(str(error))


def check_writable_dir(parser: argparse.ArgumentParser, dest: str, path: str) -> None:
    """``parser.error`` unless ``path`` is (or can be made) a folder this process can write."""
    if not path:
        return
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        parser.error(f"{_flag(dest)} {path!r} cannot be created ({error.strerror}); give a "
                     "folder you can write to")
    if not os.access(folder, os.W_OK | os.X_OK):
        parser.error(f"{_flag(dest)} {path!r} is not writable by this user; give a folder "
                     "you can write to")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


# -- Where a TensorFlow worker program learns its cluster from: TF_CONFIG, SLURM or Kubernetes.
#
# Worker-side code: the programs in this folder call :func:`cluster_resolver` once at
# start-up, and the same program then runs unchanged under the series' local clusters
# (which set ``TF_CONFIG``), under ``srun`` or in a Kubernetes pod.
#
# Before that, :func:`resolver_problem` checks what the chosen source needs (a well-formed
# ``TF_CONFIG`` that places this task in its cluster, SLURM's variables, the
# ``kubernetes`` package) without importing TensorFlow, so a program can reject a bad
# launch at once with a message naming the variable, instead of a traceback from deep
# inside TensorFlow, JSON or gRPC, or a server that starts as ``None:None``.

RESOLVERS = ("tf_config", "slurm", "kubernetes")
#: Jobs a TF_CONFIG cluster may hold.
JOBS = ("chief", "worker", "ps", "evaluator")
#: What SlurmClusterResolver reads; present only inside ``srun``.
SLURM_VARIABLES = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST")

_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^:\s\[\]]+):(\d{1,5})$")


def read_tf_config(text: str | None, resolve_own_host: bool = True) -> dict[str, Any]:
    """The parsed ``TF_CONFIG``, checked; ValueError naming ``TF_CONFIG`` and what is wrong.

    It must be a JSON object with a ``cluster`` of job -> list of ``host:port`` and a
    ``task`` whose ``type`` is one of the cluster's jobs and whose ``index`` is in
    range. With ``resolve_own_host`` this task's own host must resolve (its server
    listens there); the peers' hosts are not looked up, they may come up later.
    """
    example = ('e.g. {"cluster": {"worker": ["127.0.0.1:20000", "127.0.0.1:20001"]}, '
               '"task": {"type": "worker", "index": 0}}')
    if not text or not text.strip():
        raise ValueError("TF_CONFIG is not set: this program needs to know its cluster and "
                         f"task; set it to JSON, {example}")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error.msg} at character "
                         f"{error.pos}); it should look like {example}") from None
    if not isinstance(config, dict):
        raise ValueError(f"TF_CONFIG must be a JSON object, {example}")
    cluster = config.get("cluster")
    if not isinstance(cluster, dict) or not cluster:
        raise ValueError(f"TF_CONFIG has no \"cluster\" (job -> list of host:port), {example}")
    for job, addresses in cluster.items():
        if job not in JOBS:
            raise ValueError(f"TF_CONFIG's cluster has an unknown job {job!r}; jobs are "
                             f"{', '.join(JOBS)}")
        if not isinstance(addresses, list) or not addresses or not all(
                isinstance(a, str) and _valid_address(a) for a in addresses):
            raise ValueError(f"TF_CONFIG's job {job!r} must be a non-empty list of "
                             f"'host:port' strings, not {addresses!r}")
    task = config.get("task")
    if not isinstance(task, dict):
        raise ValueError("TF_CONFIG has no \"task\": add which task this process is, e.g. "
                         "\"task\": {\"type\": \"worker\", \"index\": 0}")
    job, index = task.get("type"), task.get("index")
    if job not in cluster:
        raise ValueError(f"TF_CONFIG's task type {job!r} is not a job of its cluster "
                         f"({', '.join(cluster)})")
    n = len(cluster[job])
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
        raise ValueError(f"TF_CONFIG's task index must be an int from 0 to {n - 1} (job "
                         f"{job!r} lists {n} address(es)), not {index!r}")
    if resolve_own_host:
        host = cluster[job][index].rsplit(":", 1)[0].strip("[]")
        try:
            socket.getaddrinfo(host, None)
        except (socket.gaierror, UnicodeError):
            raise ValueError(f"TF_CONFIG gives this task ({job} {index}) the host {host!r}, "
                             "which does not resolve to an address; use this machine's name "
                             "or address") from None
    return config


def _valid_address(address: str) -> bool:
    match = _ADDRESS.match(address)
    return bool(match) and 0 < int(match.group(2)) < 65536


def resolver_problem(kind: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Why the cluster resolver ``kind`` cannot work in this environment, or None.

    Meant for a program's argument check (``parser.error(problem)``), before TensorFlow
    is imported.
    """
    env = os.environ if environ is None else environ
    if kind not in RESOLVERS:
        return f"unknown cluster resolver {kind!r}; use one of {', '.join(RESOLVERS)}"
    if kind == "tf_config":
        try:
            read_tf_config(env.get("TF_CONFIG"))
        except ValueError as error:
            return str(error)
    if kind == "slurm":
        missing = [v for v in SLURM_VARIABLES if not env.get(v)]
        if missing:
            return (f"--resolver slurm needs SLURM's job variables ({', '.join(missing)} "
                    "not set): run the program with srun inside a SLURM allocation, or use "
                    "--resolver tf_config with TF_CONFIG")
    if kind == "kubernetes" and importlib.util.find_spec("kubernetes") is None:
        return ("--resolver kubernetes needs the `kubernetes` Python package, which is not "
                "installed; run inside a pod with it, or use --resolver tf_config")
    return None


def cluster_resolver(kind: str = "tf_config") -> Any:
    """TensorFlow's cluster resolver of ``kind``: where a program learns its cluster from.

    ``tf_config`` reads ``TF_CONFIG`` (this module's local clusters, and any launcher
    that sets it); ``slurm`` reads SLURM's job variables inside ``srun``; ``kubernetes``
    asks the Kubernetes API (needs the ``kubernetes`` package). The program that uses
    the resolver is the same in all three cases.
    """
    if kind not in RESOLVERS:
        raise ValueError(f"unknown cluster resolver {kind!r}; use one of {', '.join(RESOLVERS)}")
    from helpers.frameworks import import_tensorflow  # noqa: PLC0415  (TF only when needed)

    resolvers = import_tensorflow().distribute.cluster_resolver
    if kind == "slurm":
        return resolvers.SlurmClusterResolver()
    if kind == "kubernetes":
        return resolvers.KubernetesClusterResolver()
    return resolvers.TFConfigClusterResolver()


# -- Give up, with a message naming the missing peers, when a cluster does not form in time.
#
# When ``MultiWorkerMirroredStrategy`` starts, every task waits until all the tasks of its
# cluster have connected (TensorFlow logs ``Waiting for 1/2 tasks to connect``). If a
# peer never comes (it crashed, was never started, or has a wrong address), TensorFlow
# waits about an hour, inside one C++ call that holds Python's GIL: no Python thread,
# timer or signal handler of the waiting process runs until it returns.
#
# So the deadline is kept by a tiny separate process, a *watchdog*, started just before
# the wait with :func:`deadline_for_peers`. It waits on a pipe from the worker. When the
# worker gets past the wait it closes the pipe and the watchdog exits quietly (it also
# exits if the worker dies, since the pipe closes then too). If the deadline comes first,
# the watchdog tries each peer's port, prints which peers do not answer and what to do,
# into the worker's own output (its log), and ends the worker with SIGKILL: nothing
# gentler can interrupt that C++ call.

_WATCHDOG = r"""
import os, select, signal, socket, sys
parent, seconds, who, peers = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4:]
released, _, _ = select.select([sys.stdin], [], [], seconds)
if released or os.getppid() != parent:
    sys.exit(0)
silent = []
for peer in peers:
    name, _, address = peer.partition("=")
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=2).close()
    except (OSError, ValueError):
        silent.append(f"{name} at {address}")
missing = ("; not answering: " + ", ".join(silent)) if silent else (
    "; every peer's port answers, so one of them may belong to another cluster")
print(f"[{who}] gave up after {seconds:g} s waiting for the other tasks of the cluster to "
      f"connect{missing}. Start every task listed in TF_CONFIG (each with its own task "
      "index), check the addresses and firewalls, or allow longer with --connect-timeout.",
      file=sys.stderr, flush=True)
os.kill(parent, signal.SIGKILL)
"""


def peers_of_this_task() -> tuple[str, list[str]]:
    """``("worker-0", ["worker-1=host:port", ...])`` from TF_CONFIG; other resolvers: no names."""
    text = os.environ.get("TF_CONFIG")
    if not text:
        return "this task", []
    config = read_tf_config(text, resolve_own_host=False)
    me = (config["task"]["type"], config["task"]["index"])
    peers = [f"{job}-{i}={address}" for job, addresses in config["cluster"].items()
             for i, address in enumerate(addresses) if (job, i) != me]
    return f"{me[0]}-{me[1]}", peers


@contextmanager
def deadline_for_peers(seconds: float, who: str, peers: Sequence[str] = ()) -> Iterator[None]:
    """Kill this process, saying why, unless the ``with`` block ends within ``seconds``.

    ``peers`` are ``"name=host:port"`` strings (``worker-1=10.0.0.2:2222``) the message
    checks and names if they do not answer.
    """
    require_number("the connect timeout (seconds)", seconds, above=0)
    watchdog = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), str(seconds), who,
         *peers], stdin=subprocess.PIPE)
    try:
        yield
    finally:
        watchdog.stdin.close()  # releases the watchdog
        watchdog.wait()


def report(**values: Any) -> None:
    """Print one machine-readable result line for the notebook."""
    print(RESULT_PREFIX + json.dumps(values, sort_keys=True), flush=True)


def all_reduce(tf: Any, values: Any, options: Any = None) -> Any:
    """Sum ``values`` (a tensor or a list) over all replicas, from inside ``strategy.run``.

    This is the call Keras' optimizer makes for the gradients; ``options`` are
    ``tf.distribute.experimental.CommunicationOptions`` for this call only.
    """
    context = tf.distribute.get_replica_context()
    return context.all_reduce(tf.distribute.ReduceOp.SUM, values, options=options)


def local_result(tf: Any, strategy: Any, result: Any) -> Any:
    """This worker's copy of a (nested) per-replica result of ``strategy.run``."""
    return tf.nest.map_structure(lambda r: strategy.experimental_local_results(r)[0], result)


#: The line a worker prints once its last collective is done (the launcher waits for it).
TIMING_DONE = "timing done"


def finish(name: str, linger: float = 120.0) -> NoReturn:
    """Print :data:`TIMING_DONE`, then wait to be ended by the launcher (at most ``linger`` s).

    A worker cannot know when its peers have fetched the last chunk it serves (in a ring,
    each worker pulls its last chunk from its neighbour after the neighbour has finished),
    so leaving at once could break a peer's last collective; exiting normally would wait
    in TensorFlow's shutdown barrier, seconds on a busy machine. The launcher ends every
    worker once all of them have printed :data:`TIMING_DONE` (``LocalTFCluster.stop``).
    """
    print(f"[{name}] {TIMING_DONE}", flush=True)
    sys.stderr.flush()
    time.sleep(linger)
    os._exit(0)
