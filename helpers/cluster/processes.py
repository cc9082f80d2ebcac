"""Start, watch and always end the processes of a local cluster.

Every multi-process lesson (TensorFlow workers and parameter servers, MXNet's scheduler,
servers and workers) needs the same discipline, so it lives here once:

* ports are picked free at run time, never hard-coded;
* each process runs in its own process group with its output in a log file, so the
  notebook can show each task's log and nothing is lost if the process crashes;
* readiness is *checked* (a port accepting connections, a line in the log) with a
  timeout, never assumed after a fixed ``sleep``;
* every wait has a timeout, and a process that dies while we wait is reported at once
  with the end of its log;
* :class:`ProcessGroup` ends everything it started when its ``with`` block ends, on
  success, error, timeout or ``KeyboardInterrupt`` (Jupyter's interrupt), at interpreter
  exit, and, through Linux's parent-death signal, even if the notebook kernel is killed.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from helpers.checks import require_int

_LIVE_GROUPS: weakref.WeakSet[ProcessGroup] = weakref.WeakSet()
_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct free ports."""
    require_int("the number of ports", n, 1)
    ports: set[int] = set()
    while len(ports) < n:
        ports.add(free_port(host))
    return sorted(ports)


def port_accepts(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def ensure_port_free(port: int, host: str = "127.0.0.1") -> None:
    """Raise ValueError, saying what to do, if ``port`` is taken or not a valid port."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"a port is an int between 1 and 65535, not {port!r}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            raise ValueError(
                f"port {port} on {host} is already in use; pick another (helpers.cluster.processes."
                "free_port() finds one) or end the process holding it"
            ) from None


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


def _child_setup() -> None:
    """In the child: own process group, and die with the parent (Linux only)."""
    os.setsid()
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


@dataclass
class ManagedProcess:
    """One process of a group: its command, log file and exit status."""

    name: str
    args: list[str]
    log_path: Path
    popen: subprocess.Popen = field(repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

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
        self.log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix=f"{name}-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.processes: dict[str, ManagedProcess] = {}
        self.teardown_seconds: float | None = None
        _LIVE_GROUPS.add(self)

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(
        self, name: str, args: list[str], env: dict[str, str] | None = None
    ) -> ManagedProcess:
        """Start ``args`` as process ``name`` with ``env`` added to this process's environment."""
        if name in self.processes and self.processes[name].alive:
            raise ValueError(f"a process called {name!r} is already running in {self.name!r}")
        if not args:
            raise ValueError("start() needs a command to run")
        log_path = self.log_dir / f"{name}.log"
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=full_env, preexec_fn=_child_setup, close_fds=True,
            )
        proc = ManagedProcess(name, list(args), log_path, popen)
        self.processes[name] = proc
        return proc

    def wait_until(
        self, proc: ManagedProcess, condition: Callable[[], bool], timeout: float, what: str
    ) -> float:
        """Poll ``condition`` until true; return seconds waited.

        Raises RuntimeError if ``proc`` exits first and TimeoutError after ``timeout``,
        both with the end of its log.
        """
        start = time.monotonic()
        while True:
            if condition():
                return time.monotonic() - start
            if not proc.alive:
                raise RuntimeError(
                    f"{proc.name} exited with code {proc.returncode} before {what}; "
                    f"end of its log:\n{proc.log_tail()}"
                )
            if time.monotonic() - start > timeout:
                raise TimeoutError(
                    f"{proc.name} did not reach '{what}' within {timeout:.0f} s; "
                    f"end of its log:\n{proc.log_tail()}"
                )
            time.sleep(0.05)

    def wait_for_port(self, proc: ManagedProcess, port: int, timeout: float = 60.0) -> float:
        return self.wait_until(proc, lambda: port_accepts(port), timeout, f"listening on {port}")

    def wait_for_log(self, proc: ManagedProcess, text: str, timeout: float = 60.0) -> float:
        return self.wait_until(proc, lambda: text in proc.log(), timeout, f"printing {text!r}")

    def wait(self, names: Iterable[str] | None = None, timeout: float = 120.0) -> dict[str, int]:
        """Wait for processes to exit; return their exit codes. TimeoutError names the laggards.

        Stops early, with RuntimeError, when one of them fails (non-zero exit), since the
        others usually wait for it forever.
        """
        chosen = list(names) if names is not None else list(self.processes)
        unknown = [n for n in chosen if n not in self.processes]
        if unknown:
            raise ValueError(f"no process called {unknown}; started: {list(self.processes)}")
        deadline = time.monotonic() + timeout
        while True:
            codes = {n: self.processes[n].returncode for n in chosen}
            failed = {n: c for n, c in codes.items() if c not in (None, 0)}
            if failed:
                name = next(iter(failed))
                raise RuntimeError(
                    f"{name} failed with exit code {failed[name]}; end of its log:\n"
                    f"{self.processes[name].log_tail()}"
                )
            if all(c is not None for c in codes.values()):
                return {n: int(c) for n, c in codes.items()}
            if time.monotonic() > deadline:
                running = [n for n, c in codes.items() if c is None]
                raise TimeoutError(f"still running after {timeout:.0f} s: {', '.join(running)}")
            time.sleep(0.05)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one process's group (fault injection: a worker that dies)."""
        if name not in self.processes:
            raise ValueError(f"no process called {name!r}; started: {list(self.processes)}")
        proc = self.processes[name]
        if proc.alive:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            proc.popen.wait(timeout=10)

    def exit_codes(self) -> dict[str, int | None]:
        return {n: p.returncode for n, p in self.processes.items()}

    def logs(self) -> dict[str, str]:
        return {n: p.log() for n, p in self.processes.items()}

    def stop(self, grace: float = 2.0) -> float:
        """End every process: SIGTERM to each group, SIGKILL after ``grace`` s. Idempotent."""
        start = time.monotonic()
        alive = [p for p in self.processes.values() if p.alive]
        for proc in alive:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = start + grace
        for proc in alive:
            try:
                proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for proc in alive:
            if proc.alive:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.popen.wait(timeout=10)
        # Grandchildren in the same group (rare) are ended with their leader's group.
        for proc in self.processes.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.teardown_seconds = time.monotonic() - start
        return self.teardown_seconds


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
