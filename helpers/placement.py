"""Capture what TensorFlow writes, and read its device-placement log (notebook 02).

TensorFlow's C++ runtime writes to file descriptors 1 and 2, below Python's ``sys.stdout``
where ``contextlib.redirect_stdout`` cannot see it: :func:`capture_fds` swaps the descriptors
for a temporary file. Its Python side logs through ``logging`` (:func:`capture_log`). With
``log_device_placement`` on, the runtime writes one line per placed node, in two formats:

* graph placement (Session graphs, ``tf.function``): ``MatMul: (MatMul): /job:.../device:CPU:0``,
  on stdout and repeated on stderr with a log prefix;
* eager execution: ``Executing op MatMul in device /job:.../device:CPU:0``, on stderr only."""

from __future__ import annotations

import ctypes
import logging
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from logging.handlers import BufferingHandler
from typing import TextIO

from helpers.output import Table


@dataclass
class CapturedOutput:
    """Text written to each captured descriptor; filled in when the block ends."""
    stdout: str = ""
    stderr: str = ""


def _flush_everything() -> None:
    """Flush Python's, C's and C++'s buffers so bytes land on the descriptor meant for them.

    MXNet turns off C++/C stdio synchronisation when imported; ``std::cout`` (where TensorFlow
    prints graph placement) then keeps a buffer ``fflush`` does not reach, and only then is
    flushing it safe (before a C++ library initialised it, the call would crash)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with suppress(ValueError, OSError, AttributeError):
            stream.flush()  # type: ignore[union-attr]
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)
    if "mxnet" in sys.modules:
        with suppress(OSError, AttributeError, ValueError):
            lib = ctypes.CDLL("libstdc++.so.6")
            lib._ZNSo5flushEv(ctypes.byref(ctypes.c_char.in_dll(lib, "_ZSt4cout")))


@contextmanager
def capture_fds(fds: tuple[int, ...] = (1, 2)) -> Iterator[CapturedOutput]:
    """Send everything written to descriptors ``fds`` (1 and/or 2) inside the block to a buffer."""
    if not fds or not set(fds) <= {1, 2}:
        raise ValueError(f"capture_fds captures descriptors 1 and/or 2, not {fds!r}")
    result, saved, files = CapturedOutput(), {}, {}
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
            text = handle.read().decode("utf-8", errors="replace")
            setattr(result, "stdout" if fd == 1 else "stderr", text)
            handle.close()


@contextmanager
def capture_log(logger_name: str) -> Iterator[list[logging.LogRecord]]:
    """Collect what the logger ``logger_name`` emits inside the block, unprinted.

    TensorFlow's ``ClusterCoordinator`` reports a failed worker through the ``tensorflow``
    logger, from its own threads, with lines of gRPC detail; a lesson shows the one line it
    teaches. The level is left alone; the handlers are put back when the block ends."""
    if not isinstance(logger_name, str) or not logger_name:
        raise ValueError(
            f"capture_log needs a logger name such as 'tensorflow', not {logger_name!r}")
    logger = logging.getLogger(logger_name)
    collect = BufferingHandler(sys.maxsize)  # never full, so it keeps every record
    handlers, propagate = list(logger.handlers), logger.propagate
    logger.handlers, logger.propagate = [collect], False
    try:
        yield collect.buffer
    finally:
        logger.handlers, logger.propagate = handlers, propagate


_LOG_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]+\] ")
_GRAPH_LINE = re.compile(r"^(?P<name>\S.*?): \((?P<op>[A-Za-z0-9_]+)\): (?P<device>/job:\S+)$")
_EAGER_LINE = re.compile(r"^Executing op (?P<op>\S+) in device (?P<device>/job:\S+)$")
# A Session's device report: "Device mapping: ..." and "/job:...device:GPU:0 -> device: 0, ...".
_MAPPING_LINE = re.compile(r"^(Device mapping:|/job:\S+ -> device: )")


@dataclass(frozen=True)
class Placement:
    """One placed node: its name in the graph, its op type, its device, and which log."""
    name: str
    op: str
    device: str
    via: str  # "graph" or "eager"

    #: ``/job:localhost/replica:0/task:0/device:GPU:1`` -> ``GPU:1``.
    short_device = property(lambda self: self.device.rsplit("device:", 1)[-1])


def _clean(line: str) -> str:
    return _LOG_PREFIX.sub("", line.strip())


def parse_placement(stdout: str, stderr: str = "") -> list[Placement]:
    """Graph placement lines from stdout (else stderr: none counts twice), eager ones from both."""
    graph = stdout if any(_GRAPH_LINE.match(_clean(x)) for x in stdout.splitlines()) else stderr
    records = [Placement(m["name"], m["op"], m["device"], "graph")
               for m in map(_GRAPH_LINE.match, map(_clean, graph.splitlines())) if m]
    eager = map(_EAGER_LINE.match, map(_clean, (stdout + "\n" + stderr).splitlines()))
    return records + [Placement(m["op"], m["op"], m["device"], "eager") for m in eager if m]


@dataclass
class PlacementLog:
    """What a captured block placed, plus the raw text for anyone curious."""
    records: list[Placement] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""

    def devices_of(self, op: str) -> set[str]:
        """Short device names where nodes of op type (or node name) ``op`` were placed."""
        return {r.short_device for r in self.records if op in (r.op, r.name)}

    def table(self, skip_plumbing: bool = True, via: str | None = None) -> Table:
        """The records, without the _Arg/_Retval plumbing nodes unless asked; ``via="eager"``
        keeps the ``Executing op`` lines, ``via="graph"`` the placer's."""
        if via not in (None, "graph", "eager"):
            raise ValueError(f"via must be None, 'graph' or 'eager', not {via!r}")
        plumbing = ("_Arg", "_Retval", "_DeviceArg", "_DeviceRetval") if skip_plumbing else ()
        return Table(["node", "op", "device", "log"],
                     [[r.name, r.op, r.short_device, r.via] for r in self.records
                      if r.op not in plumbing and via in (None, r.via)])


class _EagerLineFilter:
    """Stands in for ``sys.stdout``: keeps TensorFlow's placement lines, passes the rest on.

    In a Jupyter kernel TensorFlow hands the eager ``Executing op`` lines and a Session's
    ``Device mapping:`` report to a log listener that writes through Python's ``sys.stdout``,
    not descriptor 1. Text that might be the start of such a line is held until its line ends."""

    _STARTS = ("Executing op ", "Device mapping:", "/job:")

    def __init__(self, target: TextIO) -> None:
        self.target, self.caught, self._pending, self._lock = target, [], "", threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            *lines, self._pending = (self._pending + text).split("\n")
            for line in lines:
                caught = _EAGER_LINE.match(_clean(line)) or _MAPPING_LINE.match(line)
                (self.caught.append if caught else self.target.write)(line + "\n")
            if self._pending and not any(s.startswith(self._pending) or
                                         self._pending.startswith(s) for s in self._STARTS):
                self.target.write(self._pending)
                self._pending = ""
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.target, name)


@contextmanager
def capture_placement() -> Iterator[PlacementLog]:
    """Capture fds 1 and 2 inside the block and parse the placement lines written there, those
    written through Python's ``sys.stdout`` (a Jupyter kernel) too; other text reaches the cell."""
    log = PlacementLog()
    with capture_fds((1, 2)) as captured:
        original = sys.stdout
        sys.stdout = stream = _EagerLineFilter(original)  # type: ignore[assignment]
        try:
            yield log
        finally:
            with stream._lock:
                if stream._pending:
                    original.write(stream._pending)
            sys.stdout = original
    log.stdout, log.stderr = captured.stdout + "".join(stream.caught), captured.stderr
    log.records = parse_placement(log.stdout, log.stderr)
