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

:class:`LocalMXCluster` is built on :class:`helpers.processes.ProcessGroup`: a free port
picked at start (and never one another running cluster of this process uses), readiness
checked (the scheduler listening, then every worker's
:data:`helpers.workers.mx_worker.READY` line, which MXNet lets it print only once the
whole cluster has registered), a timeout on every wait, every role watched while the
job runs, one log per process, and everything ended when the ``with`` block ends.

Security: ps-lite has no authentication, and MXNet's servers *unpickle* the commands
workers send them (``kvstore_server.py``), so whoever can reach a server's port can run
code as its user. Locally every process listens on ``DMLC_NODE_HOST`` = 127.0.0.1,
which only this machine can reach. On several machines, run the cluster only on a
private network, a VPN or SSH tunnels, with its ports open only between the peers.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers.checks import require_choice, require_int, require_number
from helpers.exposure import check_exposure, external_allowed
from helpers.output import Table
from helpers.processes import (
    LOCAL_TASKS_HINT,
    MAX_LOCAL_TASKS,
    LocalCluster,
    ProcessGroup,
    check_host,
    check_port,
    describe_exit,
    ensure_port_free,
    free_port,
    holders_note,
    poll_until,
    port_accepts,
    python_module_command,
)
from helpers.workers.mx_worker import READY, RESULT_PREFIX, parse_results

ROLES = ("scheduler", "server", "worker")
SERVER_MODULE = "helpers.workers.mx_worker"


def _check_count(value: int, what: str, maximum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"a ps-lite cluster needs at least one {what}: the number of {what}s must be "
            f"an int >= 1, not {value!r}"
        )
    require_int(f"the number of {what}s", value, 1, maximum,
                LOCAL_TASKS_HINT if maximum == MAX_LOCAL_TASKS else "")


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
    check_port(scheduler_port, "the scheduler port")
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

    Security: ps-lite has no authentication and MXNet's servers unpickle the commands
    sent to them, so anyone who reaches these ports can run code on the machines. Run
    the lines only on a private network, a VPN or SSH tunnels, with the ports open only
    between these hosts (never on a public address).
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
        verbose: int = 1, threads: int | None = 1, allow_external: bool = False,
    ) -> None:
        _check_count(workers, "worker", MAX_LOCAL_TASKS)
        _check_count(servers, "server", MAX_LOCAL_TASKS)
        require_number("ready_timeout (seconds)", ready_timeout, above=0)
        require_choice("verbose (PS_VERBOSE)", verbose, (0, 1, 2))
        if threads is not None:
            _check_count(threads, "thread", 1024)
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"args is a list of str (command-line arguments), not {args!r}")
        if env is not None and not (isinstance(env, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise ValueError("env must be a dict of str -> str (environment variables)")
        dmlc = sorted(k for k in env or {} if k.startswith("DMLC_"))
        if dmlc:
            raise ValueError(f"env sets {', '.join(dmlc)}, but the cluster sets the DMLC_* "
                             "variables itself; pass workers=, servers=, port= or host= instead")
        check_host(host)
        external_allowed(allow_external)
        self.allow_external = allow_external
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
        """One row per process: role, pid, program, state, where it listens and its log file.

        ``listening on`` is read from the kernel (psutil): the scheduler on the cluster's
        port, servers and workers on ports ps-lite picks, all on ``host``.
        """
        table = Table(["task", "DMLC_ROLE", "pid", "program", "state", "listening on", "log"])
        for name in self.task_names():
            proc = self.group.processes.get(name)
            program = SERVER_MODULE if self.role_of(name) != "worker" else self.module
            table.append([name, self.role_of(name), proc.pid if proc else None, program,
                          self.state(name), self.listening_on(name),
                          proc.log_path.name if proc else None])
        return table

    # -- life cycle ------------------------------------------------------------------
    def launch(self) -> None:
        """Start every process and return at once, without waiting for anything.

        For a job that should get ready while this program does other work; its
        ``wait()`` (or ``wait_for_log``) then reports any process that failed meanwhile.
        The exposure and port checks of :meth:`start` apply.
        """
        if self.group.processes:
            raise RuntimeError("this cluster was started already; make a new LocalMXCluster")
        if not _is_loopback(self.host):
            check_exposure(self.allow_external, f"this LocalMXCluster (host {self.host})")
        if self.port is None:
            self.port = free_port(self.host)
        self.group.claim_ports([self.port], "this LocalMXCluster")
        ensure_port_free(self.port, self.host)
        for name in self.task_names():
            command = self.worker_command if self.role_of(name) == "worker" else self.server_command
            self.group.start(name, command, {**self.extra_env, **self.env_for(name)})

    def start(self, wait_for_workers: bool = True) -> float:
        """Start every process; return seconds until the cluster has formed.

        Ready means the scheduler's own process listens on the port and (with
        ``wait_for_workers``) every worker has printed
        :data:`~helpers.workers.mx_worker.READY`, i.e. MXNet has registered all servers
        and workers. A process that exits first raises RuntimeError with the end of its
        log; ``ready_timeout`` raises TimeoutError. Either way every process is ended.
        A port already used by another running cluster of this process is refused.
        """
        begin = time.monotonic()
        try:
            self.launch()
            self._wait_formed(wait_for_workers)
        except BaseException:
            self.group.mark_failed()
            self.stop()
            raise
        self.ready_seconds = time.monotonic() - begin
        return self.ready_seconds

    def _wait_formed(self, wait_for_workers: bool) -> None:
        scheduler = self.group.processes["scheduler"]
        workers = [p for n, p in self.group.processes.items() if self.role_of(n) == "worker"]

        def formed() -> bool:
            if wait_for_workers and all(READY in p.log() for p in workers):
                # Every worker saw the whole cluster. A short job may already have ended
                # (scheduler included) by the time this is checked; wait() reports how.
                return True
            self._raise_if_any_exited(ignore_ready=True)
            return not wait_for_workers and port_accepts(self.port, self.host) and (
                self.port in {p for _, p in scheduler.listening()})

        what = "the cluster formed (every worker ready)" if wait_for_workers else "listening"
        self.group.wait_until(scheduler, formed, self.ready_timeout, what)

    def _raise_if_any_exited(self, ignore_ready: bool) -> None:
        """While forming, any exit is fatal: the others would wait for it forever."""
        for name, proc in self.group.processes.items():
            if proc.alive:
                continue
            if ignore_ready and self.role_of(name) == "worker" and READY in proc.log():
                continue  # a very short program may finish before the others are checked
            note = ""
            if name == "scheduler":
                holders = holders_note(self.port, self.group.family_pids())
                if holders:
                    note = (f" Its port {self.port} is taken{holders}: another cluster on the "
                            "same port? Stop it, or leave port=None to get a free one.")
            raise RuntimeError(
                f"{name} ({self.role_of(name)}) {describe_exit(proc.returncode)} before the "
                f"cluster formed; the other processes would wait for it forever, so every "
                f"process of the cluster was ended.{note} "
                f"End of its log ({proc.log_path.name}):\n{proc.log_tail()}"
            )

    def wait(self, tasks: list[str] | None = None, timeout: float = 120.0) -> dict[str, int]:
        """Wait for ``tasks`` to exit; by default the whole job: the workers, then the
        servers and the scheduler (which end once every worker has finished).

        Every process of the cluster is watched, whichever ``tasks`` are waited for. A
        worker that fails, or a server or the scheduler that ends while workers still
        run, raises RuntimeError at once naming it; since the others would block in the
        next barrier, push or pull forever, every process is then ended (``stop()``), and
        the message says so. TimeoutError names the laggards after ``timeout`` seconds
        (and leaves the processes to the ``with`` block).
        """
        timeout = require_number("timeout (seconds)", timeout, above=0)
        if not self.group.processes:
            raise RuntimeError("nothing to wait for: call start() first")
        chosen = self._chosen(tasks)
        names = self.task_names()
        support = [n for n in names if self.role_of(n) != "worker"]
        workers = [n for n in names if self.role_of(n) == "worker"]

        def check() -> dict[str, int] | None:
            # Servers and the scheduler first, so that a worker seen running afterwards
            # really was running when that server was seen ended.
            support_codes = {n: self.group.processes[n].returncode for n in support}
            worker_codes = {n: self.group.processes[n].returncode for n in workers}
            for name, code in worker_codes.items():
                if code not in (None, 0):
                    self._fail(name, code, "")
            still = [n for n, c in worker_codes.items() if c is None]
            for name, code in support_codes.items():
                if code not in (None, 0):  # killed or crashed (an exit 0 follows the workers)
                    during = f" while {', '.join(still)} still ran" if still else ""
                    self._fail(name, code, during)
            codes = {**support_codes, **worker_codes}
            if all(codes[n] is not None for n in chosen):
                return {n: int(codes[n]) for n in chosen}
            return None

        def late() -> str:
            running = [n for n in chosen if self.group.processes[n].returncode is None]
            return (f"still running after {timeout:g} s: {', '.join(running)}"
                    f"{self._traceback_hint(workers)}")

        return poll_until(check, timeout, late)

    def _fail(self, name: str, code: int, during: str) -> None:
        proc = self.group.processes[name]
        tail = proc.log_tail()
        self.group.mark_failed()
        self.stop()
        raise RuntimeError(
            f"{name} ({self.role_of(name)}) {describe_exit(code)}{during}. The other "
            "processes could only wait for it forever, so every process of the cluster has "
            f"been ended (stop()). End of its log ({proc.log_path.name}):\n{tail}"
        )

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
        require_number("timeout (seconds)", timeout, above=0)
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


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


TRAIN_MODULE = "helpers.workers.mx_train"


def train_on_cluster(
    workers: int, args: Sequence[str], servers: int = 1, timeout: float = 300.0, **kwargs: Any,
) -> LocalMXCluster:
    """Run :mod:`helpers.workers.mx_train` on a fresh local cluster, start to finish.

    Returns the finished cluster (its ``results()``, ``logs()`` and ``show_logs()`` stay
    readable) after checking that no process is left running.
    """
    require_number("timeout (seconds)", timeout, above=0)
    cluster = LocalMXCluster(TRAIN_MODULE, workers=workers, servers=servers, args=args, **kwargs)
    with cluster:
        cluster.start()
        cluster.wait(timeout=timeout)
    if cluster.alive():
        raise RuntimeError(f"processes still running after the cluster ended: {cluster.alive()}")
    return cluster
