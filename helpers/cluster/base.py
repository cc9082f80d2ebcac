"""What every local cluster of the series can do, whichever framework's processes it runs.

A TensorFlow cluster (tasks named ``worker-0``, ``ps-0`` ...) and an MXNet ps-lite
cluster (``scheduler``, ``server-0``, ``worker-0`` ...) differ in how their processes
find each other and when they count as ready, but a lesson asks the same questions of
both: which tasks are there and in what state, what did each print, wait for a line,
kill one on purpose, end them all. :class:`LocalCluster` answers those once, with one
vocabulary, on top of :class:`helpers.cluster.processes.ProcessGroup`; the two
framework classes add how to start their tasks.

Security: neither framework authenticates the processes that connect to a task. Each
table shows where every task really listens (``listening on``, read from the kernel),
and :mod:`helpers.cluster.exposure` says who else could reach those addresses.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable

from helpers.checks import require_int, require_number
from helpers.cluster.ports import format_address
from helpers.cluster.processes import ManagedProcess, ProcessGroup, describe_exit
from helpers.table import Table


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
