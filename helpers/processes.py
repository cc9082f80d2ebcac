"""Start, watch and always end the processes of a local cluster; what its clusters share.

Each process runs in its own process group, its output in a log file. Ready is checked,
never assumed after a ``sleep``; every wait (:func:`poll_until`) has a timeout and names a
process that died, with its log's end. A :class:`ProcessGroup` ends what it started when
its ``with`` block ends, at exit, and through Linux's parent-death signal. A group is
signalled only while its leader is our unreaped child (until then its pid cannot be
reused), and reaped only after a SIGKILL has ended what it left behind.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import functools
import importlib.util
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import psutil

from helpers.machine import require_number

T = TypeVar("T")

#: The most tasks of one kind a local cluster may start: they all run on this machine.
MAX_LOCAL_TASKS = 64
LOCAL_TASKS_HINT = ("a local cluster runs every task on this machine; for more, run the worker "
                    "programs on several machines")

_LIVE_GROUPS: weakref.WeakSet[ProcessGroup] = weakref.WeakSet()


def poll_until(check: Callable[[], T | None], timeout: float, late: Callable[[], str],
               interval: float = 0.05) -> T:
    """Every wait of the series: call ``check`` until it returns something other than None;
    it raises to stop early (a process died), and ``TimeoutError(late())`` ends the wait."""
    deadline = time.monotonic() + timeout
    while (result := check()) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(late())
        time.sleep(interval)
    return result


# -- hosts and ports: where a local cluster's servers listen, and who else does ---------------
def check_host(host: object) -> str:
    """``host`` if it is an address of this machine a server can bind, else ValueError."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError, TypeError):
        raise ValueError(f"host {host!r} does not resolve to an address; a local cluster runs "
                         "on this machine: leave host at its default, 127.0.0.1") from None
    if family != socket.AF_INET:
        raise ValueError(f"host {host!r} is an IPv6 address; the series' clusters listen on "
                         "IPv4: use 127.0.0.1 (or this machine's IPv4 address)")
    if not port_bindable(0, address[0]):
        raise ValueError(f"host {host!r} is not an address of this machine, so no task "
                         "could listen there; a local cluster uses 127.0.0.1")
    return host


def port_accepts(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


def port_bindable(port: int, host: str = "127.0.0.1") -> bool:
    """True when a server could listen on ``port`` now (``SO_REUSEADDR``, as gRPC binds:
    the TIME_WAIT connections of a task just killed do not count as taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return True
    return False


def ensure_port_free(port: object, host: str = "127.0.0.1") -> int:
    """``port`` if it is a TCP port nobody listens on, else ValueError saying what to do."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"a port is an int between 1 and 65535, not {port!r}")
    if not port_bindable(port, host):
        raise ValueError(f"port {port} on {host} is already in use{holders_note(port)}; pick "
                         "another (leave port=None for a free one) or end the process holding it")
    return port


def holders_note(port: int) -> str:
    """`` (held by pid 123 (python ...))``: who listens on ``port``, for messages."""
    holders = set()
    with contextlib.suppress(psutil.Error, OSError):
        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port:
                holders.add(f"pid {c.pid} ({' '.join(psutil.Process(c.pid).cmdline())[:120]})"
                            if c.pid else "another user's process")
    return f" (held by {', '.join(sorted(holders))})" if holders else ""


def listening_sockets(pid: int) -> set[tuple[str, int]]:
    """``(ip, port)`` of the LISTEN sockets ``pid`` holds, from ``/proc/PID/net``: the tables
    of its own network namespace (psutil reads this process's, where a namespaced task has none)."""
    held = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir() if fd.is_symlink()}
    found = set()
    for family, table in ((socket.AF_INET, "tcp"), (socket.AF_INET6, "tcp6")):
        with contextlib.suppress(FileNotFoundError):  # a kernel without IPv6
            for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                _, local, _, state, *_, inode = row.split()[:10]
                if state == "0A" and f"socket:[{inode}]" in held:  # 0A: LISTEN
                    address, port = local.split(":")  # 32-bit words in this CPU's byte order
                    words = [int(address[i:i + 8], 16) for i in range(0, len(address), 8)]
                    found.add((socket.inet_ntop(family, struct.pack(f"={len(words)}I", *words)),
                               int(port, 16)))
    return found


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct ports nobody listens on and no running cluster of ours holds, sorted."""
    taken = {p for g in list(_LIVE_GROUPS) if g.running() for p in g.claimed}
    ports: set[int] = set()
    while len(ports) < n:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))  # the OS picks a free one
            ports |= {sock.getsockname()[1]} - taken
    return sorted(ports)


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]


def python_module_command(module: str, *args: str) -> list[str]:
    """``[python, -m, module, *args]``, or ValueError if no such module can be found."""
    with contextlib.suppress(ImportError, ValueError):
        if importlib.util.find_spec(module) is not None:
            return [sys.executable, "-m", module, *args]
    raise ValueError(f"no Python module {module!r} to run; worker programs live in "
                     "helpers/workers/ and run as `python -m helpers.workers.NAME`")


# -- a network of their own: tasks no other machine can reach -------------------------------
def unshare_command() -> list[str]:
    """Without root, in a user namespace of one's own: a "root" with no more rights than one."""
    return ["unshare", *(["--user", "--map-root-user"] if os.geteuid() else []), "--net"]


@functools.cache
def isolation_problem() -> str:
    """Why processes cannot get a network namespace of their own here, "" when they can.
    Tried once per process, making one and entering it (a container may allow the one and
    not the other), since a container, a kernel setting or a security policy may refuse."""
    if missing := [tool for tool in ("unshare", "nsenter") if shutil.which(tool) is None]:
        return f"no {' or '.join(missing)} command"
    with ProcessGroup("netns-probe") as group:
        try:
            done = subprocess.run([*start_network_namespace(group), "true"],
                                  capture_output=True, text=True, timeout=30)
            said = (done.stderr or f"exit {done.returncode}") if done.returncode else ""
        except (OSError, RuntimeError, TimeoutError, subprocess.TimeoutExpired) as err:
            said = group.processes["netns"].log() if group.processes else str(err)
    return (said.strip().splitlines() or ["failed"])[-1] if said else ""


# Run as `python -c NAMESPACE_PROGRAM up|- RULE...`: "up" brings the loopback up (SIOCGIFFLAGS,
# SIOCSIFFLAGS with IFF_UP); each rule (`tcp:4000=unix:/d/4000`, or the reverse) listens on
# its left and carries every connection to its right. TCP_NODELAY, which accepted sockets
# inherit: without it small gRPC messages wait 40 ms for an ACK.
NAMESPACE_PROGRAM = """import contextlib, fcntl, os, socket, struct, sys, threading, time
if sys.argv[1] == "up":
    with socket.socket() as s:
        ifreq = fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0))
        flags = struct.unpack_from("16sH", ifreq)[1] | 1
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags))
def opened(side):
    kind, _, where = side.partition(":")
    if kind == "unix":
        return socket.socket(socket.AF_UNIX), where
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, ("127.0.0.1", int(where))
def pump(source, sink):
    with contextlib.suppress(OSError):
        while data := source.recv(1 << 16):
            sink.sendall(data)
    for s in (source, sink):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
def serve(listener, target):
    while True:
        client, (sink, address) = listener.accept()[0], opened(target)
        try:
            sink.connect(address)
        except OSError:
            client.close()
            continue
        for a, b in ((client, sink), (sink, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()
for rule in sys.argv[2:]:
    listener, address = opened(rule.split("=")[0])
    if isinstance(address, str) and os.path.exists(address):
        os.unlink(address)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(address)
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, rule.split("=")[1]), daemon=True).start()
print("ready", flush=True)
while True:
    time.sleep(3600)"""


def start_network_namespace(group: ProcessGroup, inside: Iterable[int] = (),
                            here: Iterable[int] = ()) -> list[str]:
    """Start ``netns`` in ``group``: it holds a new network namespace, loopback up, until the
    group ends it. Return the prefix that runs a command inside (``nsenter`` execs it: same
    pid, same process group). Nothing outside can connect to a port opened inside, but for
    the ports ``inside``, reached from this network's 127.0.0.1, while the namespace reaches
    the ports ``here`` on its own 127.0.0.1: a relay on each side passes every connection on
    through a Unix socket in the group's folder (a file, which both networks see)."""
    out = [f"tcp:{p}=unix:{group.log_dir}/{p}" for p in inside]
    out += [f"unix:{group.log_dir}/{p}=tcp:{p}" for p in here]
    command = [sys.executable, "-I", "-S", "-c", NAMESPACE_PROGRAM]
    for name, prefix, rules in (("netns", [*unshare_command(), *command, "up"], [
            "=".join(rule.split("=")[::-1]) for rule in out]), ("relay", [*command, "-"], out)):
        if name == "netns" or rules:
            proc = group.start(name, [*prefix, *rules])
            group.wait_until(proc, lambda p=proc: "ready" in p.log(), 10, "ready")
    user = ["--user", "--preserve-credentials"] if os.geteuid() else []
    return ["nsenter", f"--target={group.processes['netns'].pid}", *user, "--net", "--"]


# -- starting processes: they die with this one ----------------------------------------------
# Run as `python -I -S -c _LAUNCHER PPID CMD...`: asks the kernel to SIGKILL this process
# when the thread that started it ends (PR_SET_PDEATHSIG = 1), exits if that parent is gone
# already, and execs CMD (same pid, same group; the setting survives exec). A preexec_fn
# would do this in Python between fork and exec of a threaded kernel, where a lock another
# thread held at the fork deadlocks the child; this costs a few milliseconds instead.
_LAUNCHER = """import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])"""
_launcher: tuple[int, concurrent.futures.ThreadPoolExecutor | None] = (0, None)


def _popen(args: list[str], **kwargs: object) -> subprocess.Popen:
    """Popen from one long-lived thread: the parent-death signal follows the *thread* that
    forked, so a child started from a short-lived thread would die with that thread."""
    global _launcher
    args = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(os.getpid()), *args]
    if _launcher[0] != os.getpid():  # first use, or a forked child: no thread yet
        _launcher = (os.getpid(), concurrent.futures.ThreadPoolExecutor(1, "cluster-launcher"))
    future = _launcher[1].submit(subprocess.Popen, args, **kwargs)
    try:
        return future.result()
    except KeyboardInterrupt:  # the process is being started: end it, do not lose it
        popen = future.result()
        os.killpg(popen.pid, signal.SIGKILL)
        popen.wait()
        raise


@dataclass
class ManagedProcess:
    """One process of a group: its command, log file and exit status."""

    name: str
    args: list[str]
    log_path: Path
    popen: subprocess.Popen = field(repr=False)

    pid = property(lambda self: self.popen.pid)

    #: True once the exit status was collected: from then on the pid is not ours.
    reaped = property(lambda self: self.popen.returncode is not None)

    @property
    def returncode(self) -> int | None:
        """None while running; once ended, its group is killed and then the status collected."""
        if self.reaped or not self.has_exited():
            return self.popen.returncode
        self.signal_group(signal.SIGKILL)  # what it left in its group; the id is still ours
        return self.popen.wait()

    alive = property(lambda self: self.returncode is None)

    def has_exited(self) -> bool:
        """True when the process has ended, without collecting its status (waitid WNOWAIT)."""
        if self.reaped:
            return True
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # collected behind our back: let Popen record that
            self.popen.poll()
            return True

    def signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the process group, only while its leader is our unreaped child."""
        if not self.reaped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
                return True
        return False

    def listens_on(self, port: int, host: str = "127.0.0.1") -> bool:
        """Ready: this very process listens on ``port``, not merely "something answers"."""
        return port_accepts(port, host) and port in {p for _, p in self.listening()}

    def listening(self) -> list[tuple[str, int]]:
        """``(ip, port)`` this very process listens on, read from the kernel's socket tables."""
        with contextlib.suppress(psutil.Error, OSError):
            if not self.has_exited():
                return sorted(listening_sockets(self.pid))
        return []

    def log(self) -> str:
        """Everything the process printed so far (stdout and stderr together)."""
        with contextlib.suppress(FileNotFoundError):
            return self.log_path.read_text(errors="replace")
        return ""

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.log().splitlines()[-lines:])


class ProcessGroup(contextlib.AbstractContextManager):
    """Processes started and ended together (a context manager). Without ``log_dir`` it
    makes a folder of its own in the temporary directory (:func:`prune_log_folders`)."""

    def __init__(self, name: str = "cluster", log_dir: Path | str | None = None) -> None:
        self.name = name
        self.processes: dict[str, ManagedProcess] = {}
        self.teardown_seconds: float | None = None
        self.claimed: set[int] = set()
        if log_dir:
            self.log_dir = Path(log_dir)
            try:
                self.log_dir.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise ValueError(f"log_dir {str(log_dir)!r} cannot be a folder ({err.strerror}); "
                                 "give a folder you can write to, or leave it None") from None
        else:
            prune_log_folders(tempfile.gettempdir())
            self.log_dir = Path(tempfile.mkdtemp(
                prefix=f"cluster-logs-{os.getpid()}-{time.time_ns()}-{name}-"))
        _LIVE_GROUPS.add(self)

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def running(self) -> list[str]:
        return [n for n, p in self.processes.items() if not p.has_exited()]

    def claim_ports(self, ports: Iterable[int], what: str) -> None:
        """Hold ``ports`` for this group; ValueError if a running group of ours holds one
        (two clusters on one port would both pass the free-port check, then meet)."""
        wanted = set(ports)
        for other in list(_LIVE_GROUPS):
            shared = sorted(wanted & other.claimed) if other is not self else []
            if shared and other.running():
                raise ValueError(
                    f"port {shared[0]} is already used by another cluster of this process "
                    f"({other.name}, still running: {', '.join(other.running())}); stop() that "
                    f"cluster (or leave its with block) first, or give {what} another port")
        self.claimed = wanted

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None
              ) -> ManagedProcess:
        """Start ``args`` as process ``name``, ``env`` added to this process's environment,
        in its own session and process group, its output in ``<log_dir>/<name>.log``."""
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "wb") as log:
            popen = _popen(list(args), stdout=log, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                           env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHON_COLORS": "0",
                                **(env or {})})  # PYTHON_COLORS: plain tracebacks in logs
        self.processes[name] = ManagedProcess(name, list(args), log_path, popen)
        return self.processes[name]

    def wait_until(self, proc: ManagedProcess, condition: Callable[[], bool], timeout: float,
                   what: str) -> float:
        """Poll ``condition`` until true; return the seconds waited. RuntimeError if ``proc``
        exits first, TimeoutError after ``timeout``: both with the end of its log."""
        start = time.monotonic()

        def check() -> float | None:
            if condition():
                return time.monotonic() - start
            if not proc.alive:
                raise RuntimeError(f"{proc.name} exited with code {proc.returncode} before "
                                   f"{what}; end of its log:\n{proc.log_tail()}")
            return None

        return poll_until(check, timeout, lambda: f"{proc.name} did not reach '{what}' within "
                          f"{timeout:g} s; end of its log:\n{proc.log_tail()}")

    def wait_for_port(self, proc: ManagedProcess, port: int, timeout: float = 60.0) -> float:
        """Wait until ``proc`` itself listens on ``port`` (not merely "something answers")."""
        return self.wait_until(proc, lambda: proc.listens_on(port), timeout,
                               f"listening on {port}")

    def wait(self, names: Iterable[str] | None = None, timeout: float = 120.0) -> dict[str, int]:
        """Wait for processes to exit; return their codes. RuntimeError as soon as one fails
        (the others usually wait for it forever), TimeoutError naming the laggards."""
        chosen = list(self.processes if names is None else names)

        def check() -> dict[str, int] | None:
            codes = {n: self.processes[n].returncode for n in chosen}
            for name, code in codes.items():
                if code not in (None, 0):
                    raise RuntimeError(f"{name} failed with exit code {code}; end of its "
                                       f"log:\n{self.processes[name].log_tail()}")
            return None if None in codes.values() else codes

        return poll_until(check, timeout, lambda: self.laggards(chosen, timeout))

    def laggards(self, names: Iterable[str], timeout: float) -> str:
        """What a wait for ``names`` that timed out says: who still runs, and their logs' end."""
        running = [n for n in names if self.processes[n].returncode is None]
        return (f"still running after {timeout:g} s: {', '.join(running)}; end of their logs:"
                + "".join(f"\n--- {n}:\n{self.processes[n].log_tail(10)}" for n in running))

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one process's group (fault injection: a worker that dies)."""
        proc = self.processes[name]
        if proc.signal_group(sig):
            poll_until(lambda: proc.has_exited() or None, 10,
                       lambda: f"{name} still runs 10 s after signal {sig}", interval=0.01)
        proc.returncode  # noqa: B018  (collects the status, after ending its group)

    def exit_codes(self) -> dict[str, int | None]:
        return {n: p.returncode for n, p in self.processes.items()}

    def stop(self, grace: float = 2.0) -> float:
        """End every process: SIGTERM to each group, SIGKILL after ``grace`` s. Idempotent."""
        start = time.monotonic()
        running = [p for p in self.processes.values() if not p.has_exited()]
        for proc in running:
            proc.signal_group(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):  # a grace period: whoever is left is killed
            poll_until(lambda: all(p.has_exited() for p in running) or None, grace, str, 0.02)
        for proc in running:
            proc.signal_group(signal.SIGKILL)  # stragglers, and anything left in their groups
            proc.popen.wait(timeout=10)
        self.claimed = set()
        self.teardown_seconds = time.monotonic() - start
        return self.teardown_seconds


@atexit.register
def _stop_all_groups() -> None:
    for group in list(_LIVE_GROUPS):
        group.stop(grace=0.5)


def prune_log_folders(root: Path | str, keep: int = 10) -> list[Path]:
    """Remove all but the ``keep`` newest log folders that groups of ended processes made
    under ``root`` (a running notebook may still read its own); return those removed."""
    runs = [(int(found[2]), folder) for folder in Path(root).glob("cluster-logs-*")
            if (found := re.match(r"cluster-logs-(\d+)-(\d+)-", folder.name))
            and not psutil.pid_exists(int(found[1]))]
    removed = [folder for _, folder in sorted(runs, reverse=True)[keep:]]
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    return removed


def leftover_processes() -> list[str]:
    """``pid command`` of every process this one started that still runs (zombies aside):
    what a notebook checks is empty at its end."""
    left = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if child.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{child.pid} {' '.join(child.cmdline())}")
    return left


def describe_exit(code: int | None) -> str:
    """``running``, ``exit 0 (ok)``, ``exit 3 (failed)`` or ``killed by SIGKILL``."""
    if code is None:
        return "running"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit {code} ({'ok' if code == 0 else 'failed'})"


# -- what every local cluster of the series answers, whichever framework it runs -------------
class LocalCluster(contextlib.AbstractContextManager):
    """Tasks started as real processes on this machine and ended with the ``with`` block;
    subclasses set ``self.group`` and define :meth:`task_names`, ``table`` and ``start``."""

    #: A framework's own log lines (TensorFlow's ``I0000 ...] ...``), left out on request.
    FRAMEWORK_LOG_LINE: re.Pattern[str] = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ \S+\] ")
    #: The time and thread id a framework line starts with: shown without them, so that a
    #: stored page does not change with every run.
    LOG_STAMP: re.Pattern[str] = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ ")
    #: Lines that are data for the launcher, not something to read.
    PROTOCOL_LINE: re.Pattern[str] | None = None

    group: ProcessGroup

    def state(self, task: str) -> str:
        """``not started``, ``running``, ``exit 0 (ok)``, ``killed by SIGKILL`` ..."""
        proc = self.group.processes.get(self._check_task(task))
        return describe_exit(proc.returncode) if proc else "not started"

    def exit_codes(self) -> dict[str, int | None]:
        """Exit code per task: None while running (or never started), < 0 for a signal."""
        codes = self.group.exit_codes()
        return {t: codes.get(t) for t in self.task_names()}

    def alive(self) -> list[str]:
        return [t for t in self.task_names() if self._alive(t)]

    def listening_on(self, task: str) -> str:
        """Where ``task``'s own process listens now (from the kernel), e.g. ``127.0.0.1:4123``;
        ``0.0.0.0`` and ``[::]`` are every address of this machine, as TensorFlow listens."""
        proc = self.group.processes.get(self._check_task(task))
        return ", ".join((f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
                         + (" (every address)" if ip in ("0.0.0.0", "::") else "")
                         for ip, port in (proc.listening() if proc else []))

    def logs(self) -> dict[str, str]:
        return {t: self._log(t) for t in self.task_names()}

    def show_logs(self, tasks: Iterable[str] | None = None, last: int | None = None,
                  pattern: str | None = None, framework_lines: bool = True) -> None:
        """Print each task's log under a header with its state: the ``last`` lines, those
        matching ``pattern`` (a regex), without the framework's own lines if asked."""
        try:
            matches = re.compile(pattern or "").search
        except re.error as err:
            raise ValueError(f"pattern {pattern!r} is not a regular expression ({err}); for "
                             "plain text pass re.escape(text)") from None
        for task in self._chosen(tasks):
            lines = [ln for ln in self._log(task).splitlines()
                     if not (self.PROTOCOL_LINE and self.PROTOCOL_LINE.match(ln))
                     and (framework_lines or not self.FRAMEWORK_LOG_LINE.match(ln))
                     and matches(ln)]
            lines = lines[-last:] if last else lines
            print(f"===== {task} [{self.state(task)}] =====")
            print("\n".join(self.LOG_STAMP.sub("", ln) for ln in lines) or "(no output)")

    def wait_for_log(self, task: str, text: str | re.Pattern[str], timeout: float = 60.0) -> float:
        """Wait until ``task``'s log (its latest run) holds ``text`` (a string or a regex);
        return the seconds waited. RuntimeError if it exits first, TimeoutError after
        ``timeout``, both with the end of its log."""
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

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _log(self, task: str) -> str:
        proc = self.group.processes.get(task)
        return proc.log() if proc else ""

    def _check_task(self, task: str) -> str:
        if task not in self.task_names():
            raise ValueError(f"no task {task!r} in this cluster; its tasks are "
                             f"{', '.join(self.task_names())}")
        return task

    def _chosen(self, tasks: Iterable[str] | None) -> list[str]:
        return [self._check_task(t) for t in (self.task_names() if tasks is None else tasks)]

    def _started(self, task: str) -> ManagedProcess:
        proc = self.group.processes.get(self._check_task(task))
        if proc is None:
            raise ValueError(f"{task} never started; call start() first")
        return proc

    def _alive(self, task: str) -> bool:
        proc = self.group.processes.get(task)
        return proc is not None and proc.alive
