"""Checks of a worker program's command line: a bad flag ends it at once, in one clear line.

A worker program is started by a launcher, often on another machine, and its mistakes
should read like any command-line mistake: ``prog: error: --hidden must be an int >= 1,
not 0`` and exit code 2 (argparse's ``parser.error``), before TensorFlow or MXNet is
even imported, never a traceback from deep inside them minutes later. The messages are
the shared ones of :mod:`helpers.checks`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helpers.checks import require_int, require_number


def check_flags(parser: argparse.ArgumentParser, args: argparse.Namespace,
                ints: Mapping[str, tuple[int, int | None]] | None = None,
                numbers: Mapping[str, Mapping[str, float]] | None = None) -> None:
    """``parser.error`` for the first flag outside its range.

    ``ints`` maps a destination (``global_batch``) to ``(minimum, maximum or None)``;
    ``numbers`` maps one to :func:`~helpers.checks.require_number`'s bounds
    (``{"above": 0}``), which also refuse NaN and infinity. A list value (``nargs``) is
    checked element by element.
    """
    try:
        for dest, (minimum, maximum) in (ints or {}).items():
            for value in _values(getattr(args, dest)):
                require_int(_flag(dest), value, minimum, maximum)
        for dest, bounds in (numbers or {}).items():
            for value in _values(getattr(args, dest)):
                require_number(_flag(dest), value, **bounds)
    except ValueError as error:
        parser.error(str(error))


def check_writable_dir(parser: argparse.ArgumentParser, dest: str, path: str) -> None:
    """``parser.error`` unless ``path`` is (or can be made) a folder this process can write."""
    if not path:
        return
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        parser.error(f"{_flag(dest)} {path!r} cannot be created ({error.strerror}); give a "
                     "folder you can write to")
    if not os.access(folder, os.W_OK | os.X_OK):
        parser.error(f"{_flag(dest)} {path!r} is not writable by this user; give a folder "
                     "you can write to")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]
