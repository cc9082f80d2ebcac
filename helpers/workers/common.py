"""What every worker program shares: its flags checked, its ``RESULT`` lines, and for
TensorFlow where it learns its cluster, and a deadline for peers that never come.

A worker program (``python -m helpers.workers.NAME``) is started by a launcher, often on
another machine: a bad flag or launch ends it at once in one clear line (argparse's
``error:``, exit code 2), before TensorFlow or MXNet is imported. Security, for every
program here: their servers (TensorFlow's gRPC, MXNet's ps-lite) authenticate nobody and
run what clients send, so anyone who can reach a port can run code as you. Keep a cluster
on 127.0.0.1 or, across machines, on a private network, a VPN or SSH tunnels.
"""

import argparse
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from helpers.frameworks import import_tensorflow
from helpers.machine import require_int, require_number

# -- Results: one line of JSON per measurement, read back from the worker's log.
RESULT_PREFIX = "RESULT "
#: The line an MXNet worker prints once the kvstore formed (the launcher waits for it).
READY = "mx-worker ready"
#: The line tf_allreduce prints once its last collective is done (the launcher waits for it).
TIMING_DONE = "timing done"


def report(**values: Any) -> None:
    print(RESULT_PREFIX + json.dumps(values, sort_keys=True), flush=True)


def parse_results(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len(RESULT_PREFIX):]) for line in text.splitlines()
            if line.startswith(RESULT_PREFIX)]


# -- Where a TensorFlow program learns its cluster: TF_CONFIG (the local clusters set it),
# SLURM (srun) or Kubernetes; checked before TensorFlow loads, so a bad launch names the
# variable instead of failing deep inside gRPC.
RESOLVERS = ("tf_config", "slurm", "kubernetes")
JOBS = ("chief", "worker", "ps", "evaluator")
SLURM_VARIABLES = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST")
_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^:\s\[\]]+):(\d{1,5})$")


def cluster_resolver(kind: str = "tf_config") -> Any:
    resolvers = import_tensorflow().distribute.cluster_resolver
    return {"slurm": resolvers.SlurmClusterResolver,
            "kubernetes": resolvers.KubernetesClusterResolver}.get(
                kind, resolvers.TFConfigClusterResolver)()


def read_tf_config(text: str | None) -> dict[str, Any]:
    """The parsed ``TF_CONFIG``, or ValueError naming what is wrong with it (this task's
    own host must resolve: its server listens there; the peers' may come up later)."""
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
                isinstance(a, str) and (m := _ADDRESS.match(a)) and 0 < int(m[2]) < 65536
                for a in addresses):
            raise ValueError(f"TF_CONFIG's job {job!r} must be a non-empty list of "
                             f"'host:port' strings, not {addresses!r}")
    everything = [a for addresses in cluster.values() for a in addresses]
    if twice := sorted({a for a in everything if everything.count(a) > 1}):
        raise ValueError(f"TF_CONFIG lists {', '.join(twice)} for two tasks; every task needs "
                         "an address of its own (the tasks would wait for each other)")
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
    host = cluster[job][index].rsplit(":", 1)[0].strip("[]")
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        raise ValueError(f"TF_CONFIG gives this task ({job} {index}) the host {host!r}, "
                         "which does not resolve to an address; use this machine's name "
                         "or address") from None
    return config


def resolver_problem(kind: str) -> str | None:
    """Why the cluster resolver ``kind`` cannot work in this environment, or None."""
    env = os.environ
    if kind == "tf_config":
        try:
            read_tf_config(env.get("TF_CONFIG"))
        except ValueError as error:
            return str(error)
    if kind == "slurm" and (missing := ", ".join(v for v in SLURM_VARIABLES if not env.get(v))):
        return (f"--resolver slurm needs SLURM's job variables ({missing} not set): run the "
                "program with srun inside a SLURM allocation, or use --resolver tf_config "
                "with TF_CONFIG")
    if kind == "kubernetes" and importlib.util.find_spec("kubernetes") is None:
        return ("--resolver kubernetes needs the `kubernetes` Python package, which is not "
                "installed; run inside a pod with it, or use --resolver tf_config")
    return None


# -- Give up, naming the missing peers, when a cluster does not form in time.
# MultiWorkerMirroredStrategy waits for its peers inside one C++ call that holds the GIL
# (about an hour if one never comes), so no Python timer of this process can run. A tiny
# separate process keeps the deadline: it waits on a pipe the worker closes once past the
# wait (or by dying); if the deadline comes first it tries each peer's port, prints which
# do not answer into the worker's log and ends the worker with SIGKILL.
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


@contextmanager
def deadline_for_peers(seconds: float, from_tf_config: bool = True) -> Iterator[None]:
    """Kill this process, saying why, unless the ``with`` block ends within ``seconds``
    (``from_tf_config``: name this task and the peers TF_CONFIG, checked before, lists)."""
    who, peers = "this task", []
    if from_tf_config:
        config = json.loads(os.environ["TF_CONFIG"])
        me = (config["task"]["type"], config["task"]["index"])
        who = f"{me[0]}-{me[1]}"
        peers = [f"{job}-{i}={address}" for job, addresses in config["cluster"].items()
                 for i, address in enumerate(addresses) if (job, i) != me]
    watchdog = subprocess.Popen([sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()),
                                 str(seconds), who, *peers], stdin=subprocess.PIPE)
    try:
        yield
    finally:
        watchdog.stdin.close()  # releases the watchdog
        watchdog.wait()


# -- The flags: a bad one ends the program at once, in one clear line.
def check_flags(parser: argparse.ArgumentParser, args: argparse.Namespace,
                ints: Mapping[str, tuple[int, int | None]] | None = None,
                numbers: Mapping[str, Mapping[str, float]] | None = None,
                problem: str | None = None) -> None:
    """``parser.error`` for the first flag out of range, then for ``problem`` (the launch's).
    ``ints``: destination -> ``(minimum, maximum or None)``; ``numbers``: destination ->
    :func:`~helpers.machine.require_number`'s bounds; list flags element by element."""
    ints, numbers = ints or {}, numbers or {}
    try:
        for dest, bounds in {**ints, **numbers}.items():
            values = getattr(args, dest)
            for value in values if isinstance(values, (list, tuple)) else [values]:
                flag = "--" + dest.replace("_", "-")
                if dest in ints:
                    require_int(flag, value, *bounds)
                else:
                    require_number(flag, value, **bounds)
    except ValueError as error:
        parser.error(str(error))
    if problem:
        parser.error(problem)
