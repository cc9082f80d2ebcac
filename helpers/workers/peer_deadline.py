"""Give up, with a message naming the missing peers, when a cluster does not form in time.

When ``MultiWorkerMirroredStrategy`` starts, every task waits until all the tasks of its
cluster have connected (TensorFlow logs ``Waiting for 1/2 tasks to connect``). If a
peer never comes (it crashed, was never started, or has a wrong address), TensorFlow
waits about an hour, inside one C++ call that holds Python's GIL: no Python thread,
timer or signal handler of the waiting process runs until it returns.

So the deadline is kept by a tiny separate process, a *watchdog*, started just before
the wait with :func:`deadline_for_peers`. It waits on a pipe from the worker. When the
worker gets past the wait it closes the pipe and the watchdog exits quietly (it also
exits if the worker dies, since the pipe closes then too). If the deadline comes first,
the watchdog tries each peer's port, prints which peers do not answer and what to do,
into the worker's own output (its log), and ends the worker with SIGKILL: nothing
gentler can interrupt that C++ call.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from helpers.checks import require_number
from helpers.workers.resolvers import read_tf_config

_WATCHDOG = r"""
import os, select, signal, socket, sys
parent, seconds, who, peers = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4:]
released, _, _ = select.select([sys.stdin], [], [], seconds)
if released or os.getppid() != parent:
    sys.exit(0)
silent = []
for peer in peers:
    name, _, address = peer.partition("=")
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=2).close()
    except (OSError, ValueError):
        silent.append(f"{name} at {address}")
missing = ("; not answering: " + ", ".join(silent)) if silent else (
    "; every peer's port answers, so one of them may belong to another cluster")
print(f"[{who}] gave up after {seconds:g} s waiting for the other tasks of the cluster to "
      f"connect{missing}. Start every task listed in TF_CONFIG (each with its own task "
      "index), check the addresses and firewalls, or allow longer with --connect-timeout.",
      file=sys.stderr, flush=True)
os.kill(parent, signal.SIGKILL)
"""


def peers_of_this_task() -> tuple[str, list[str]]:
    """``("worker-0", ["worker-1=host:port", ...])`` from TF_CONFIG; other resolvers: no names."""
    text = os.environ.get("TF_CONFIG")
    if not text:
        return "this task", []
    config = read_tf_config(text, resolve_own_host=False)
    me = (config["task"]["type"], config["task"]["index"])
    peers = [f"{job}-{i}={address}" for job, addresses in config["cluster"].items()
             for i, address in enumerate(addresses) if (job, i) != me]
    return f"{me[0]}-{me[1]}", peers


@contextmanager
def deadline_for_peers(seconds: float, who: str, peers: Sequence[str] = ()) -> Iterator[None]:
    """Kill this process, saying why, unless the ``with`` block ends within ``seconds``.

    ``peers`` are ``"name=host:port"`` strings (``worker-1=10.0.0.2:2222``) the message
    checks and names if they do not answer.
    """
    require_number("the connect timeout (seconds)", seconds, above=0)
    watchdog = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), str(seconds), who,
         *peers], stdin=subprocess.PIPE)
    try:
        yield
    finally:
        watchdog.stdin.close()  # releases the watchdog
        watchdog.wait()
