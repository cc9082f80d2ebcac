"""The rest of the setup cell on a hosted runtime (Colab, Kaggle), run from the clone.

The setup cell at the top of every notebook clones the series at its release and then runs
this file (``runpy.run_path``), so the cell stays a few folded lines while a learner can
still read, here, everything that is installed and why:

* an unsupported Python stops with one paragraph, before anything is installed;
* ``pip install -e <clone>[runtime]``: the notebooks' pinned packages (the ``runtime`` extra
  of ``pyproject.toml``), with numpy as a range so that a platform's numpy already in memory
  (Colab's) stays; then MXNet 1.9.1 with ``--no-deps`` (its ``numpy<2`` is stale). pip's
  output is printed line by line: about 700 MB take minutes, and silence looks like a hang;
* the clone goes on ``sys.path`` (the editable install's ``.pth`` file is read only when a
  Python starts, so it serves the cluster's worker processes, not this kernel);
* only where pip replaced a module this session already holds (a numpy outside the range)
  is a new process needed: it then *raises* after saying so, so that "Run all" and Kaggle's
  "Save Version" stop here instead of failing later in confusing ways.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from importlib import metadata

HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORTED = ((3, 11), (3, 13))
WATCHED = [("numpy", "numpy"), ("matplotlib", "matplotlib"), ("psutil", "psutil"),
           ("google.protobuf", "protobuf")]


def check_python(version: tuple[int, ...] | None = None) -> None:
    """Refuse a Python the pins have no wheels for, saying what to do instead."""
    major, minor = (version or sys.version_info)[:2]
    if not SUPPORTED[0] <= (major, minor) <= SUPPORTED[1]:
        raise RuntimeError(
            f"This runtime has Python {major}.{minor}; the series runs on Python 3.11 to 3.13 "
            "(TensorFlow 2.21 has no wheel for newer ones). On Colab, open the Command Palette "
            "and choose 'Use fallback runtime version', or a runtime with Python 3.12 or 3.13; "
            "elsewhere, open this notebook with Python 3.13.")


def run(*command: str) -> None:
    """Run a command, printing its output line by line (every front end shows print)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    tail: list[str] = []
    for line in process.stdout:
        print(line, end="")
        tail = (tail + [line.strip()])[-3:]
    if process.wait():  # on Kaggle: switch Internet on in the notebook's settings
        raise RuntimeError(f"{' '.join(command[:4])} ... failed: {' | '.join(tail)}")


def stale_modules() -> list[str]:
    """Modules in memory whose distribution pip replaced on disk: only a new process sees those."""
    stale = []
    for module, dist in WATCHED:
        if module in sys.modules:
            before, now = sys.modules[module].__version__, metadata.version(dist)
            stale += [f"{dist} {before} (now {now})"] if before != now else []
    return stale


def main(home: str = HOME) -> None:
    check_python()
    # TensorFlow, matplotlib, ...; numpy only if the platform's is outside the series' range.
    # Kaggle pins protobuf 5 and TensorFlow 2.21 needs 6.31+: pip upgrades it and names the
    # preinstalled packages that wanted 5; the series uses none of them.
    run(sys.executable, "-m", "pip", "install", "-e", home + "[runtime]")
    run(sys.executable, "-m", "pip", "install", "--no-deps", "-r",
        os.path.join(home, "requirements-mxnet.txt"))
    sys.path.insert(0, home)
    importlib.invalidate_caches()
    stale = stale_modules()
    if stale:
        raise RuntimeError(
            f"Installed, but this session had {', '.join(stale)} loaded already. Restart the "
            "session once (Colab: Runtime > Restart session; Kaggle: Run > Restart & clear cell "
            "outputs) and run all cells: this cell will then do nothing.")
    print("The series is installed in this session: go on, no restart needed.")


if __name__ == "__main__":
    main()
