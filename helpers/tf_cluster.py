"""A TensorFlow cluster of real processes on one machine, each task told its place by ``TF_CONFIG``.

A lesson starts the very programs that would run on eight machines, here on ``127.0.0.1``
with one free port each, and where Linux allows it in a network namespace of their own.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from helpers import processes
from helpers.exposure import check_exposure
from helpers.links import ShapedNetwork
from helpers.machine import require_choice, require_int, require_number
from helpers.output import Table
from helpers.processes import LOCAL_TASKS_HINT, MAX_LOCAL_TASKS, LocalCluster, ProcessGroup

#: Job names a ``TF_CONFIG`` cluster may hold, in the order tasks are listed and started.
TASK_TYPES = ("chief", "worker", "ps")

TaskArgs = Callable[[str, int, dict[str, list[str]]], list[str]]
TaskEnv = Callable[[str, int], dict[str, str]]


def cluster_spec(workers: int, ps: int = 0, chief: int = 0,
                 host: str = "127.0.0.1") -> dict[str, list[str]]:
    """``{"chief": [...], "worker": [...], "ps": [...]}`` with a free port for every task
    (picked now), jobs without tasks left out as TensorFlow expects."""
    require_int("the number of workers", workers, 0, MAX_LOCAL_TASKS, LOCAL_TASKS_HINT)
    require_int("the number of parameter servers", ps, 0, MAX_LOCAL_TASKS, LOCAL_TASKS_HINT)
    require_int("the number of chiefs", chief, 0, 1, "a TensorFlow cluster has one chief")
    if workers + chief == 0:
        raise ValueError("a cluster needs at least one worker (or a chief) to run anything; "
                         "ask for workers=1 or more")
    processes.check_host(host)
    counts = {"chief": chief, "worker": workers, "ps": ps}
    ports = iter(processes.free_ports(chief + workers + ps, host))
    return {job: [f"{host}:{next(ports)}" for _ in range(n)] for job, n in counts.items() if n}


def tf_config(cluster: dict[str, list[str]], task_type: str, task_index: int) -> str:
    """The ``TF_CONFIG`` JSON for one task: the whole cluster plus who this task is. Every
    address must be ``host:port`` with a port from 1 to 65535, and no two the same (two tasks
    on one port would wait for each other until the connect timeout)."""
    seen: dict[str, str] = {}
    for job, addresses in cluster.items():
        for i, address in enumerate(addresses):
            port = str(address).rpartition(":")[2]
            if not (port.isdigit() and 0 < int(port) < 65536):
                raise ValueError(f"{job}-{i}'s address {address!r} needs a port from 1 to "
                                 "65535 after its host, as in 127.0.0.1:2222")
            if address in seen:
                raise ValueError(f"{job}-{i} and {seen[address]} both have the address "
                                 f"{address}; give every task a port of its own")
            seen[address] = f"{job}-{i}"
    if task_index not in range(len(cluster.get(task_type, []))):
        raise ValueError(f"the cluster has no task {task_type}-{task_index}; its jobs are "
                         + ", ".join(f"{job} ({len(a)} tasks)" for job, a in cluster.items()))
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": task_index}})


def gpu_task_env(gpus: int, chief: int = 0) -> TaskEnv:
    """A ``task_env`` giving the chief (if ``chief=1``), then worker 0, 1, ... the GPUs in
    turn (shared when fewer), growing their memory as needed; parameter servers get none.
    Several TensorFlow processes would otherwise all claim every GPU. An inherited
    ``CUDA_VISIBLE_DEVICES`` (the user's, SLURM's) limits the GPUs handed out."""
    require_int("gpus (the GPUs to hand out; physical_gpu_count() counts them)", gpus, 0)
    require_int("chief (1 when the cluster has a chief that gets a GPU)", chief, 0, 1)
    inherited = os.environ.get("CUDA_VISIBLE_DEVICES")
    visible = ([str(i) for i in range(gpus)] if inherited is None
               else [t.strip() for t in inherited.split(",") if t.strip()][:gpus])

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

    Every task runs ``python -m module`` with its own ``TF_CONFIG`` (unless
    ``set_tf_config=False``), ``task_args(task_type, index, cluster)`` for flag-style
    programs (TF1's), ``env`` and ``task_env(task_type, index)`` (:func:`gpu_task_env`).
    Ports are picked when the object is built. A task is *ready* when its own process
    listens on its port. ``this_process`` names the task this very process plays
    (ParameterServerStrategy's coordinator, in a notebook): it never gets a process.

    TensorFlow's servers listen on every address, unauthenticated, so where Linux allows it
    the tasks, those started later or restarted too, run in a network namespace of their
    own, which nothing outside reaches but ``this_process``, through relays on 127.0.0.1.
    ``isolate=None`` does so where it can, ``True`` insists, ``False`` declines;
    ``why_not_isolated`` says why not. With ``network`` (a started
    :class:`~helpers.links.ShapedNetwork`), task ``i`` runs on host ``i`` at its address, as
    on a machine of its own.
    """

    def __init__(self, module: str, workers: int, ps: int = 0, chief: int = 0, *,
                 task_args: TaskArgs | None = None, env: dict[str, str] | None = None,
                 task_env: TaskEnv | None = None, log_dir: str | Path | None = None,
                 ready_timeout: float = 60.0, host: str = "127.0.0.1", set_tf_config: bool = True,
                 allow_external: bool = False, isolate: bool | None = None,
                 this_process: str | None = None, network: ShapedNetwork | None = None) -> None:
        self.command = processes.python_module_command(module)
        self.ready_timeout = require_number("ready_timeout (seconds)", ready_timeout, above=0)
        self.allow_external = require_choice("allow_external", allow_external, (False, True))
        self.isolate = require_choice("isolate", isolate, (None, False, True))
        self.isolated, self.why_not_isolated = False, "not started"
        self._enter: list[str] = []  # the command that puts a task in the cluster's namespace
        require_choice("set_tf_config", set_tf_config, (False, True))
        self.cluster: dict[str, list[str]] = cluster_spec(workers, ps, chief, host)
        self.module, self.host, self.set_tf_config = module, host, set_tf_config
        self.network = network
        if network is not None:  # each task on a host of its own, at that host's address
            if this_process or len(self.task_names()) > network.hosts:
                raise ValueError(f"a cluster on {network!r} needs a host per task and no "
                                 f"this_process: it has {len(self.task_names())} tasks")
            names = self.task_names()
            self.cluster = {job: [f"{network.address(names.index(f'{job}-{i}'))}:"
                                  f"{a.rpartition(':')[2]}" for i, a in enumerate(addresses)]
                            for job, addresses in self.cluster.items()}
        self.task_args, self.env, self.task_env = task_args, dict(env or {}), task_env
        self.this_process = this_process if this_process is None else require_choice(
            "this_process", this_process, self.task_names())
        for task in self.task_names():
            self._task_env(task)
        self.group = ProcessGroup("tf-cluster", log_dir)
        self.netns = ProcessGroup("tf-cluster-netns", self.group.log_dir)  # its holder, if any
        self.ready_seconds: dict[str, float] = {}
        self.killed_at: dict[str, float] = {}
        self._earlier_logs: dict[str, list[str]] = {}

    # -- description ---------------------------------------------------------------
    def task_names(self) -> list[str]:
        """Every task of the cluster: ``chief-0``, ``worker-0``, ..., ``ps-0``, ..."""
        return [f"{job}-{i}" for job in TASK_TYPES for i in range(len(self.cluster.get(job, [])))]

    def _job_index(self, task: str) -> tuple[str, int]:
        job, index = self._check_task(task).rsplit("-", 1)
        return job, int(index)

    def address(self, task: str) -> str:
        job, index = self._job_index(task)
        return self.cluster[job][index]

    def port(self, task: str) -> int:
        return int(self.address(task).rsplit(":", 1)[1])

    def tf_config(self, task: str) -> str:
        return tf_config(self.cluster, *self._job_index(task))

    def command_of(self, task: str) -> list[str]:
        """The command line ``task`` runs (the same on a real machine)."""
        job, index = self._job_index(task)
        return [*self.command, *(self.task_args(job, index, self.cluster) if self.task_args
                                 else [])]

    def table(self) -> Table:
        """One row per task: address, pid, state, and where its process really listens."""
        table = Table(["task", "address", "pid", "state", "listening on"])
        for task in self.task_names():
            proc = self.group.processes.get(task)
            table.append([task, self.address(task), proc.pid if proc else None,
                          self.state(task), self.listening_on(task)])
        return table

    def _task_env(self, task: str) -> dict[str, str]:
        """``env`` and ``task_env``'s variables for ``task``, each checked to be a string
        (when the cluster is built: subprocess's TypeError names neither task nor variable)."""
        where = f"task_env{self._job_index(task)}"
        extra = self.task_env(*self._job_index(task)) if self.task_env else {}
        if not isinstance(extra, dict):
            raise ValueError(f"{where} returned {extra!r}; a task_env returns a dict of "
                             "strings, as {'CUDA_VISIBLE_DEVICES': '0'}")
        for source, env in (("env", self.env), (where, extra)):
            for name, value in env.items():
                if not (isinstance(name, str) and isinstance(value, str)):
                    raise ValueError(f"{source} gives {task} the variable {name!r} = {value!r} "
                                     f"({type(value).__name__}); environment variables are "
                                     f"strings: write {str(name)!r}: {str(value)!r}")
        return {**self.env, **extra}

    # -- running -------------------------------------------------------------------
    def start(self, tasks: list[str] | None = None) -> float:
        """Start ``tasks`` (all but ``this_process`` by default); return seconds until each
        one's process listens (per task in ``ready_seconds``). A task that exits first
        (RuntimeError) or is not ready within ``ready_timeout`` (TimeoutError) stops the
        cluster, with its log's end. Tasks started while others run join their network."""
        chosen = self._chosen(self._own_tasks() if tasks is None else tasks)
        if self.this_process in chosen:
            raise ValueError(f"{self.this_process} is played by this process (this_process); "
                             "it never gets a process of its own")
        if running := [t for t in chosen if self._alive(t)]:
            raise ValueError(f"{', '.join(running)} already running; use restart(task) "
                             "to start a task again")
        holder = self.netns.processes.get("netns")
        joining = holder is not None and holder.alive
        if self.network is not None:  # the network's hosts are namespaces of their own
            self.isolated, self.why_not_isolated = True, ""
        elif not (self.alive() or joining):  # else: join the tasks running, or their namespace
            problem = "isolate=False" if self.isolate is False else processes.isolation_problem()
            if problem and self.isolate:
                raise RuntimeError(f"isolate=True, but the tasks cannot get a network "
                                   f"namespace of their own here: {problem}; pass "
                                   "isolate=None to run without")
            self.isolated, self.why_not_isolated = not problem, problem
            check_exposure(self.allow_external, "this LocalTFCluster", isolated=self.isolated,
                           why_not=problem)
        elif self.isolated and not joining:
            raise RuntimeError("the process holding this cluster's network namespace ended, "
                               "so no task can join the others; stop() the cluster and start it")
        self.group.claim_ports([self.port(t) for t in self.task_names()], "this LocalTFCluster")
        relayed = self._own_tasks() if self.this_process and not joining else []
        # Isolated, the tasks' own ports are in their namespace: only the relays' count here.
        if taken := [f"{t} {self.address(t)}" for t in (relayed if self.isolated else chosen)
                     if not processes.port_bindable(self.port(t), self.host)]:
            raise ValueError(f"port(s) already in use: {', '.join(taken)}; end the process "
                             "holding them or build a new LocalTFCluster (it picks free ports)")
        began = time.monotonic()
        try:
            if self.isolated and not (joining or self.network):  # relays reach this_process
                self._enter = processes.start_network_namespace(
                    self.netns, [self.port(t) for t in relayed],
                    [self.port(self.this_process)] if relayed else [])
            for task in chosen:
                self._launch(task)
            self._wait_ready(chosen, began)
        except BaseException:
            self.stop()
            raise
        return time.monotonic() - began

    def _launch(self, task: str) -> None:
        if (old := self.group.processes.get(task)) is not None:  # the log file is reused: save it
            self._earlier_logs.setdefault(task, []).append(old.log())
        env = self._task_env(task)
        if self.set_tf_config:
            env["TF_CONFIG"] = self.tf_config(task)
        enter = (self.network.enter(self.task_names().index(task)) if self.network
                 else self._enter if self.isolated else [])
        self.group.start(task, [*enter, *self.command_of(task)], env)

    def _wait_ready(self, tasks: list[str], began: float) -> None:
        pending = list(tasks)

        def check() -> bool | None:
            for task in list(pending):
                proc, port = self.group.processes[task], self.port(task)
                if (port in {p for _, p in proc.listening()} if self.isolated  # unreachable here
                        else proc.listens_on(port, self.host)):
                    self.ready_seconds[task] = time.monotonic() - began
                    pending.remove(task)
                elif not proc.alive:
                    raise RuntimeError(
                        f"{task} ({' '.join(self.command_of(task)[1:])}) "
                        f"{processes.describe_exit(proc.returncode)} "
                        f"before its server listened on {self.address(task)}"
                        f"{self._squatter_note(task)}; end of its log:\n{proc.log_tail()}")
            return None if pending else True

        def late() -> str:
            tails = "\n".join(f"--- {t}:\n{self.group.processes[t].log_tail(10)}"
                              for t in pending)
            notes = "".join(self._squatter_note(t) for t in pending)
            return (f"{', '.join(pending)} not listening after {self.ready_timeout:g} s "
                    f"(ready_timeout){notes}; end of their logs:\n{tails}")

        processes.poll_until(check, began + self.ready_timeout - time.monotonic(), late)

    def _own_tasks(self) -> list[str]:
        return [t for t in self.task_names() if t != self.this_process]

    def state(self, task: str) -> str:
        return "this process" if task == self.this_process else super().state(task)

    def listening_on(self, task: str) -> str:
        shown = super().listening_on(task)  # in a namespace, "every address" is its loopback
        return shown.replace(")", " of its own network namespace)") if self.isolated else shown

    def _squatter_note(self, task: str) -> str:
        """``; its port P is held by another process (...)`` when a stranger answers on it."""
        port = self.port(task)
        if self.isolated or not processes.port_accepts(port, self.host):
            return ""
        return (f"; its port {port} is held by another process"
                f"{processes.holders_note(port)}, which answered in its place: "
                "end that process, or build a new LocalTFCluster (it picks free ports)")

    def wait(self, tasks: list[str] | None = None, timeout: float = 120.0) -> dict[str, int]:
        """Wait until ``tasks`` (all by default) exit; return their exit codes. RuntimeError
        as soon as one fails, TimeoutError naming those still running; neither stops the rest."""
        require_number("timeout (seconds)", timeout, above=0)
        chosen = self._chosen(self._own_tasks() if tasks is None else tasks)
        for task in chosen:
            self._started(task)
        return self.group.wait(chosen, timeout)

    def kill(self, task: str) -> None:
        """Fault injection: SIGKILL ``task`` and note when (``killed_at``)."""
        super().kill(task)
        self.killed_at[task] = time.monotonic()

    def restart(self, tasks: str | list[str]) -> float:
        """Start a task (a name) or several (a list) again on their own ports, killing any
        that still runs; return seconds until the last listens. Earlier logs are kept."""
        chosen = self._chosen([tasks] if isinstance(tasks, str) else tasks)
        for task in chosen:
            if self._alive(task):
                self.group.kill(task, signal.SIGKILL)
        return self.start(chosen)

    def stop(self) -> float:
        """End every task, then the holder of their network namespace; return the seconds."""
        return self.group.stop() + self.netns.stop()

    def _log(self, task: str) -> str:
        """What ``task`` printed, earlier runs (before a restart) included."""
        return "\n--- restarted ---\n".join([*self._earlier_logs.get(task, []), super()._log(task)])
