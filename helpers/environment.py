"""Check that the installed packages are the ones the series is pinned to.

A plain ``pip install tensorflow mxnet`` quietly installs mxnet 1.0.0.post1 (MXNet 1.9.1
needs numpy < 2, TensorFlow 2.21 prefers numpy 2, and pip backtracks to an ancient
MXNet). Everything then fails later with confusing errors, so the series compares what
is installed with ``requirements.txt`` up front and says how to repair it.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from helpers.table import Table

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;#]+)")
# A CUDA build of MXNet satisfies the `mxnet` pin.
_ALTERNATIVES = {"mxnet": ("mxnet", "mxnet-cu117", "mxnet-cu112")}


def read_pins(path: Path | str = REQUIREMENTS) -> dict[str, str]:
    """``{package: version}`` for every ``name==version`` line of a requirements file."""
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"no requirements file at {file}")
    pins = {}
    for line in file.read_text().splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[match.group(1).lower()] = match.group(2)
    if not pins:
        raise ValueError(f"{file} has no `name==version` lines")
    return pins


def installed_version(package: str) -> str | None:
    """The installed version of a distribution (or of its CUDA twin), None if absent."""
    for name in _ALTERNATIVES.get(package, (package,)):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def pin_report(path: Path | str = REQUIREMENTS) -> Table:
    """A table of each pin, the installed version and whether they agree."""
    table = Table(["package", "pinned", "installed", "ok"])
    for package, pinned in read_pins(path).items():
        installed = installed_version(package)
        table.append([package, pinned, installed or "missing", installed == pinned])
    return table


def broken_pins(path: Path | str = REQUIREMENTS) -> list[str]:
    """Human-readable problems, empty when every pin holds."""
    return [
        f"{package}: pinned {pinned}, installed {installed}"
        for package, pinned, installed, ok in pin_report(path).rows
        if not ok
    ]
