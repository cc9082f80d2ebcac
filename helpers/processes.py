"""Start, watch and always end the processes of a local cluster, and what its clusters share.

Every multi-process lesson needs the same discipline, kept here once: ports picked free at
run time (never one another running cluster of this process uses); each process in its own
process group, with its output in a log file the notebook can show; readiness *checked*
(the task's own process listening, a line in its log), never a fixed ``sleep``; a timeout
on every wait (:func:`poll_until`), and a process that dies meanwhile named at once with
its log's end; and everything started ended when the ``with`` block of
:class:`ProcessGroup` ends (success, error, timeout, Jupyter's interrupt), at interpreter
exit, and through Linux's parent-death signal even if the kernel is killed.

No signal ever reaches a stranger: a group is signalled only while its leader is our child
and not yet *reaped* (until then its pid cannot be reused), and every reap follows a
SIGKILL to the leader's group. Children are started from one long-lived launcher thread,
because the parent-death signal follows the *thread* that forked; the signal is set by a
tiny launcher program (:data:`_LAUNCHER`), not a ``preexec_fn``, which would run Python
between ``fork`` and ``exec`` in a child of a kernel with dozens of threads, where a lock
held at the fork deadlocks it.

Log folders a group makes for itself carry :data:`RUN_MARKER`; the folders of ended runs
are pruned when a new group starts (:func:`prune_log_folders`: the last few runs, failed
ones longer). :class:`LocalCluster` is what the TensorFlow and MXNet clusters share.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import importlib.util
import json
import math
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from helpers.machine import require_int, require_number
from helpers.output import Table

# -- Hosts, ports and listeners: where a local cluster's servers can listen, and who does.

def check_host(host: object) -> str:
    """``host`` if it names an address of this machine that a server can bind, else ValueError.

    A local cluster runs every task here, so its host must resolve and be local: an
    unknown name or another machine's address would otherwise fail deep inside the
    framework, or in the port picker.
    """
    if not isinstance(host, str) or not host.strip():
        raise ValueError(f"host must be a host name or address, such as 127.0.0.1, not {host!r}")
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise ValueError(
            f"host {host!r} does not resolve to an address; a local cluster runs on this "
            "machine: leave host at its default, 127.0.0.1"
        ) from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((address[0], 0))
        except OSError:
            shown = host if host == address[0] else f"{host} ({address[0]})"
            raise ValueError(
                f"host {shown!r} is not an address of this machine, so no task could listen "
                "there; a local cluster uses 127.0.0.1 (the default)"
            ) from None
    return host


def port_accepts(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def check_port(port: object, what: str = "a port") -> int:
    """``port`` if it is a TCP port number, else ValueError naming ``what`` it is."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"{what} is an int between 1 and 65535, not {port!r}")
    return port


def ensure_port_free(port: int, host: str = "127.0.0.1") -> None:
    """Raise ValueError, saying what to do, if ``port`` is taken or not a valid port."""
    check_port(port)
    if not port_bindable(port, host):
        raise ValueError(
            f"port {port} on {host} is already in use{holders_note(port)}; pick another "
            "(helpers.processes.free_port() finds one) or end the process holding it"
        )


def port_bindable(port: int, host: str = "127.0.0.1") -> bool:
    """True when a server could listen on ``port`` now.

    Binds with ``SO_REUSEADDR`` as gRPC does, so connections of a task that was just
    killed (lingering in TIME_WAIT) do not count as "taken"; a live listener does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def format_address(ip: str, port: int) -> str:
    """``127.0.0.1:5000``, ``[::]:5000``."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """``(ip, port)`` of every TCP socket that process ``pid`` or its children listen on.

    Read with psutil from the kernel's socket tables, so it names the process that owns
    each listener, not merely "something answers on that port". Empty when the process
    is gone. Call it only for a process that has not been reaped (its pid is ours).
    """
    import psutil  # noqa: PLC0415  (only the listener checks need it)

    try:
        root = psutil.Process(pid)
        family = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    found: set[tuple[str, int]] = set()
    for proc in family:
        try:
            connections = proc.net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        found |= {(c.laddr.ip, c.laddr.port) for c in connections
                  if c.status == psutil.CONN_LISTEN}
    return sorted(found)


def port_holders(port: int) -> list[tuple[int | None, str]]:
    """Who listens on ``port`` on this machine: ``(pid, "pid 123 (python -m ...)")`` each.

    A listener of another user's process has no pid here (``None``). Empty when the
    system's socket table cannot be read.
    """
    import psutil  # noqa: PLC0415

    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return []
    holders: dict[int | None, str] = {}
    for c in connections:
        if c.status != psutil.CONN_LISTEN or c.laddr.port != port:
            continue
        if c.pid is None:
            holders[None] = "another user's process"
            continue
        try:
            command = " ".join(psutil.Process(c.pid).cmdline())[:120]
        except psutil.Error:
            command = "?"
        holders[c.pid] = f"pid {c.pid} ({command})"
    return sorted(holders.items(), key=lambda item: item[1])


def holders_note(port: int, exclude_pids: Iterable[int] = ()) -> str:
    """`` (held by pid 123 (...))`` for messages, or ``""`` when nobody else is seen."""
    skip = set(exclude_pids)
    holders = [text for pid, text in port_holders(port) if pid is None or pid not in skip]
    return f" (held by {', '.join(holders)})" if holders else ""


# -- Start, watch and always end the processes of a local cluster.

_LIVE_GROUPS: weakref.WeakSet[ProcessGroup] = weakref.WeakSet()

#: The most processes of one kind a local cluster may start: every task runs on this
#: machine (a TensorFlow task takes about half a GiB), so more is a typo, not a lesson.
MAX_LOCAL_TASKS = 64
LOCAL_TASKS_HINT = ("a local cluster runs every task on this machine; for more, run the worker "
                    "programs on several machines")
#: The most ports :func:`free_ports` hands out at once.
MAX_PORTS = 1024
#: Folder prefixes and marker file of the log folders groups make for themselves.
RUN_MARKER = "cluster-run.json"
#: Retention of those folders: the newest runs of any outcome, and failed runs beyond them.
KEEP_LAST_RUNS = 5
KEEP_FAILED_RUNS = 10

#: Run as ``python -I -S -c _LAUNCHER PPID CMD...`` (imports only ctypes): ask the kernel to
#: SIGKILL this process when the launcher thread ends (PR_SET_PDEATHSIG = 1), exit if the
#: parent is already gone (``getppid() != PPID``), then ``exec`` the command (same pid and
#: group; the death signal survives ``exec``).
_LAUNCHER = """
import ctypes, os, signal, sys
if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0) != 0:
    print(f"launcher: prctl failed (errno {ctypes.get_errno()})", file=sys.stderr)
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as error:
    print(f"launcher: cannot run {sys.argv[2]!r}: {error}", file=sys.stderr)
    sys.exit(127)
"""


T = TypeVar("T")

# -- ports of this process's clusters ----------------------------------------------------

def claimed_ports() -> set[int]:
    """Ports held by clusters of this process whose processes still run."""
    return {p for g in list(_LIVE_GROUPS) if g.running() for p in g.claimed}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now and no running cluster of ours uses."""
    return free_ports(1, host)[0]


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct free ports (the OS picks them), sorted."""
    require_int("the number of ports", n, 1, MAX_PORTS)
    taken = claimed_ports()
    ports: set[int] = set()
    for _ in range(20 * n + 20):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = sock.getsockname()[1]
        if port not in taken:
            ports.add(port)
        if len(ports) == n:
            return sorted(ports)
    raise RuntimeError(f"could not find {n} free ports on {host}; end some servers and retry")


def poll_until(check: Callable[[], T | None], timeout: float, late: Callable[[], str],
               interval: float = 0.05) -> T:
    """Every wait of the series: call ``check`` until it returns something other than None.

    ``check`` raises to stop early (a process died: say which, with its log); after
    ``timeout`` seconds ``TimeoutError(late())`` says what never happened.
    """
    deadline = time.monotonic() + timeout
    while (result := check()) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(late())
        time.sleep(interval)
    return result


def python_module_command(module: str, *args: str) -> list[str]:
    """``[python, -m, module, *args]`` after checking that the module can be found."""
    if importlib.util.find_spec(module.split(".")[0]) is None or _find(module) is None:
        raise ValueError(
            f"no Python module {module!r} to run; worker programs live in helpers/workers/ "
            "and run as `python -m helpers.workers.NAME`"
        )
    return [sys.executable, "-m", module, *args]


def _find(module: str) -> object | None:
    try:
        return importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None


# -- starting processes -----------------------------------------------------------------

class _LauncherThread:
    """One long-lived thread that starts every child process of this process.

    The parent-death signal follows the thread that forked (see the module docstring);
    this thread lives as long as the process, so children die with the process and not
    with whichever thread asked for them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._owner = 0

    def submit(self, args: list[str], **kwargs: object) -> concurrent.futures.Future:
        """Ask the thread to ``subprocess.Popen(args, **kwargs)``; the future holds the Popen."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._owner != os.getpid():
                self._jobs = queue.SimpleQueue()  # after a fork, the old thread is gone
                self._thread = threading.Thread(target=self._serve, args=(self._jobs,),
                                                name="cluster-launcher", daemon=True)
                self._thread.start()
                self._owner = os.getpid()
            future: concurrent.futures.Future = concurrent.futures.Future()
            self._jobs.put((future, args, kwargs))
        return future

    @staticmethod
    def _serve(jobs: queue.SimpleQueue) -> None:
        while True:
            future, args, kwargs = jobs.get()
            try:
                future.set_result(subprocess.Popen(args, **kwargs))
            except BaseException as error:  # noqa: BLE001  (handed to the caller)
                future.set_exception(error)


_LAUNCHER_THREAD = _LauncherThread()


def _launch_command(args: list[str]) -> list[str]:
    """The command that runs ``args`` with the parent-death signal set (Linux), else ``args``."""
    if not sys.platform.startswith("linux"):
        return list(args)
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(os.getpid()), *args]


@dataclass
class ManagedProcess:
    """One process of a group: its command, log file and exit status.

    Its exit status is collected (the process *reaped*) only by :meth:`_reap_if_exited`,
    after a SIGKILL to its process group, so that nothing the task left behind outlives
    it and no signal is ever sent to a pid that might belong to someone else.
    """

    name: str
    args: list[str]
    log_path: Path
    popen: subprocess.Popen = field(repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self._reap_if_exited()

    @property
    def alive(self) -> bool:
        return self._reap_if_exited() is None

    @property
    def reaped(self) -> bool:
        """True once the exit status was collected: from then on the pid is not ours."""
        return self.popen.returncode is not None

    def signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the process group, only while its leader is our unreaped child."""
        if self.reaped:
            return False
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def has_exited(self) -> bool:
        """True when the process has ended, without collecting its status (Linux: waitid)."""
        if self.reaped:
            return True
        if not hasattr(os, "waitid"):
            return self.popen.poll() is not None
        try:
            info = os.waitid(os.P_PID, self.popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # collected behind our back: let Popen record that
            self.popen.poll()
            return True
        return info is not None

    def _reap_if_exited(self) -> int | None:
        if self.reaped:
            return self.popen.returncode
        if not self.has_exited():
            return None
        self.signal_group(signal.SIGKILL)  # whatever it left in its group; its id is still ours
        return self.popen.wait()

    def listening(self) -> list[tuple[str, int]]:
        """``(ip, port)`` this process (and its children) listen on; empty once it ended."""
        if self.has_exited():
            return []
        return listening_addresses(self.pid)

    def log(self) -> str:
        """Everything the process printed so far (stdout and stderr together)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.log().splitlines()[-lines:])


class ProcessGroup:
    """Processes started together and ended together. Use it as a context manager."""

    def __init__(self, name: str = "cluster", log_dir: Path | str | None = None) -> None:
        self.name = name
        self.processes: dict[str, ManagedProcess] = {}
        self.teardown_seconds: float | None = None
        self.failed = False
        self.claimed: set[int] = set()
        self._marker: Path | None = None
        if log_dir:
            self.log_dir = Path(log_dir)
            self.log_dir.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(tempfile.gettempdir())
            prune_log_folders(root)
            self.log_dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))
            self._marker = self.log_dir / RUN_MARKER
            self._write_marker("running")
        _LIVE_GROUPS.add(self)

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- bookkeeping ------------------------------------------------------------------
    def _write_marker(self, state: str) -> None:
        if self._marker is None:
            return
        record = {"pid": os.getpid(), "state": state, "created": time.time()}
        try:
            if self._marker.exists():
                record["created"] = json.loads(self._marker.read_text()).get("created",
                                                                             record["created"])
            self._marker.write_text(json.dumps(record))
        except (OSError, ValueError):
            pass

    def mark_failed(self) -> None:
        """Keep this run's logs for diagnosis (see :func:`prune_log_folders`)."""
        self.failed = True
        self._write_marker("failed")

    def running(self) -> list[str]:
        """Names of the processes that have not ended."""
        return [n for n, p in self.processes.items() if not p.has_exited()]

    def family_pids(self) -> set[int]:
        """Pids of the running processes of this group and of their children."""
        import psutil  # noqa: PLC0415

        pids = set()
        for proc in self.processes.values():
            if proc.has_exited():
                continue
            pids.add(proc.pid)
            try:
                pids |= {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
            except psutil.NoSuchProcess:
                pass
        return pids

    def claim_ports(self, ports: Iterable[int], what: str) -> None:
        """Hold ``ports`` for this group; ValueError if a running group of ours holds one.

        Two clusters of one notebook given the same port would otherwise both pass the
        free-port check (neither listens yet) and then register with each other.
        """
        wanted = {check_port(p) for p in ports}
        for other in list(_LIVE_GROUPS):
            if other is self:
                continue
            shared = sorted(wanted & other.claimed)
            running = other.running() if shared else []
            if running:
                raise ValueError(
                    f"port {shared[0]} is already used by another cluster of this process "
                    f"({other.name}, still running: {', '.join(running)}); stop() that cluster "
                    f"(or leave its with block) first, or give {what} another port"
                )
        self.claimed = wanted

    # -- running ----------------------------------------------------------------------
    def start(
        self, name: str, args: list[str], env: dict[str, str] | None = None
    ) -> ManagedProcess:
        """Start ``args`` as process ``name`` with ``env`` added to this process's environment.

        The process gets its own session and process group (``start_new_session``), its
        output goes to ``<log_dir>/<name>.log``, and on Linux it dies with this process.
        """
        if name in self.processes and self.processes[name].alive:
            raise ValueError(f"a process called {name!r} is already running in {self.name!r}")
        if not args:
            raise ValueError("start() needs a command to run")
        log_path = self.log_dir / f"{name}.log"
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        with open(log_path, "wb") as log:
            future = _LAUNCHER_THREAD.submit(
                _launch_command(list(args)), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=full_env, close_fds=True, start_new_session=True)
            interrupt: KeyboardInterrupt | None = None
            while True:  # an interrupt now must not lose a process that is being started
                try:
                    popen = future.result()
                    break
                except KeyboardInterrupt as error:
                    interrupt = error
        proc = ManagedProcess(name, list(args), log_path, popen)
        self.processes[name] = proc
        self._write_marker("failed" if self.failed else "running")
        if interrupt is not None:
            raise interrupt
        return proc

    def wait_until(
        self, proc: ManagedProcess, condition: Callable[[], bool], timeout: float, what: str
    ) -> float:
        """Poll ``condition`` until true; return seconds waited.

        Raises RuntimeError if ``proc`` exits first and TimeoutError after ``timeout``,
        both with the end of its log.
        """
        start = time.monotonic()

        def check() -> float | None:
            if condition():
                return time.monotonic() - start
            if not proc.alive:
                self.mark_failed()
                raise RuntimeError(f"{proc.name} exited with code {proc.returncode} before "
                                   f"{what}; end of its log:\n{proc.log_tail()}")
            return None

        def late() -> str:
            self.mark_failed()
            return (f"{proc.name} did not reach '{what}' within {timeout:g} s; "
                    f"end of its log:\n{proc.log_tail()}")

        return poll_until(check, timeout, late)

    def wait_for_port(self, proc: ManagedProcess, port: int, timeout: float = 60.0) -> float:
        """Wait until ``proc`` itself listens on ``port`` (not merely "something answers")."""
        check_port(port)

        def own_listener() -> bool:
            return port_accepts(port) and port in {p for _, p in proc.listening()}

        return self.wait_until(proc, own_listener, timeout, f"listening on {port}")

    def wait(self, names: Iterable[str] | None = None, timeout: float = 120.0) -> dict[str, int]:
        """Wait for processes to exit; return their exit codes. TimeoutError names the laggards.

        Stops early, with RuntimeError, when one of them fails (non-zero exit), since the
        others usually wait for it forever.
        """
        chosen = list(names) if names is not None else list(self.processes)

        def check() -> dict[str, int] | None:
            codes = {n: self.processes[n].returncode for n in chosen}
            failed = {n: c for n, c in codes.items() if c not in (None, 0)}
            if failed:
                name = next(iter(failed))
                self.mark_failed()
                raise RuntimeError(f"{name} failed with exit code {failed[name]}; end of its "
                                   f"log:\n{self.processes[name].log_tail()}")
            return None if None in codes.values() else {n: int(c) for n, c in codes.items()}

        def late() -> str:
            running = [n for n in chosen if self.processes[n].returncode is None]
            return f"still running after {timeout:g} s: {', '.join(running)}"

        return poll_until(check, timeout, late)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one process's group (fault injection: a worker that dies)."""
        if name not in self.processes:
            raise ValueError(f"no process called {name!r}; started: {list(self.processes)}")
        proc = self.processes[name]
        if proc.signal_group(sig):
            poll_until(lambda: proc.has_exited() or None, 10,
                       lambda: f"{name} still runs 10 s after signal {sig}", interval=0.01)
        proc.returncode  # noqa: B018  (collects the status, after ending its group)

    def exit_codes(self) -> dict[str, int | None]:
        return {n: p.returncode for n, p in self.processes.items()}

    def logs(self) -> dict[str, str]:
        return {n: p.log() for n, p in self.processes.items()}

    def stop(self, grace: float = 2.0) -> float:
        """End every process: SIGTERM to each group, SIGKILL after ``grace`` s. Idempotent.

        Only groups whose leader is still our unreaped child are signalled (see the
        module docstring); processes that ended on their own with a non-zero code mark
        the run as failed, so its logs are kept.
        """
        start = time.monotonic()
        running = [p for p in self.processes.values() if not p.has_exited()]
        ended = [p.returncode for p in self.processes.values() if p not in running]
        if any(code != 0 for code in ended):  # ended on its own, and not well
            self.failed = True
        for proc in running:
            proc.signal_group(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):  # a grace period: whoever is left is killed
            poll_until(lambda: all(p.has_exited() for p in running) or None, grace, str, 0.02)
        for proc in running:
            proc.signal_group(signal.SIGKILL)  # stragglers, and anything left in their groups
        for proc in running:
            proc.popen.wait(timeout=10)
        self.claimed = set()
        self._write_marker("failed" if self.failed else "ok")
        self.teardown_seconds = time.monotonic() - start
        return self.teardown_seconds


# -- log folders ---------------------------------------------------------------------------

def _read_marker(folder: Path) -> dict | None:
    try:
        record = json.loads((folder / RUN_MARKER).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _pid_running(pid: object) -> bool:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune_log_folders(root: Path | str, keep_last: int = KEEP_LAST_RUNS,
                      keep_failed: int = KEEP_FAILED_RUNS) -> list[Path]:
    """Remove old cluster log folders under ``root``; return the folders removed.

    Only folders a :class:`ProcessGroup` made for itself (they hold :data:`RUN_MARKER`)
    are considered, and never one whose process still runs (its notebook may still read
    those logs). Of the others, newest first, the ``keep_last`` newest are kept whatever
    their outcome, then the ``keep_failed`` newest failed runs (a run that failed, or
    whose process died before it could say how it ended); the rest are removed.
    """
    require_int("keep_last", keep_last, 0)
    require_int("keep_failed", keep_failed, 0)
    live = {g.log_dir.resolve() for g in list(_LIVE_GROUPS)}
    finished = []
    for folder in Path(root).iterdir() if Path(root).is_dir() else []:
        record = _read_marker(folder) if folder.is_dir() else None
        if record is None or folder.resolve() in live:
            continue
        if record.get("pid") != os.getpid() and _pid_running(record.get("pid")):
            continue
        failed = record.get("state") != "ok"
        created = record.get("created")
        created = created if isinstance(created, (int, float)) and math.isfinite(created) else 0
        finished.append((created, folder, failed))
    finished.sort(key=lambda item: item[0], reverse=True)
    removed = []
    failed_kept = 0
    for position, (_, folder, failed) in enumerate(finished):
        if position < keep_last:
            continue
        if failed and failed_kept < keep_failed:
            failed_kept += 1
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def leftover_processes() -> list[str]:
    """Processes this one started (children, grandchildren) that still run: ``pid command``.

    The check a notebook ends with: after every cluster's ``with`` block, it must be empty.
    Zombies (ended, not yet collected) do not count.
    """
    import psutil  # noqa: PLC0415  (only this check needs it)

    left = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{child.pid} {' '.join(child.cmdline())}")
        except psutil.NoSuchProcess:
            pass
    return left


def describe_exit(code: int | None) -> str:
    """A human reading of an exit code: running, ok, failed, or the signal that ended it."""
    if code is None:
        return "running"
    if code == 0:
        return "exit 0 (ok)"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code} (failed)"


@atexit.register
def _stop_all_groups() -> None:
    for group in list(_LIVE_GROUPS):
        group.stop(grace=0.5)


# -- What every local cluster of the series can do, whichever framework's processes it runs.

class LocalCluster:
    """Tasks started as real processes on this machine and ended with the ``with`` block.

    Subclasses set ``self.group`` and define :meth:`task_names`, :meth:`table` and
    :meth:`start`; :data:`FRAMEWORK_LOG_LINE` matches the framework's own log lines,
    which :meth:`show_logs` can leave out.
    """

    #: A framework's own log lines (TensorFlow's ``I0000 ...] ...``, ps-lite's ``[12:00:00] ...``).
    FRAMEWORK_LOG_LINE: re.Pattern[str] = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ \S+\] ")
    #: Lines of the launcher's own protocol that are data, not something to read.
    PROTOCOL_LINE: re.Pattern[str] | None = None

    group: ProcessGroup

    # -- description (subclasses) ------------------------------------------------------
    def task_names(self) -> list[str]:
        raise NotImplementedError

    def table(self) -> Table:
        """One row per task, with its state (see :func:`describe_exit`)."""
        raise NotImplementedError

    # -- shared answers ----------------------------------------------------------------
    def state(self, task: str) -> str:
        """``not started``, ``running``, ``exit 0 (ok)``, ``killed by SIGKILL`` ..."""
        self._check_task(task)
        proc = self.group.processes.get(task)
        return describe_exit(proc.returncode) if proc else "not started"

    def exit_codes(self) -> dict[str, int | None]:
        """Exit code per task: None while running (or never started), < 0 for a signal."""
        codes = self.group.exit_codes()
        return {t: codes.get(t) for t in self.task_names()}

    def alive(self) -> list[str]:
        """Tasks whose process is running now."""
        return [t for t in self.task_names() if self._alive(t)]

    def listening_on(self, task: str) -> str:
        """Where ``task``'s own process listens now, e.g. ``127.0.0.1:41234``.

        Read from the kernel's socket tables (psutil), so it shows what the framework
        really did. ``0.0.0.0`` (IPv4) and ``[::]`` (IPv6, and IPv4 too on most systems)
        mean every address of this machine and are marked ``(every address)``, as for
        every TensorFlow task. Empty when the task is not running.
        """
        self._check_task(task)
        proc = self.group.processes.get(task)
        if proc is None:
            return ""
        return ", ".join(format_address(ip, port) + (" (every address)" if ip in ("0.0.0.0", "::")
                                                     else "") for ip, port in proc.listening())

    def pids(self) -> dict[str, int]:
        """Process id of every task started so far (the latest run of a restarted task)."""
        return {t: p.pid for t, p in self.group.processes.items()}

    def logs(self) -> dict[str, str]:
        """Everything each task printed (stdout and stderr together)."""
        return {t: self._log(t) for t in self.task_names()}

    def show_logs(self, tasks: Iterable[str] | None = None, last: int | None = None,
                  pattern: str | None = None, framework_lines: bool = True) -> None:
        """Print each task's log under a header with its state.

        ``last`` keeps the last lines of each; ``pattern`` (a regex) keeps only the lines
        it matches; ``framework_lines=False`` drops the framework's own log lines and
        keeps what the program printed itself.
        """
        chosen = self._chosen(tasks)
        if last is not None:
            require_int("last (lines per task, or None)", last, 1)
        keep = re.compile(pattern) if pattern is not None else None
        for task in chosen:
            lines = self._log(task).splitlines()
            if self.PROTOCOL_LINE is not None:
                lines = [ln for ln in lines if not self.PROTOCOL_LINE.match(ln)]
            if not framework_lines:
                lines = [ln for ln in lines if not self.FRAMEWORK_LOG_LINE.match(ln)]
            if keep is not None:
                lines = [ln for ln in lines if keep.search(ln)]
            if last is not None:
                lines = lines[-last:]
            print(f"===== {task} [{self.state(task)}] =====")
            print("\n".join(lines) if lines else "(no output)")

    def wait_for_log(self, task: str, text: str | re.Pattern[str],
                     timeout: float = 60.0) -> float:
        """Wait until ``task``'s log (its latest run) holds ``text`` (a string or a regex).

        Returns the seconds waited; RuntimeError if the task exits first, TimeoutError
        after ``timeout``, both with the end of its log.
        """
        require_number("timeout (seconds)", timeout, above=0)
        proc = self._started(task)
        pattern = text if isinstance(text, re.Pattern) else re.compile(re.escape(text))
        what = f"printing {text!r}" if isinstance(text, str) else f"printing /{text.pattern}/"
        return self.group.wait_until(proc, lambda: bool(pattern.search(proc.log())), timeout,
                                     what)

    def kill(self, task: str) -> None:
        """Fault injection: SIGKILL ``task`` (no clean-up, like a machine that dies)."""
        self._started(task)
        if not self._alive(task):
            raise ValueError(f"{task} is not running ({self.state(task)}); nothing to kill")
        self.group.kill(task, signal.SIGKILL)

    def stop(self) -> float:
        """End every task (SIGTERM, then SIGKILL); return the seconds it took. Idempotent."""
        return self.group.stop()

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers for subclasses ----------------------------------------------------------
    def _log(self, task: str) -> str:
        proc = self.group.processes.get(task)
        return proc.log() if proc else ""

    def _check_task(self, task: str) -> str:
        if task not in self.task_names():
            raise ValueError(f"no task {task!r} in this cluster; its tasks are "
                             f"{', '.join(self.task_names())}")
        return task

    def _chosen(self, tasks: Iterable[str] | None) -> list[str]:
        if isinstance(tasks, str):
            raise ValueError(f"tasks is a list of task names, e.g. [{tasks!r}]")
        chosen = self.task_names() if tasks is None else list(tasks)
        if not chosen:
            raise ValueError("no tasks given; leave tasks out to use all of them")
        for task in chosen:
            self._check_task(task)
        return chosen

    def _started(self, task: str) -> ManagedProcess:
        self._check_task(task)
        proc = self.group.processes.get(task)
        if proc is None:
            raise ValueError(f"{task} never started; call start() first")
        return proc

    def _alive(self, task: str) -> bool:
        proc = self.group.processes.get(task)
        return proc is not None and proc.alive
