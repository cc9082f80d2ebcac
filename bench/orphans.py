"""Find the processes a bench run left behind.

Every process the bench starts inherits ``SERIES_BENCH_RUN=<run id>`` (see
:data:`bench.RUN_MARKER`); a process's initial environment is readable in
``/proc/<pid>/environ`` for its whole life, so anything still carrying this run's id
after the bench ended its clusters is a leftover, whoever its parent is now (a
process whose parent died is re-parented to init). Processes of other people's runs
on the same machine carry another id, or none, and are never counted.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from bench import RUN_MARKER

_KINDS = (
    ("helpers.workers", "series worker program"),
    ("tf_server", "TensorFlow server"),
    ("ipykernel", "Jupyter kernel"),
    ("pytest", "pytest"),
    ("bench.", "bench probe"),
)


def classify(cmdline: list[str] | str, environ: dict[str, str] | None = None) -> str:
    """What a leftover process is: an MXNet ps-lite role, a worker, a kernel, ..."""
    text = cmdline if isinstance(cmdline, str) else " ".join(cmdline or [])
    env = environ or {}
    if "DMLC_ROLE" in env:
        return f"MXNet ps-lite {env['DMLC_ROLE']} (DMLC_ROLE)"
    if "TF_CONFIG" in env and "helpers.workers" not in text:
        return "TensorFlow task (TF_CONFIG)"
    for needle, kind in _KINDS:
        if needle in text:
            return kind
    return "other"


def marked_processes(run_id: str, exclude: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """Live processes (zombies excluded) whose environment carries this run's id."""
    import psutil  # noqa: PLC0415

    if not run_id:
        raise ValueError("run_id is empty: the bench sets one at start")
    skip = {os.getpid(), *exclude}
    found = []
    for proc in psutil.process_iter(["pid", "ppid", "cmdline", "status"]):
        if proc.info["pid"] in skip or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            env = proc.environ()
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        if env.get(RUN_MARKER) != run_id:
            continue
        cmd = proc.info["cmdline"] or []
        found.append({"pid": proc.info["pid"], "ppid": proc.info["ppid"],
                      "cmdline": " ".join(cmd)[:200], "kind": classify(cmd, env)})
    return found


def sweep(run_id: str, grace_s: float = 3.0, kill: bool = True) -> dict[str, Any]:
    """Count this run's leftovers after ``grace_s`` (processes may still be exiting).

    With ``kill`` the leftovers are then ended (SIGKILL) so the bench itself leaves
    nothing running; they are still counted.
    """
    deadline = time.monotonic() + grace_s
    left = marked_processes(run_id)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = marked_processes(run_id)
    killed = 0
    if kill:
        for p in left:
            try:
                os.kill(p["pid"], signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return {"count": len(left), "processes": left, "killed": killed}
