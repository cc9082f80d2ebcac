"""Run MXNet's parameter server (ps-lite) as real processes on this machine.

MXNet's distributed kvstore (``dist_sync``, ``dist_async``) is three kinds of process
that find each other through environment variables, the same on one machine or many:

* one **scheduler**: listens on ``DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT``, registers every
  other process, hands out ranks and runs barriers;
* one or more **servers**: hold the parameters (each key, or slice of a big array, lives
  on one server), sum the workers' pushes and apply the optimizer;
* one or more **workers**: run the training program and ``push`` gradients / ``pull``
  weights through ``mx.kv.create('dist_sync')``.

Every process gets ``DMLC_ROLE``, ``DMLC_PS_ROOT_URI``, ``DMLC_PS_ROOT_PORT``,
``DMLC_NUM_SERVER`` and ``DMLC_NUM_WORKER``, plus ``DMLC_NODE_HOST``, the address it
advertises to the others (here 127.0.0.1). The scheduler and server loops live inside
MXNet itself: with ``DMLC_ROLE`` set to ``scheduler`` or ``server``, ``import mxnet``
does not return; it serves until every worker has finished and then exits the process.
So servers and the scheduler run the tiny program :mod:`helpers.workers.mx_server`,
and workers run the program being taught. MXNet's ``tools/launch.py`` (not in the pip
wheel) does the same with ssh; :func:`shell_commands` prints what it would run.

:class:`LocalMXCluster` is built on :class:`helpers.cluster.processes.ProcessGroup`: a free port
picked at start, readiness checked (the scheduler's port accepting connections, then
every worker's :data:`helpers.workers.mx_worker.READY` line, which MXNet lets it print only once
the whole cluster has registered), a timeout on every wait, one log per process, and
everything ended when the ``with`` block ends.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers.cluster.base import LocalCluster
from helpers.cluster.processes import (
    ProcessGroup,
    ensure_port_free,
    free_port,
    port_accepts,
    python_module_command,
)
from helpers.table import Table
from helpers.workers.mx_worker import READY, RESULT_PREFIX, parse_results

ROLES = ("scheduler", "server", "worker")
SERVER_MODULE = "helpers.workers.mx_server"


def _check_count(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"a ps-lite cluster needs at least one {what}: the number of {what}s must be "
            f"an int >= 1, not {value!r}"
        )


def dmlc_env(
    role: str, scheduler_host: str, scheduler_port: int, servers: int, workers: int,
    node_host: str | None = None, verbose: int = 0,
) -> dict[str, str]:
    """The ``DMLC_*`` variables for one process of a ps-lite cluster.

    ``node_host`` is the address this process advertises to the others (its own
    machine's address); ``verbose`` sets ``PS_VERBOSE`` (1 logs registration, barriers
    and shutdown; 2 logs every message).
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    _check_count(servers, "server")
    _check_count(workers, "worker")
    if isinstance(scheduler_port, bool) or not isinstance(scheduler_port, int) or not (
        0 < scheduler_port < 65536
    ):
        raise ValueError(
            f"the scheduler port is an int between 1 and 65535, not {scheduler_port!r}"
        )
    if verbose not in (0, 1, 2):
        raise ValueError(f"verbose (PS_VERBOSE) is 0, 1 or 2, not {verbose!r}")
    env = {
        "DMLC_ROLE": role,
        "DMLC_PS_ROOT_URI": scheduler_host,
        "DMLC_PS_ROOT_PORT": str(scheduler_port),
        "DMLC_NUM_SERVER": str(servers),
        "DMLC_NUM_WORKER": str(workers),
        "DMLC_NODE_HOST": node_host or scheduler_host,
    }
    if verbose:
        env["PS_VERBOSE"] = str(verbose)
    return env


def shell_commands(
    module: str, scheduler_host: str, scheduler_port: int, server_hosts: Sequence[str],
    worker_hosts: Sequence[str], args: Sequence[str] = (), python: str = "python",
) -> list[str]:
    """One shell line per process to start the same cluster on several machines.

    Run each line on the machine it names (ssh, a batch scheduler, or by hand), in any
    order: processes wait for the scheduler. Every machine needs the same environment
    and a copy of the worker program; the workers see their data shard through their rank.
    """
    if not server_hosts or not worker_hosts:
        raise ValueError("a ps-lite cluster needs at least one server host and one worker host")
    counts = {"servers": len(server_hosts), "workers": len(worker_hosts)}
    plan = [("scheduler", scheduler_host, SERVER_MODULE)]
    plan += [("server", host, SERVER_MODULE) for host in server_hosts]
    plan += [("worker", host, module) for host in worker_hosts]
    lines = []
    for role, host, program in plan:
        env = dmlc_env(role, scheduler_host, scheduler_port, counts["servers"],
                       counts["workers"], node_host=host)
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        extra = " ".join(shlex.quote(a) for a in args) if role == "worker" else ""
        command = f"{assignments} {python} -m {program} {extra}".rstrip()
        lines.append(f"# on {host} ({role})\n{command}")
    return lines


class LocalMXCluster(LocalCluster):
    """A scheduler, ``servers`` servers and ``workers`` workers on one machine.

    ``module`` is the worker program, run as ``python -m module *args``; it must call
    :func:`helpers.frameworks.import_mxnet` first and join with
    :func:`helpers.workers.mx_worker.connect`. ``threads`` sets ``OMP_NUM_THREADS`` in every
    process (None leaves MXNet's default), so several workers on a few cores share
    them predictably instead of each starting one thread per core.
    """

    #: ps-lite's and MXNet's own log lines: ``[12:00:00] ../src/van.cc:310: ...``.
    FRAMEWORK_LOG_LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] \S+:\d+: ")
    #: The workers' result records, read by :meth:`results` rather than shown.
    PROTOCOL_LINE = re.compile(re.escape(RESULT_PREFIX))

    def __init__(
        self, module: str, workers: int = 2, servers: int = 1, *, args: Sequence[str] = (),
        env: dict[str, str] | None = None, log_dir: str | Path | None = None,
        port: int | None = None, host: str = "127.0.0.1", ready_timeout: float = 90.0,
        verbose: int = 1, threads: int | None = 1,
    ) -> None:
        _check_count(workers, "worker")
        _check_count(servers, "server")
        if ready_timeout <= 0:
            raise ValueError(f"ready_timeout must be > 0 seconds, not {ready_timeout!r}")
        if threads is not None:
            _check_count(threads, "thread")
        self.worker_command = python_module_command(module, *args)
        self.server_command = python_module_command(SERVER_MODULE)
        if port is not None:
            ensure_port_free(port, host)
        self.module, self.workers, self.servers = module, workers, servers
        self.args, self.host, self.port = list(args), host, port
        self.ready_timeout, self.verbose = ready_timeout, verbose
        self.extra_env = dict(env or {})
        if threads is not None:
            self.extra_env.setdefault("OMP_NUM_THREADS", str(threads))
        self.group = ProcessGroup("mxnet-cluster", log_dir)
        self.ready_seconds: float | None = None

    # -- description -----------------------------------------------------------------
    @property
    def log_dir(self) -> Path:
        return self.group.log_dir

    def task_names(self) -> list[str]:
        """``scheduler``, ``server-0``..., ``worker-0``... (worker i is not rank i)."""
        return (["scheduler"] + [f"server-{i}" for i in range(self.servers)]
                + [f"worker-{i}" for i in range(self.workers)])

    @staticmethod
    def role_of(task: str) -> str:
        return task.split("-")[0]

    def env_for(self, task: str) -> dict[str, str]:
        """The ``DMLC_*`` variables task ``task`` runs with (needs the port: after start)."""
        if task not in self.task_names():
            raise ValueError(f"no task {task!r}; tasks are {self.task_names()}")
        if self.port is None:
            raise RuntimeError("the scheduler port is picked by start(); call it first")
        return dmlc_env(self.role_of(task), self.host, self.port, self.servers, self.workers,
                        node_host=self.host, verbose=self.verbose)

    def table(self) -> Table:
        """One row per process: role, pid, program, state and log file."""
        table = Table(["task", "DMLC_ROLE", "pid", "program", "state", "log"])
        for name in self.task_names():
            proc = self.group.processes.get(name)
            program = SERVER_MODULE if self.role_of(name) != "worker" else self.module
            table.append([name, self.role_of(name), proc.pid if proc else None, program,
                          self.state(name), proc.log_path.name if proc else None])
        return table

    # -- life cycle ------------------------------------------------------------------
    def launch(self) -> None:
        """Start every process and return at once, without waiting for anything.

        For a job that should get ready while this program does other work; its
        ``wait()`` (or ``wait_for_log``) then reports any process that failed meanwhile.
        """
        if self.group.processes:
            raise RuntimeError("this cluster was started already; make a new LocalMXCluster")
        if self.port is None:
            self.port = free_port(self.host)
        ensure_port_free(self.port, self.host)
        for name in self.task_names():
            command = self.worker_command if self.role_of(name) == "worker" else self.server_command
            self.group.start(name, command, {**self.extra_env, **self.env_for(name)})

    def start(self, wait_for_workers: bool = True) -> float:
        """Start every process; return seconds until the cluster has formed.

        Ready means the scheduler accepts connections and (with ``wait_for_workers``)
        every worker has printed :data:`~helpers.workers.mx_worker.READY`, i.e. MXNet has
        registered all servers and workers. A process that exits first raises
        RuntimeError with the end of its log; ``ready_timeout`` raises TimeoutError.
        """
        begin = time.monotonic()
        self.launch()
        scheduler = self.group.processes["scheduler"]
        workers = [p for n, p in self.group.processes.items() if self.role_of(n) == "worker"]

        def formed() -> bool:
            if wait_for_workers and all(READY in p.log() for p in workers):
                # Every worker saw the whole cluster. A short job may already have ended
                # (scheduler included) by the time this is checked; wait() reports how.
                return True
            self._raise_if_any_exited(ignore_ready=True)
            return not wait_for_workers and port_accepts(self.port, self.host)

        what = "the cluster formed (every worker ready)" if wait_for_workers else "listening"
        self.group.wait_until(scheduler, formed, self.ready_timeout, what)
        self.ready_seconds = time.monotonic() - begin
        return self.ready_seconds

    def _raise_if_any_exited(self, ignore_ready: bool) -> None:
        """While forming, any exit is fatal: the others would wait for it forever."""
        for name, proc in self.group.processes.items():
            if proc.alive:
                continue
            if ignore_ready and self.role_of(name) == "worker" and READY in proc.log():
                continue  # a very short program may finish before the others are checked
            raise RuntimeError(
                f"{name} ({self.role_of(name)}) exited with code {proc.returncode} before the "
                f"cluster formed; the other processes would wait for it forever. "
                f"End of its log ({proc.log_path}):\n{proc.log_tail()}"
            )

    def wait(self, tasks: list[str] | None = None, timeout: float = 120.0) -> dict[str, int]:
        """Wait for ``tasks`` to exit; by default the whole job: the workers, then the
        servers and the scheduler (which end once every worker has finished).

        Raises RuntimeError at once when a worker fails (the others block in the next
        barrier or push), TimeoutError naming the laggards after ``timeout`` seconds.
        """
        if not self.group.processes:
            raise RuntimeError("nothing to wait for: call start() first")
        chosen = self._chosen(tasks)
        begin = time.monotonic()
        worker_names = [n for n in chosen if self.role_of(n) == "worker"]
        try:
            self.group.wait(worker_names, timeout)
        except RuntimeError as err:
            raise RuntimeError(
                f"{err}\n(the other processes are still waiting for it; stop() or the "
                "end of the `with` block ends them)"
            ) from None
        except TimeoutError as err:
            raise TimeoutError(f"{err}{self._traceback_hint(worker_names)}") from None
        rest = [n for n in chosen if self.role_of(n) != "worker"]
        left = max(5.0, timeout - (time.monotonic() - begin))
        self.group.wait(rest, left)
        return {n: int(c) for n, c in self.exit_codes().items() if n in chosen and c is not None}

    def _traceback_hint(self, names: list[str]) -> str:
        """A worker that raised but could not exit (see helpers.workers.mx_worker.connect)."""
        for name in names:
            proc = self.group.processes[name]
            if proc.alive and "Traceback (most recent call last)" in proc.log():
                return (f"\n{name} raised an exception but is stuck in MXNet's shutdown "
                        f"barrier; end of its log:\n{proc.log_tail()}")
        return ""

    def run(self, timeout: float = 120.0) -> dict[str, int]:
        """``start()`` then ``wait(timeout)``: the whole life of a short job."""
        self.start()
        return self.wait(timeout=timeout)

    def restart(self, tasks: str | list[str]) -> float:
        """Not possible with ps-lite: refused with what to do instead.

        The scheduler hands out ranks once, when every process has registered; a process
        that joins later is not taken back into the job. Start a new cluster instead.
        """
        raise RuntimeError(
            f"a ps-lite cluster cannot take {tasks!r} back once it has formed (the scheduler "
            "assigns ranks only at start-up); stop() this cluster and start a new LocalMXCluster"
        )

    def results(self) -> list[dict[str, Any]]:
        """Every worker's ``RESULT`` records (:func:`helpers.workers.mx_worker.report`), by rank."""
        records = []
        for name, text in self.logs().items():
            if self.role_of(name) == "worker":
                records += [{"task": name, **r} for r in parse_results(text)]
        return sorted(records, key=lambda r: (r.get("rank", -1), r["task"]))


TRAIN_MODULE = "helpers.workers.mx_train"


def train_on_cluster(
    workers: int, args: Sequence[str], servers: int = 1, timeout: float = 300.0, **kwargs: Any,
) -> LocalMXCluster:
    """Run :mod:`helpers.workers.mx_train` on a fresh local cluster, start to finish.

    Returns the finished cluster (its ``results()``, ``logs()`` and ``show_logs()`` stay
    readable) after checking that no process is left running.
    """
    cluster = LocalMXCluster(TRAIN_MODULE, workers=workers, servers=servers, args=args, **kwargs)
    with cluster:
        cluster.start()
        cluster.wait(timeout=timeout)
    if cluster.alive():
        raise RuntimeError(f"processes still running after the cluster ended: {cluster.alive()}")
    return cluster
