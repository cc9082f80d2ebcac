"""Wall time of the notebook suite under nbval, in total and per notebook.

``suite_seconds`` is the wall time of exactly what CI runs for the notebooks,
``SERIES_PROFILE=ci python -m pytest notebooks``, measured from start to exit. The
per-notebook times come from the same run: pytest writes a JUnit XML report in which
each notebook cell is one test case with its time (set-up, call and tear-down, so the
kernel's start-up lands on the first cell and its shut-down on the last); the cells of
one notebook are summed.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from bench.stats import NOTEBOOK_LIMIT_S
from helpers.machine import load_average

#: What a code cell that builds hosts on shaped links calls (helpers.links).
SHAPED_MARK = "ShapedNetwork("


def shaped_cells(notebook: str | Path) -> set[str]:
    """nbval's names (``"Cell k"``, k counting code cells only) of the cells of ``notebook``
    that build hosts on shaped links: their time is what the shaped sections cost the suite."""
    try:
        cells = json.loads(Path(notebook).read_text())["cells"]
    except FileNotFoundError:
        raise FileNotFoundError(f"no notebook {notebook}: run the bench from the repository "
                                "root, where the JUnit report's paths start") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{notebook} is not a notebook ({exc})") from None
    code = [c for c in cells if c.get("cell_type") == "code"]
    return {f"Cell {k}" for k, c in enumerate(code) if SHAPED_MARK in "".join(c.get("source", ""))}


def per_notebook(junit_xml: str | Path,
                 root: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """``{notebook file: {"seconds", "cells", "failed"}}`` from a pytest JUnit report; with a
    ``root``, also ``"shaped_seconds"``: the cells that build shaped links, found by reading
    each notebook under ``root`` (where the report's paths start).

    Needs the ``xunit1`` family (it records each case's file); falls back to the class
    name when a case has no ``file`` attribute.
    """
    path = Path(junit_xml)
    if not path.exists():
        raise FileNotFoundError(f"no JUnit report at {path}: did pytest run with --junitxml?")
    try:
        report = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{path} is not a JUnit XML report: {exc}") from None
    books: dict[str, dict[str, Any]] = {}
    shaped: dict[str, set[str]] = {}
    for case in report.iter("testcase"):
        name = case.get("file") or case.get("classname", "?")
        entry = books.setdefault(name, {"seconds": 0.0, "cells": 0, "failed": 0}
                                 | ({} if root is None else {"shaped_seconds": 0.0}))
        if root is not None and name not in shaped:  # a case without a file names no notebook
            shaped[name] = shaped_cells(Path(root) / name) if case.get("file") else set()
        seconds = float(case.get("time") or 0.0)
        entry["seconds"] += seconds
        if root is not None:
            entry["shaped_seconds"] += seconds if case.get("name") in shaped[name] else 0.0
        entry["cells"] += 1
        if case.find("failure") is not None or case.find("error") is not None:
            entry["failed"] += 1
    return dict(sorted(books.items()))


def over_limit(books: dict[str, dict[str, Any]], limit_s: float = NOTEBOOK_LIMIT_S) -> list[str]:
    """Notebooks whose time exceeds ``limit_s``."""
    return [name for name, b in books.items() if b["seconds"] > limit_s]


def measure(path: str = "notebooks", timeout: float = 1500.0,
            profile: str = "ci") -> dict[str, Any]:
    """Run the suite once; total wall seconds, per-notebook seconds, pass/fail."""
    from helpers.links import shaping_problem  # noqa: PLC0415
    from helpers.processes import ProcessGroup  # noqa: PLC0415

    if not Path(path).is_dir():
        raise FileNotFoundError(f"no {path}/ folder here; run the bench from the repository root")
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        junit = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", path, "-q", f"--junitxml={junit}",
                   "-o", "junit_family=xunit1"]
        load_before = load_average()
        with ProcessGroup("bench-suite", log_dir=tmp) as group:
            began = time.monotonic()
            proc = group.start("pytest", command, {"SERIES_PROFILE": profile})
            try:
                group.wait(["pytest"], timeout=timeout)
            except RuntimeError:
                pass  # failures: the exit code and the report say which
            seconds = time.monotonic() - began
            code = proc.returncode
            tail = proc.log_tail(5)
        load_after = load_average()
        books = per_notebook(junit, root=".") if junit.exists() else {}
    return {
        "command": f"SERIES_PROFILE={profile} python -m pytest {path}",
        "suite_seconds": seconds, "exit_code": code, "passed": code == 0,
        "notebooks": books, "over_limit": over_limit(books),
        "cells_seconds": sum(b["seconds"] for b in books.values()),
        "shaped_seconds": sum(b.get("shaped_seconds", 0.0) for b in books.values()),
        "shaping_problem": shaping_problem(),  # "" where the notebooks could build the links
        "summary": tail.splitlines()[-1] if tail else "",
        "load_average_before": load_before, "load_average_after": load_after,
    }
