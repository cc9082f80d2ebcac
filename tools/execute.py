"""Execute notebooks in place, the way they are stored: clean kernel, in order, ``ci`` profile.

The series keeps its notebooks executed, outputs included, so that readers see results
on GitHub and nbval can compare them. Every stored notebook must come from the same
recipe, or the page lies about how it was made:

* a fresh ``python3`` kernel per notebook, started in ``notebooks/`` (where a reader's
  kernel starts), with ``SERIES_PROFILE=ci``, the profile ``make test`` validates on;
* cells run top to bottom; a cell tagged ``raises-exception`` may fail, any other
  error stops and the file is left as it was;
* nothing volatile is written: no execution timestamps (``record_timing=False``), no
  Python patch version, none of the fields :mod:`tools.hygiene` checks for.

``python -m tools.execute notebooks/04_matpow_multi_device.ipynb`` (or ``make notebooks``
for all of them). Use ``--output DIR`` to write executed copies elsewhere instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tools.hygiene import KERNELSPEC, strip_volatile

KERNEL = KERNELSPEC["name"]
PROFILE = "ci"


def execute(source: Path, output: Path, timeout: float = 900.0) -> float:
    """Run ``source`` in a fresh kernel and write the executed notebook to ``output``.

    Returns the seconds it took. Raises RuntimeError naming the first cell that failed
    (``output`` is not written then).
    """
    import nbformat  # noqa: PLC0415
    from nbclient import NotebookClient  # noqa: PLC0415
    from nbclient.exceptions import CellExecutionError  # noqa: PLC0415

    nb = nbformat.read(source, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, record_timing=False,
                            resources={"metadata": {"path": str(source.parent)}})
    os.environ["SERIES_PROFILE"] = PROFILE
    began = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as err:
        first = str(err).strip().splitlines()
        raise RuntimeError(f"{source.name} failed; nothing written. {first[-1] if first else ''}"
                           ) from None
    seconds = time.perf_counter() - began
    strip_volatile(nb)
    output.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, output)
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.execute", description=__doc__)
    parser.add_argument("notebooks", nargs="+", type=Path, help="notebooks to execute")
    parser.add_argument("--output", type=Path, default=None,
                        help="write executed copies to this folder instead of in place")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds one cell may run (default: %(default)s)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.notebooks if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    failed = 0
    for source in args.notebooks:
        target = args.output / source.name if args.output else source
        print(f"{source.name} ...", end=" ", flush=True)
        try:
            seconds = execute(source.resolve(), target, args.timeout)
        except RuntimeError as err:
            failed += 1
            print(f"FAILED\n  {err}", flush=True)
            continue
        print(f"ok ({seconds:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
