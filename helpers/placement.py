"""Where an op ran: TensorFlow's device-placement log, captured and parsed.

TensorFlow's C++ runtime writes its placement log straight to file descriptors 1 and 2,
below Python's ``sys.stdout``, so ``contextlib.redirect_stdout`` never sees it:
:func:`capture_fds` swaps the descriptors themselves for a temporary file (in a terminal
and in a Jupyter kernel alike), and :func:`capture_log` collects what TensorFlow's Python
side sends through ``logging``. With ``log_device_placement`` on (``ConfigProto`` for a
TF1 ``Session``, ``tf.debugging.set_log_device_placement(True)`` in TF2), two formats
arrive:

* graph placement (Session graphs and ``tf.function``), on stdout and again on stderr::

      MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0

* eager execution, one line per executed op, on stderr only::

      Executing op MatMul in device /job:localhost/replica:0/task:0/device:CPU:0

The notebook turns logging on with the real API; this module only captures and parses.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

from helpers.output import Table

_STREAMS = {1: "stdout", 2: "stderr"}


@dataclass
class CapturedOutput:
    """Text written to each captured descriptor; filled in when the block ends."""

    text: dict[int, str] = field(default_factory=dict)

    @property
    def stdout(self) -> str:
        return self.text.get(1, "")

    @property
    def stderr(self) -> str:
        return self.text.get(2, "")


def _flush_cpp_cout() -> None:
    """Flush C++'s ``std::cout``.

    MXNet turns off the C++/C stdio synchronisation when it is imported, after which
    ``std::cout`` (where TensorFlow prints graph placement) keeps its own buffer that
    ``fflush`` does not reach. Only then is it needed (and only then is it safe: before
    a C++ library has initialised ``std::cout`` the call would crash the process).
    """
    if "mxnet" not in sys.modules:
        return
    try:
        lib = ctypes.CDLL("libstdc++.so.6")
        cout = ctypes.c_char.in_dll(lib, "_ZSt4cout")
        lib._ZNSo5flushEv(ctypes.byref(cout))
    except (OSError, AttributeError, ValueError):
        pass


def _flush_everything() -> None:
    """Flush Python's, C's and C++'s buffers so bytes land on the descriptor meant for them."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (ValueError, OSError):
            pass
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
    _flush_cpp_cout()


@contextmanager
def capture_fds(fds: tuple[int, ...] = (1, 2)) -> Iterator[CapturedOutput]:
    """Send everything written to ``fds`` inside the block to a buffer instead.

    >>> with capture_fds((1,)) as out:
    ...     os.write(1, b"hello")
    >>> out.stdout
    'hello'
    """
    unknown = [fd for fd in fds if fd not in _STREAMS]
    if unknown or not fds:
        raise ValueError(f"capture_fds captures descriptors 1 and/or 2, not {fds!r}")
    result = CapturedOutput()
    saved: dict[int, int] = {}
    files = {}
    _flush_everything()
    try:
        for fd in fds:
            files[fd] = tempfile.TemporaryFile()
            saved[fd] = os.dup(fd)
            os.dup2(files[fd].fileno(), fd)
        yield result
    finally:
        _flush_everything()
        for fd, original in saved.items():
            os.dup2(original, fd)
            os.close(original)
        for fd, handle in files.items():
            handle.seek(0)
            result.text[fd] = handle.read().decode("utf-8", errors="replace")
            handle.close()


class _Collect(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def capture_log(logger_name: str) -> Iterator[list[logging.LogRecord]]:
    """Collect what the Python logger ``logger_name`` emits inside the block, unprinted.

    TensorFlow's ``ClusterCoordinator`` reports a failed worker through the
    ``tensorflow`` logger, from its own threads, with several lines of gRPC detail per
    failure. A lesson that provokes the failure collects the records (each has its
    ``created`` time and ``getMessage()``) and shows the one line it teaches. The
    logger's level is left as it is; its handlers are put back when the block ends.
    """
    if not isinstance(logger_name, str) or not logger_name:
        raise ValueError(
            f"capture_log needs a logger name such as 'tensorflow', not {logger_name!r}")
    logger = logging.getLogger(logger_name)
    records: list[logging.LogRecord] = []
    handlers, propagate = list(logger.handlers), logger.propagate
    logger.handlers = [_Collect(records)]
    logger.propagate = False
    try:
        yield records
    finally:
        logger.handlers = handlers
        logger.propagate = propagate


_LOG_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]+\] ")
_GRAPH_LINE = re.compile(r"^(?P<name>\S.*?): \((?P<op>[A-Za-z0-9_]+)\): (?P<device>/job:\S+)$")
_EAGER_LINE = re.compile(r"^Executing op (?P<op>\S+) in device (?P<device>/job:\S+)$")
# A Session's device report: "Device mapping: ..." and "/job:...device:GPU:0 -> device: 0, ...".
_MAPPING_LINE = re.compile(r"^(Device mapping:|/job:\S+ -> device: )")


@dataclass(frozen=True)
class Placement:
    """One placed node: its name in the graph, its op type, its device and the log it came from."""

    name: str
    op: str
    device: str
    via: str  # "graph" or "eager"

    @property
    def short_device(self) -> str:
        """``/job:localhost/replica:0/task:0/device:GPU:1`` -> ``GPU:1``."""
        return self.device.rsplit("device:", 1)[-1]


def _clean(line: str) -> str:
    return _LOG_PREFIX.sub("", line.strip())


def parse_placement(stdout: str, stderr: str = "") -> list[Placement]:
    """Parse placement lines. Graph lines come from stdout (or from stderr if stdout has
    none, so nothing is counted twice); eager lines come from stderr."""
    stdout_has_graph = any(_GRAPH_LINE.match(_clean(line)) for line in stdout.splitlines())
    graph_source = stdout if stdout_has_graph else stderr
    records: list[Placement] = []
    for line in graph_source.splitlines():
        match = _GRAPH_LINE.match(_clean(line))
        if match:
            records.append(Placement(match["name"], match["op"], match["device"], "graph"))
    for line in (stdout + "\n" + stderr).splitlines():
        match = _EAGER_LINE.match(_clean(line))
        if match:
            records.append(Placement(match["op"], match["op"], match["device"], "eager"))
    return records


@dataclass
class PlacementLog:
    """What a captured block placed, plus the raw text for anyone curious."""

    records: list[Placement] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""

    def devices_of(self, op: str) -> set[str]:
        """Short device names where nodes of op type (or node name) ``op`` were placed."""
        return {r.short_device for r in self.records if op in (r.op, r.name)}

    def devices(self) -> set[str]:
        return {r.short_device for r in self.records}

    def table(self, skip_plumbing: bool = True, via: str | None = None) -> Table:
        """Records as a table; by default without the _Arg/_Retval plumbing nodes.

        ``via="eager"`` keeps only the ``Executing op`` lines (one per op that ran): an eager
        op can also log the placement of the one-op function TensorFlow runs it as.
        ``via="graph"`` keeps only the placer's lines.
        """
        if via not in (None, "graph", "eager"):
            raise ValueError(f"via must be None, 'graph' or 'eager', not {via!r}")
        table = Table(["node", "op", "device", "log"])
        for r in self.records:
            if skip_plumbing and r.op in ("_Arg", "_Retval", "_DeviceArg", "_DeviceRetval"):
                continue
            if via is not None and r.via != via:
                continue
            table.append([r.name, r.op, r.short_device, r.via])
        return table


class _EagerLineFilter:
    """Stands in for ``sys.stdout``: keeps TensorFlow's placement lines, passes other text on.

    Inside a Jupyter kernel TensorFlow hands some log messages (the eager ``Executing op``
    lines and a ``Session``'s ``Device mapping:`` report) to a log listener that writes
    them through Python's ``sys.stdout`` (the kernel's stream object), not through
    descriptor 1, so swapping descriptors alone cannot catch them. Text that only might be
    the start of such a line is held until its line ends.
    """

    _STARTS = ("Executing op ", "Device mapping:", "/job:")

    def __init__(self, target: TextIO) -> None:
        self.target = target
        self.caught: list[str] = []
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                if _EAGER_LINE.match(_clean(line)) or _MAPPING_LINE.match(line):
                    self.caught.append(line + "\n")
                else:
                    self.target.write(line + "\n")
            if self._pending and not any(
                start.startswith(self._pending) or self._pending.startswith(start)
                for start in self._STARTS
            ):
                self.target.write(self._pending)
                self._pending = ""
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def finish(self) -> None:
        """Pass on whatever partial line is still held."""
        with self._lock:
            if self._pending:
                self.target.write(self._pending)
                self._pending = ""

    def __getattr__(self, name: str) -> object:
        return getattr(self.target, name)


@contextmanager
def _filter_python_stdout() -> Iterator[_EagerLineFilter]:
    original = sys.stdout
    sys.stdout = stream = _EagerLineFilter(original)  # type: ignore[assignment]
    try:
        yield stream
    finally:
        stream.finish()
        sys.stdout = original


@contextmanager
def capture_placement() -> Iterator[PlacementLog]:
    """Capture fds 1 and 2 inside the block and parse the placement lines written there.

    Eager ``Executing op`` lines that TensorFlow writes through Python's ``sys.stdout`` (as
    it does inside a Jupyter kernel) are caught too. Other text that Python code prints
    inside the block still reaches a Jupyter cell (the kernel does not print through
    descriptor 1); in a terminal it lands in ``.stdout``.
    """
    log = PlacementLog()
    with capture_fds((1, 2)) as captured, _filter_python_stdout() as python_stdout:
        yield log
    log.stdout = captured.stdout + "".join(python_stdout.caught)
    log.stderr = captured.stderr
    log.records = parse_placement(log.stdout, log.stderr)
