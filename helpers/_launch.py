"""Run a command that dies with the process that started it (Linux): ``_launch.py PPID CMD...``.

:class:`helpers.processes.ProcessGroup` starts every task through this file
instead of asking ``subprocess`` for a ``preexec_fn``. A ``preexec_fn`` runs Python
between ``fork`` and ``exec`` in the child of a multi-threaded process (a notebook
kernel running TensorFlow has dozens of threads), where a lock held by another thread
at the moment of the fork deadlocks the child; Python's documentation warns against it.
This launcher does the same job after a clean ``exec`` of a fresh interpreter:

1. ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills this process when the thread
   that started it ends (the parent's launcher thread lives as long as the parent);
2. ``getppid()`` is still ``PPID``: otherwise the parent died before step 1 took effect,
   and nobody would end this process, so it exits at once;
3. ``exec`` the real command: same pid, same process group, and the parent-death
   signal survives ``exec``.

It is run as a file with ``python -I -S`` (no ``site``, no ``helpers`` package), so it
imports only ``ctypes`` and adds milliseconds to a task that then spends seconds
importing its framework. Elsewhere than Linux there is no parent-death signal and tasks
are started directly.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> int:
    parent, command = int(argv[1]), argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        print(f"launcher: prctl failed (errno {ctypes.get_errno()})", file=sys.stderr)
    if os.getppid() != parent:
        return 1  # the process that started us is gone already
    try:
        os.execvp(command[0], command)
    except OSError as error:
        print(f"launcher: cannot run {command[0]!r}: {error}", file=sys.stderr)
        return 127
    return 0  # not reached: exec replaced this program


if __name__ == "__main__":
    sys.exit(main(sys.argv))
