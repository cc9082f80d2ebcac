"""Save each notebook's measurements as JSON, so runs on different machines can be compared.

Every file records the machine and profile beside the numbers: a timing means little
without knowing it came from 2 shared cores or from eight GPUs. ``make run`` collects
these files into one report.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from helpers.machine import describe_machine

ENV_VAR = "SERIES_RESULTS_DIR"
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def results_dir() -> Path:
    """``$SERIES_RESULTS_DIR``, else ``results/`` at the top of the series' checkout."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    top = Path(__file__).resolve().parent.parent
    return (top if (top / "notebooks").is_dir() else Path.cwd()) / "results"


def _plain(value: Any) -> Any:
    """Make numpy numbers, TimingResults and Tables JSON-friendly."""
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if hasattr(value, "records"):
        return _plain(value.records())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def save_results(name: str, data: dict[str, Any], directory: Path | str | None = None) -> Path:
    """Write ``data`` with machine information to ``<results>/<name>.json``; return the path."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"a results name uses letters, digits, '.', '_' and '-', not {name!r}")
    if not isinstance(data, dict):
        raise ValueError(f"results are a dict of measurements, not {type(data).__name__}")
    folder = Path(directory) if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    record = {"name": name, "saved_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "machine": describe_machine(), "results": _plain(data)}
    path.write_text(json.dumps(record, indent=2, sort_keys=True))
    return path
