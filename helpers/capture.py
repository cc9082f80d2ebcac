"""Capture what a framework writes, so a lesson shows the line it teaches and not the noise.

TensorFlow's C++ runtime writes its placement log and its start-up messages straight to
file descriptors 1 and 2, below Python's ``sys.stdout``. ``contextlib.redirect_stdout``
cannot see those bytes, so :func:`capture_fds` swaps the descriptors themselves for a
temporary file and restores them afterwards, which works in a terminal and in a Jupyter
kernel alike. TensorFlow's Python side reports through the ``logging`` module instead;
:func:`capture_log` collects those records.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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
