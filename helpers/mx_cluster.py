"""Run MXNet's parameter server (ps-lite) as real processes on this machine.

A scheduler, servers and workers find each other through ``DMLC_*`` variables, the same
on one machine or many. With ``DMLC_ROLE`` set to ``scheduler`` or ``server``, ``import
mxnet`` serves until every worker has finished, so those roles run
``python -m helpers.workers.mx_worker`` (its ``main``). ps-lite has no authentication and
its servers unpickle what workers send: here every process listens on 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from helpers import processes
from helpers.exposure import check_exposure
from helpers.links import ShapedNetwork
from helpers.machine import require_choice, require_int, require_number
from helpers.output import Table
from helpers.processes import LocalCluster, ManagedProcess, ProcessGroup
from helpers.workers.common import READY, RESULT_PREFIX, parse_results

SERVER_MODULE = "helpers.workers.mx_worker"
TRAIN_MODULE = "helpers.workers.mx_train"
ROLES = ("scheduler", "server", "worker")


def dmlc_env(role: str, scheduler_host: str, scheduler_port: int, servers: int, workers: int,
             node_host: str | None = None, verbose: int = 0) -> dict[str, str]:
    """The ``DMLC_*`` variables of one process: ``node_host`` is the address it advertises
    to the others, ``verbose`` sets ``PS_VERBOSE`` (1 logs registration, 2 every message)."""
    require_choice("role (DMLC_ROLE)", role, ROLES, "ps-lite knows only these three")
    for name, host in (("scheduler_host", scheduler_host), ("node_host", node_host or "-")):
        if not isinstance(host, str) or not host.strip():
            raise ValueError(f"{name} must be a host name or address, not {host!r}")
    require_int("scheduler_port", scheduler_port, 1, 65535)
    env = {"DMLC_ROLE": role, "DMLC_PS_ROOT_URI": scheduler_host,
           "DMLC_PS_ROOT_PORT": str(scheduler_port), "DMLC_NUM_SERVER": str(servers),
           "DMLC_NUM_WORKER": str(workers), "DMLC_NODE_HOST": node_host or scheduler_host}
    return {**env, "PS_VERBOSE": str(verbose)} if verbose else env


def shell_commands(module: str, scheduler_host: str, scheduler_port: int,
                   server_hosts: Sequence[str], worker_hosts: Sequence[str],
                   args: Sequence[str] = (), python: str = "python") -> list[str]:
    """One shell line per process to start the same cluster on several machines, run in
    any order, on a private network only (anyone who reaches the ports can run code)."""
    for name, hosts in (("server_hosts", server_hosts), ("worker_hosts", worker_hosts)):
        if isinstance(hosts, str) or not hosts or not all(isinstance(h, str) for h in hosts):
            raise ValueError(f"{name} is a non-empty list of host names, not {hosts!r}: write "
                             f"{[hosts] if isinstance(hosts, str) else ['host1']!r}")
    plan = ([("scheduler", scheduler_host)] + [("server", h) for h in server_hosts]
            + [("worker", h) for h in worker_hosts])
    lines = []
    for role, host in plan:
        env = dmlc_env(role, scheduler_host, scheduler_port, len(server_hosts),
                       len(worker_hosts), node_host=host)
        words = [f"{k}={shlex.quote(v)}" for k, v in env.items()] + [python, "-m"] + (
            [module, *map(shlex.quote, args)] if role == "worker" else [SERVER_MODULE])
        lines.append(f"# on {host} ({role})\n{' '.join(words)}")
    return lines


class LocalMXCluster(LocalCluster):
    """A scheduler, ``servers`` servers and ``workers`` workers on one machine.

    ``module`` is the worker program, run as ``python -m module *args``; it joins with
    :func:`helpers.workers.mx_worker.connect`. ``threads`` sets ``OMP_NUM_THREADS`` in
    every process (None: MXNet's default), so workers on a few cores share them. Ready
    means every worker printed :data:`~helpers.workers.common.READY` (MXNet lets it only
    once all have registered); ``ready_timeout`` bounds each wait of the start. With
    ``network`` (a started :class:`~helpers.links.ShapedNetwork`), the scheduler and server 0
    run on host 0, server ``i`` on host ``i``, worker ``i`` on host ``servers + i``.
    """

    #: ps-lite's and MXNet's own log lines: ``[12:00:00] ../src/van.cc:310: ...``.
    FRAMEWORK_LOG_LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] \S+:\d+: ")
    LOG_STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\] ")
    #: The workers' result records, read by :meth:`results` rather than shown.
    PROTOCOL_LINE = re.compile(re.escape(RESULT_PREFIX))

    def __init__(self, module: str, workers: int = 2, servers: int = 1, *,
                 args: Sequence[str] = (), env: dict[str, str] | None = None,
                 log_dir: str | Path | None = None, port: int | None = None,
                 host: str = "127.0.0.1", ready_timeout: float = 90.0, verbose: int = 1,
                 threads: int | None = 1, allow_external: bool = False,
                 network: ShapedNetwork | None = None) -> None:
        for name, count in (("workers", workers), ("servers", servers)):
            require_int(f"the number of {name}", count, 1, processes.MAX_LOCAL_TASKS,
                        processes.LOCAL_TASKS_HINT)
        self.ready_timeout = require_number("ready_timeout (seconds)", ready_timeout, above=0)
        require_choice("verbose (PS_VERBOSE)", verbose, (0, 1, 2))
        self.allow_external = require_choice("allow_external", allow_external, (False, True))
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"args is a list of str (command-line arguments), not {args!r}")
        if dmlc := sorted(k for k in env or {} if k.startswith("DMLC_")):
            raise ValueError(f"env sets {', '.join(dmlc)}, but the cluster sets the DMLC_* "
                             "variables itself; pass workers=, servers=, port= or host= instead")
        threads_env = {} if threads is None else {
            "OMP_NUM_THREADS": str(require_int("the number of threads", threads, 1, 1024))}
        self.extra_env = {**threads_env, **(env or {})}
        self.host, self.network = processes.check_host(host), network
        if network is not None and (host != "127.0.0.1" or network.hosts < servers + workers):
            raise ValueError(f"a cluster on {network!r} needs a host per server and worker "
                             f"({servers + workers}) and takes no host= (they have addresses)")
        self.port = processes.ensure_port_free(port, host) if port is not None else None
        self.worker_command = processes.python_module_command(module, *args)
        self.server_command = processes.python_module_command(SERVER_MODULE)
        self.module, self.workers, self.servers, self.verbose = module, workers, servers, verbose
        self.group = ProcessGroup("mxnet-cluster", log_dir)
        self.ready_seconds: float | None = None

    @staticmethod
    def role_of(task: str) -> str:
        return task.split("-")[0]

    def task_names(self) -> list[str]:
        """``scheduler``, ``server-0``..., ``worker-0``... (worker i is not rank i)."""
        return (["scheduler"] + [f"server-{i}" for i in range(self.servers)]
                + [f"worker-{i}" for i in range(self.workers)])

    def table(self) -> Table:
        """One row per process: role, pid, program, state, where it listens and its log file."""
        table = Table(["task", "DMLC_ROLE", "pid", "program", "state", "listening on", "log"])
        for name in self.task_names():
            proc = self.group.processes.get(name)
            program = self.module if self.role_of(name) == "worker" else SERVER_MODULE
            table.append([name, self.role_of(name), proc.pid if proc else None, program,
                          self.state(name), self.listening_on(name),
                          proc.log_path.name if proc else None])
        return table

    # -- life cycle ------------------------------------------------------------------
    def launch(self) -> None:
        """Start the scheduler and, once that very process listens on the port, the others,
        and return (``wait()`` reports a process that fails later). ps-lite's scheduler never
        moves to another port (taken, it exits: "bind failed"), and a server or worker joins
        whichever scheduler holds the port: another cluster's, if both were given one port."""
        if self.group.processes:
            raise RuntimeError("this cluster was started already; make a new LocalMXCluster")
        address = socket.getaddrinfo(self.host, None)[0][4][0].split("%")[0]
        if not (ipaddress.ip_address(address).is_loopback or self.network):
            check_exposure(self.allow_external, f"this LocalMXCluster (host {self.host})",
                           servers=f"MXNet's ps-lite processes listen on {self.host} with no "
                           "authentication and unpickle what they receive")
        self.port = self.port or processes.free_port(self.host)
        self.group.claim_ports([self.port], "this LocalMXCluster")
        processes.ensure_port_free(self.port, self.host)
        scheduler, *others = self.task_names()
        ours = self._start_task(scheduler)
        self._wait_forming(lambda: self.port in {p for _, p in ours.listening()} if self.network
                           else ours.listens_on(self.port, self.host), f"listening on {self.port}")
        for name in others:
            self._start_task(name)

    def _start_task(self, name: str) -> ManagedProcess:
        role = self.role_of(name)
        command = self.worker_command if role == "worker" else self.server_command
        host, node = self.host, self.host
        if self.network is not None:  # scheduler and server 0 on host 0, then one host each
            index = 0 if role == "scheduler" else int(name.split("-")[1]) + (
                self.servers if role == "worker" else 0)
            command = [*self.network.enter(index), *command]
            host, node = self.network.address(0), self.network.address(index)
        return self.group.start(name, command, {**self.extra_env, **dmlc_env(
            role, host, self.port, self.servers, self.workers, node, verbose=self.verbose)})

    def start(self, wait_for_workers: bool = True) -> float:
        """Start every process; return seconds until the cluster has formed (the scheduler
        listening or, with ``wait_for_workers``, every worker ready). A process that exits
        first (RuntimeError) or ``ready_timeout`` (TimeoutError) ends every process."""
        begin = time.monotonic()
        self.launch()
        workers = [p for n, p in self.group.processes.items() if self.role_of(n) == "worker"]
        if wait_for_workers:
            self._wait_forming(lambda: all(READY in p.log() for p in workers),
                               "the cluster formed (every worker ready)")
        self.ready_seconds = time.monotonic() - begin
        return self.ready_seconds

    def _wait_forming(self, condition: Callable[[], bool], what: str) -> None:
        """Wait until ``condition()``; any exit before is fatal and ends every process (but a
        worker may be done already, and a short job over: ``wait()`` says how)."""
        def formed() -> bool:
            if condition():
                return True
            for name, proc in self.group.processes.items():
                if not (proc.alive or (self.role_of(name) == "worker" and READY in proc.log())):
                    self._fail(name, proc.returncode, " before the cluster formed")
            return False

        try:
            self.group.wait_until(self.group.processes["scheduler"], formed, self.ready_timeout,
                                  what)
        except BaseException:
            self.stop()
            raise

    def wait(self, tasks: list[str] | None = None, timeout: float = 120.0) -> dict[str, int]:
        """Wait for ``tasks`` to exit (by default the whole job); return their exit codes.
        A worker that fails, or a server or the scheduler that ends while workers still run,
        is named at once (RuntimeError) after ending every process, since the others would
        block forever. TimeoutError names the laggards."""
        require_number("timeout (seconds)", timeout, above=0)
        if not self.group.processes:
            raise RuntimeError("nothing to wait for: call start() first")
        chosen = self._chosen(tasks)
        workers = [n for n in self.task_names() if self.role_of(n) == "worker"]
        support = [n for n in self.task_names() if n not in workers]

        def check() -> dict[str, int] | None:
            # Servers and the scheduler first: a worker seen running after ran when they ended.
            codes = {n: self.group.processes[n].returncode for n in support + workers}
            still = [n for n in workers if codes[n] is None]
            for name in workers + support:  # an exit 0 of a server follows the workers'
                if codes[name] not in (None, 0):
                    during = f" while {', '.join(still)} still ran" if name in support else ""
                    self._fail(name, codes[name], during if still else "")
            return None if any(codes[n] is None for n in chosen) else {n: codes[n] for n in chosen}

        return processes.poll_until(check, timeout, lambda: self.group.laggards(chosen, timeout))

    def _fail(self, name: str, code: int | None, during: str) -> None:
        proc = self.group.processes[name]
        holders = processes.holders_note(self.port) if name == "scheduler" else ""
        note = (f" Its port {self.port} is taken{holders}: another cluster on the same port? "
                "Stop it, or leave port=None to get a free one." if holders else "")
        self.stop()
        raise RuntimeError(
            f"{name} ({self.role_of(name)}) {processes.describe_exit(code)}{during}. The "
            "other processes could only wait for it forever, so every process of the cluster "
            f"has been ended (stop()).{note} End of its log ({proc.log_path.name}):\n"
            f"{proc.log_tail()}")

    def restart(self, tasks: str | list[str]) -> float:
        """Not possible with ps-lite: the scheduler hands out ranks once, at start-up."""
        raise RuntimeError(f"a ps-lite cluster cannot take {tasks!r} back once it has formed "
                           "(the scheduler assigns ranks only at start-up); stop() this "
                           "cluster and start a new LocalMXCluster")

    def results(self) -> list[dict[str, Any]]:
        """Every worker's ``RESULT`` records (:func:`helpers.workers.mx_worker.report`), by rank."""
        records = [{"task": name, **r} for name, text in self.logs().items()
                   if self.role_of(name) == "worker" for r in parse_results(text)]
        return sorted(records, key=lambda r: (r.get("rank", -1), r["task"]))


def train_on_cluster(workers: int, args: Sequence[str], servers: int = 1,
                     timeout: float = 300.0, **kwargs: Any) -> LocalMXCluster:
    """Run ``helpers.workers.mx_train`` on a fresh local cluster, start to finish; return
    the ended cluster (its ``results()``, ``logs()`` and ``show_logs()`` stay readable)."""
    require_number("timeout (seconds)", timeout, above=0)
    with LocalMXCluster(TRAIN_MODULE, workers=workers, servers=servers, args=args,
                        **kwargs) as cluster:
        cluster.start()
        cluster.wait(timeout=timeout)
    return cluster
