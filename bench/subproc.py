"""Run one bench section or probe in a fresh Python process and read back its JSON.

A fresh process per measurement is what makes configurations comparable: thread counts
and BLAS kernels are chosen when MXNet, OpenBLAS and TensorFlow are loaded, so each
configuration needs its own process started with its own environment. The processes
run in a :class:`helpers.processes.ProcessGroup`, so one that hangs is ended (its
whole process group) and its log comes back in the error.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers.frameworks import environment_while as environment
from helpers.processes import ProcessGroup, python_module_command


def run_json(module: str, options: dict[str, Any] | None = None, *,
             env: dict[str, str] | None = None, unset: tuple[str, ...] = (),
             timeout: float = 300.0, name: str = "probe") -> dict[str, Any]:
    """Run ``python -m module --out FILE --options JSON`` and return the JSON it wrote.

    ``env`` is added to the child's environment and ``unset`` variables are left out of
    it. RuntimeError with the end of the child's log if it fails or writes nothing,
    TimeoutError after ``timeout`` seconds; the child is ended either way.
    """
    command = python_module_command(module)
    opts = json.dumps(options or {})
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out = Path(tmp) / "out.json"
        with ProcessGroup(f"bench-{name}", log_dir=tmp) as group:
            with environment(env, unset):
                group.start(name, [*command, "--out", str(out), "--options", opts])
            try:
                group.wait([name], timeout=timeout)
            except TimeoutError as exc:
                raise TimeoutError(
                    f"{module} ({name}) ran over {timeout:.0f} s; end of its log:\n"
                    f"{group.processes[name].log_tail(15)}"
                ) from exc
        if not out.exists():
            raise RuntimeError(f"{module} ({name}) exited without writing its results")
        return json.loads(out.read_text())


def child_main(measure: Callable[..., dict[str, Any]], argv: list[str] | None = None) -> int:
    """Entry point of every child: ``--out FILE --options JSON`` -> ``measure(**options)``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, help="where to write the JSON results")
    parser.add_argument("--options", default="{}", help="JSON keyword arguments for measure()")
    ns = parser.parse_args(argv if argv is not None else sys.argv[1:])
    options = json.loads(ns.options)
    if not isinstance(options, dict):
        parser.error("--options must be a JSON object")
    data = measure(**options)
    Path(ns.out).write_text(json.dumps(data, indent=2, sort_keys=True))
    return 0
