"""A TensorFlow cluster of real processes on one machine, described by ``TF_CONFIG``.

Every task is a process with a gRPC server at ``host:port`` that learns the whole cluster
and its own place in it from ``TF_CONFIG``, so the programs a lesson starts on
``127.0.0.1`` run unchanged on eight machines. :func:`cluster_spec` picks free ports and
lays out the jobs, :func:`tf_config` writes one task's JSON, and :class:`LocalTFCluster`
(a :class:`helpers.processes.ProcessGroup`) starts the tasks, waits until each task's own
process listens on its port, names a task that crashes or hangs with its log's end, kills
one on purpose for the fault-tolerance lessons, and ends them all with its ``with`` block.

Security: a task listens on ``0.0.0.0:<port>`` whatever ``TF_CONFIG`` says, with no
authentication, so :meth:`LocalTFCluster.start` refuses on a machine with a public address
unless told ``allow_external=True`` or ``SERIES_ALLOW_EXTERNAL=1``
(:func:`helpers.exposure.check_exposure`).
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers.exposure import check_exposure, external_allowed
from helpers.machine import require_int, require_number
from helpers.output import Table
from helpers.processes import (
    LOCAL_TASKS_HINT,
    MAX_LOCAL_TASKS,
    LocalCluster,
    ProcessGroup,
    check_host,
    describe_exit,
    free_ports,
    holders_note,
    poll_until,
    port_accepts,
    port_bindable,
    port_holders,
    python_module_command,
)

#: Job names a ``TF_CONFIG`` cluster may hold, in the order tasks are listed and started.
TASK_TYPES = ("chief", "worker", "ps")

TaskArgs = Callable[[str, int, dict[str, list[str]]], list[str]]
TaskEnv = Callable[[str, int], dict[str, str]]

_TASK_NAME = re.compile(r"^([a-z]+)-(\d+)$")


def _check_count(value: Any, what: str, maximum: int | None = None) -> int:
    return require_int(f"the number of {what}", value, 0, maximum, LOCAL_TASKS_HINT)


def cluster_spec(workers: int, ps: int = 0, chief: int = 0,
                 host: str = "127.0.0.1") -> dict[str, list[str]]:
    """``{"chief": [...], "worker": [...], "ps": [...]}`` with a free port for every task.

    Jobs with no tasks are left out, as TensorFlow expects. Ports are picked when this
    is called, so two clusters built one after the other do not collide. Every task runs
    on this machine, so a job has at most :data:`~helpers.processes.MAX_LOCAL_TASKS`.
    """
    _check_count(workers, "workers", MAX_LOCAL_TASKS)
    _check_count(ps, "parameter servers", MAX_LOCAL_TASKS)
    _check_count(chief, "chiefs")
    if chief > 1:
        raise ValueError(f"a TensorFlow cluster has at most one chief, not {chief}")
    if workers + chief == 0:
        raise ValueError(
            "a cluster needs at least one worker (or a chief) to run anything; "
            "ask for workers=1 or more"
        )
    check_host(host)
    counts = {"chief": chief, "worker": workers, "ps": ps}
    ports = iter(free_ports(chief + workers + ps, host))
    return {job: [f"{host}:{next(ports)}" for _ in range(n)] for job, n in counts.items() if n}


def _check_cluster(cluster: Any) -> dict[str, list[str]]:
    if not isinstance(cluster, dict) or not cluster:
        raise ValueError(f"a cluster is a non-empty dict of job name -> addresses, not {cluster!r}")
    for job, addresses in cluster.items():
        if job not in TASK_TYPES:
            raise ValueError(
                f"unknown task type {job!r} in the cluster; use {', '.join(TASK_TYPES)}"
            )
        if not isinstance(addresses, list) or not addresses or not all(
            isinstance(a, str) and re.match(r"^[^:\s]+:\d+$", a) for a in addresses
        ):
            raise ValueError(f"job {job!r} needs a non-empty list of 'host:port' strings, "
                             f"not {addresses!r}")
    return cluster


def tf_config(cluster: dict[str, list[str]], task_type: str, task_index: int) -> str:
    """The ``TF_CONFIG`` JSON for one task: the whole cluster plus who this task is."""
    _check_cluster(cluster)
    if task_type not in TASK_TYPES:
        raise ValueError(f"unknown task type {task_type!r}; use one of {', '.join(TASK_TYPES)}")
    if task_type not in cluster:
        raise ValueError(f"the cluster has no {task_type!r} job; its jobs are {', '.join(cluster)}")
    n = len(cluster[task_type])
    if isinstance(task_index, bool) or not isinstance(task_index, int) or not 0 <= task_index < n:
        raise ValueError(f"{task_type} index must be an int from 0 to {n - 1}, not {task_index!r}")
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": task_index}})


def parse_task(name: str) -> tuple[str, int]:
    """``"worker-1"`` -> ``("worker", 1)``; ValueError for anything else."""
    match = _TASK_NAME.match(name) if isinstance(name, str) else None
    if not match or match.group(1) not in TASK_TYPES:
        raise ValueError(f"a task is named like 'worker-0', 'ps-1' or 'chief-0', not {name!r}")
    return match.group(1), int(match.group(2))


def gpu_task_env(gpus: int, chief: int = 0) -> TaskEnv:
    """A ``task_env`` that gives each computing task its own GPU when there are enough.

    Several TensorFlow processes on one machine would otherwise all claim every GPU.
    The chief (if ``chief=1``) and then worker 0, 1, ... take the GPUs in turn
    (``CUDA_VISIBLE_DEVICES``); with fewer GPUs than tasks some share one. Every task
    with a GPU also gets ``TF_FORCE_GPU_ALLOW_GROWTH=true``, so it allocates GPU memory
    as it needs it instead of reserving the card at start-up. Parameter servers hold
    variables and do no heavy math: they see no GPU. With ``gpus=0`` nothing is set.

    "The GPUs" are the ones this process may use: a ``CUDA_VISIBLE_DEVICES`` already set
    (by the user, or by a scheduler such as SLURM) is respected, and tasks get entries
    of that list (indices or UUIDs) rather than the machine's GPU numbers.
    """
    import os  # noqa: PLC0415

    _check_count(gpus, "GPUs")
    _check_count(chief, "chiefs")
    inherited = os.environ.get("CUDA_VISIBLE_DEVICES")
    if inherited is None:
        visible = [str(i) for i in range(gpus)]
    else:
        visible = [t.strip() for t in inherited.split(",") if t.strip()][:gpus]

    def env(task_type: str, index: int) -> dict[str, str]:
        if not visible:
            return {}
        if task_type == "ps":
            return {"CUDA_VISIBLE_DEVICES": ""}
        position = index + chief if task_type == "worker" else index
        return {"CUDA_VISIBLE_DEVICES": visible[position % len(visible)],
                "TF_FORCE_GPU_ALLOW_GROWTH": "true"}

    return env


class LocalTFCluster(LocalCluster):
    """Tasks of a TensorFlow cluster as real processes on one machine. A context manager.

    ``module`` is the program every task runs (``python -m module``); each task gets its
    own ``TF_CONFIG``. ``task_args(task_type, index, cluster)`` may add command-line
    arguments per task, for flag-style programs (TF1's ``--job_name --task_index
    --ps_hosts --worker_hosts``). ``env`` is added to every task's environment and
    ``task_env(task_type, index)`` to one task's (:func:`gpu_task_env` gives each worker
    its own GPU). ``set_tf_config=False`` leaves ``TF_CONFIG`` out, for programs that
    take the cluster from flags only.

    A task is *ready* when its own process listens on its port (checked with psutil, so
    a stranger that took the port meanwhile does not count): every TensorFlow task
    listens there once its ``tf.distribute.Server`` (or strategy) has started. Ports are
    chosen when the object is built, so :meth:`tf_config` can be shown before anything
    runs, and checked again by :meth:`start`. A task not in ``tasks`` of :meth:`start`
    (e.g. a chief played by the notebook itself) keeps its address but no process.

    TensorFlow tasks listen on every address of the machine, unauthenticated: on a
    machine with a public address :meth:`start` refuses unless ``allow_external=True``
    (see :mod:`helpers.exposure`).
    """

    def __init__(self, module: str, workers: int, ps: int = 0, chief: int = 0, *,
                 task_args: TaskArgs | None = None, env: dict[str, str] | None = None,
                 task_env: TaskEnv | None = None,
                 log_dir: str | Path | None = None, ready_timeout: float = 60.0,
                 host: str = "127.0.0.1", set_tf_config: bool = True,
                 allow_external: bool = False) -> None:
        self.command = python_module_command(module)
        self.module = module
        if task_args is not None and not callable(task_args):
            raise ValueError(f"task_args must be a function (type, index, cluster) -> list, "
                             f"not {task_args!r}")
        if task_env is not None and not callable(task_env):
            raise ValueError(f"task_env must be a function (type, index) -> dict, not {task_env!r}")
        if env is not None and not (isinstance(env, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise ValueError("env must be a dict of str -> str (environment variables)")
        require_number("ready_timeout (seconds)", ready_timeout, above=0)
        external_allowed(allow_external)  # a bool, checked now rather than at start()
        self.allow_external = allow_external
        self.cluster: dict[str, list[str]] = cluster_spec(workers, ps, chief, host)
        self.host = host
        self.task_args = task_args
        self.env = dict(env or {})
        self.task_env = task_env
        self.ready_timeout = float(ready_timeout)
        self.set_tf_config = set_tf_config
        self.group = ProcessGroup("tf-cluster", log_dir)
        self.ready_seconds: dict[str, float] = {}
        self.killed_at: dict[str, float] = {}
        self._earlier_logs: dict[str, list[str]] = {}

    # -- description ---------------------------------------------------------------
    def task_names(self) -> list[str]:
        """Every task of the cluster: ``chief-0``, ``worker-0``, ..., ``ps-0``, ..."""
        return [f"{job}-{i}" for job in TASK_TYPES for i in range(len(self.cluster.get(job, [])))]

    def address(self, task: str) -> str:
        """``host:port`` of one task."""
        job, index = self._job_index(task)
        return self.cluster[job][index]

    def port(self, task: str) -> int:
        return int(self.address(task).rsplit(":", 1)[1])

    def tf_config(self, task: str) -> str:
        """The ``TF_CONFIG`` this cluster gives ``task``."""
        return tf_config(self.cluster, *self._job_index(task))

    def command_of(self, task: str) -> list[str]:
        """The command line ``task`` runs (the same on a real machine)."""
        job, index = self._job_index(task)
        extra = list(self.task_args(job, index, self.cluster)) if self.task_args else []
        if not all(isinstance(a, str) for a in extra):
            raise ValueError(f"task_args must return a list of str, got {extra!r} for {task}")
        return [*self.command, *extra]

    def table(self) -> Table:
        """One row per task: address, pid, state, and where its process really listens.

        ``listening on`` is read from the kernel (psutil): ``0.0.0.0:port`` and
        ``[::]:port`` mean every address of the machine, as TensorFlow always does.
        """
        table = Table(["task", "address", "pid", "state", "listening on"])
        for task in self.task_names():
            proc = self.group.processes.get(task)
            table.append([task, self.address(task), proc.pid if proc else None,
                          self.state(task), self.listening_on(task)])
        return table

    def _job_index(self, task: str) -> tuple[str, int]:
        self._check_task(task)
        return parse_task(task)

    # -- running -------------------------------------------------------------------
    def start(self, tasks: list[str] | None = None) -> float:
        """Start ``tasks`` (all by default) and wait until each one's process listens.

        First the machine's exposure is checked (``check_exposure``: refused on a public
        address unless ``allow_external``), and the ports again (free, and not used by
        another running cluster of this process).
        Returns the seconds until the last task was ready (per task in
        ``ready_seconds``). If a task exits first (RuntimeError), is not ready within
        ``ready_timeout`` (TimeoutError), or finds its port held by another process, the
        whole cluster is stopped before raising, with the end of that task's log.
        """
        chosen = self._chosen(tasks)
        running = [t for t in chosen if self._alive(t)]
        if running:
            raise ValueError(f"{', '.join(running)} already running; use restart(task) "
                             "to start a task again")
        check_exposure(self.allow_external, "this LocalTFCluster")
        self.group.claim_ports([self.port(t) for t in self.task_names()], "this LocalTFCluster")
        taken = [t for t in chosen if not port_bindable(self.port(t), self.host)]
        if taken:
            raise ValueError(
                "port(s) already in use: " + ", ".join(f"{t} {self.address(t)}" for t in taken)
                + "; end the process holding them or build a new LocalTFCluster (it picks "
                "free ports)"
            )
        commands = {t: self.command_of(t) for t in chosen}
        began = time.monotonic()
        try:
            for task in chosen:
                self._launch(task, commands[task])
            self._wait_ready(chosen, began)
        except BaseException:
            self.group.mark_failed()
            self.stop()
            raise
        return time.monotonic() - began

    def _launch(self, task: str, command: list[str]) -> None:
        old = self.group.processes.get(task)
        if old is not None:  # the log file is reused: keep what the last run wrote
            self._earlier_logs.setdefault(task, []).append(old.log())
        env = dict(self.env)
        if self.task_env is not None:
            extra = self.task_env(*parse_task(task))
            if not isinstance(extra, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
                raise ValueError(f"task_env must return a dict of str -> str, got {extra!r}")
            env.update(extra)
        if self.set_tf_config:
            env["TF_CONFIG"] = self.tf_config(task)
        self.group.start(task, command, env)

    def _wait_ready(self, tasks: list[str], began: float) -> None:
        """Until every task's *own* process listens on its port; then no stranger may share it."""
        pending = list(tasks)

        def check() -> bool | None:
            for task in list(pending):
                proc = self.group.processes[task]
                port = self.port(task)
                if port_accepts(port, self.host) and port in {p for _, p in proc.listening()}:
                    self.ready_seconds[task] = time.monotonic() - began
                    pending.remove(task)
                elif not proc.alive:
                    raise RuntimeError(
                        f"{task} ({' '.join(proc.args[1:])}) {describe_exit(proc.returncode)} "
                        f"before its server listened on {self.address(task)}"
                        f"{self._squatter_note(task)}; end of its log:\n{proc.log_tail()}"
                    )
            return None if pending else True

        def late() -> str:
            tails = "\n".join(f"--- {t}:\n{self.group.processes[t].log_tail(10)}"
                              for t in pending)
            notes = "".join(self._squatter_note(t) for t in pending)
            return (f"{', '.join(pending)} not listening after {self.ready_timeout:g} s "
                    f"(ready_timeout){notes}; end of their logs:\n{tails}")

        poll_until(check, began + self.ready_timeout - time.monotonic(), late)
        self._refuse_shared_ports(tasks)

    def _squatter_note(self, task: str) -> str:
        """``; port P is held by another process (...)`` when a stranger answers on it."""
        port = self.port(task)
        if not port_accepts(port, self.host):
            return ""
        return (f"; its port {port} is held by another process"
                f"{holders_note(port, self.group.family_pids())}, which answered in its place: end "
                "that process, or build a new LocalTFCluster (it picks free ports)")

    def _refuse_shared_ports(self, tasks: list[str]) -> None:
        """A stranger listening on a task's port too (``SO_REUSEPORT``) would get its calls."""
        own = self.group.family_pids()
        for task in tasks:
            strangers = [text for pid, text in port_holders(self.port(task))
                         if pid is None or pid not in own]
            if strangers:
                raise RuntimeError(
                    f"{task} listens on {self.address(task)}, but so does {', '.join(strangers)}"
                    "; connections would be shared with it. End that process, or build a new "
                    "LocalTFCluster (it picks free ports)"
                )

    def wait(self, tasks: list[str] | None = None, timeout: float = 120.0) -> dict[str, int]:
        """Wait until ``tasks`` (all by default) exit; return their exit codes.

        RuntimeError as soon as one exits with a non-zero code (the others would usually
        wait for it forever), TimeoutError naming the ones still running. Neither stops
        the other tasks: the caller may restart them; leaving the ``with`` block ends them.
        """
        require_number("timeout (seconds)", timeout, above=0)
        chosen = self._chosen(tasks)
        never = [t for t in chosen if t not in self.group.processes]
        if never:
            raise ValueError(f"{', '.join(never)} never started; call start() first")
        return self.group.wait(chosen, timeout)

    def kill(self, task: str) -> None:
        """Fault injection: SIGKILL ``task`` and note when (``killed_at``)."""
        super().kill(task)
        self.killed_at[task] = time.monotonic()

    def restart(self, tasks: str | list[str]) -> float:
        """Start a task (a name) or several (a list) again on their own ports.

        Any that still runs is killed first. All are launched before waiting, so several
        tasks restart in about the time of one. Returns seconds until the last port
        accepts; the earlier runs' logs are kept in :meth:`logs`. On failure the whole
        cluster is stopped, as in :meth:`start`.
        """
        chosen = [tasks] if isinstance(tasks, str) else self._chosen(tasks)
        for task in chosen:
            self._job_index(task)
            if self._alive(task):
                self.group.kill(task, signal.SIGKILL)
        poll_until(lambda: all(port_bindable(self.port(t), self.host) for t in chosen) or None,
                   10.0, lambda: f"a port of {', '.join(chosen)} is still in use 10 s after "
                   "its task ended; end the process holding it")
        return self.start(chosen)

    def logs(self) -> dict[str, str]:
        """Everything each task printed, earlier runs (before a restart) included."""
        result = {}
        for task in self.task_names():
            proc = self.group.processes.get(task)
            runs = [*self._earlier_logs.get(task, []), proc.log() if proc else ""]
            result[task] = "\n--- restarted ---\n".join(runs)
        return result

    def _log(self, task: str) -> str:
        return self.logs()[task]


    def __repr__(self) -> str:
        return f"LocalTFCluster({self.module!r}, {self.cluster})"
