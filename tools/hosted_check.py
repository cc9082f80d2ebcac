"""Simulate a hosted notebook runtime end to end (a maintainers' check, run by hand).

``python -m tools.hosted_check [--python PATH] [--numpy 2.1.3]`` makes a fresh virtual
environment holding only numpy and ipykernel, as a hosted runtime has before the series
(Colab: Python 3.13, numpy 2.1.3), clones this repository's committed state, and then, in
one Python process that imports numpy first (Colab's kernel has it loaded before the first
cell), runs the setup cell exactly as :mod:`tools.notebook_setup` writes it, with
``SERIES_REPOSITORY`` pointing at the clone. After the cell the same process must import
the series, run ``import_tensorflow()`` and ``import_mxnet()`` and compute with both, with
numpy still the module it imported first. It prints the seconds from the cell's start to a
working series.

It downloads about 700 MB (less where pip's cache has the wheels), so it is not part of
``make test``. Everything it makes lives in one temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tools.notebook_setup import ROOT, repository_url, setup_source

DRIVER = '''\
import time
import numpy                      # a hosted kernel has numpy loaded before the first cell
first = numpy
began = time.perf_counter()
exec(compile(open("cell.py").read(), "setup-cell", "exec"), {})
cell_seconds = time.perf_counter() - began
import helpers
tf = helpers.import_tensorflow()
mx = helpers.import_mxnet()
import numpy as now
assert now is first and now.__version__ == EXPECTED, (now.__version__, EXPECTED)
a = tf.matmul(tf.ones((2, 2)), tf.ones((2, 2))).numpy().sum()
b = mx.nd.dot(mx.nd.ones((2, 2)), mx.nd.ones((2, 2))).asnumpy().sum()
assert a == b == 8, (a, b)
print(f"HOSTED CHECK OK: numpy {now.__version__} kept, helpers from {helpers.__file__}; "
      f"setup cell {cell_seconds:.0f} s, working series after "
      f"{time.perf_counter() - began:.0f} s")
'''


def newest_python313() -> str:
    """A Python 3.13 interpreter: pyenv's newest, else ``python3.13`` on PATH."""
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.13*/bin/python3.13")))
    return found[-1] if found else (shutil.which("python3.13") or "python3.13")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.hosted_check",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=newest_python313(),
                        help="the runtime's interpreter (default: %(default)s)")
    parser.add_argument("--numpy", default="2.1.3",
                        help="the numpy the runtime has loaded (default: %(default)s, Colab's)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hosted-check-") as tmp:
        work = Path(tmp)
        clone, venv = work / "clone", work / "venv"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "--quiet", f"numpy=={args.numpy}",
                        "ipykernel"], check=True)
        (work / "cell.py").write_text(setup_source(repository_url()))
        (work / "driver.py").write_text(DRIVER.replace("EXPECTED", repr(args.numpy)))
        env = {**os.environ, "HOME": str(work), "SERIES_REPOSITORY": str(clone)}
        env.pop("PYTHONPATH", None)
        done = subprocess.run([python, "driver.py"], cwd=work, env=env)
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
