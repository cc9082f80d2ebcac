"""MXNet 1.9.1 on numpy 2: every numpy name its Python code reads is put back, and no more.

MXNet's metadata says numpy<2; the series installs it without that requirement and
``helpers.frameworks.apply_numpy_fix`` restores the names numpy 2 removed. This test repeats
the scan that found them, over the MXNet actually installed, so that a name missed there
fails here rather than in a learner's kernel. numpy's own table of removed names
(``numpy._expired_attrs_2_0``) misses some (``NAN``, ``in1d``, ``product``, the financial
stubs), so the scan compares against what numpy 1.26.4 answered (tests/numpy_1_26_names.txt).
"""

import ast
import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import numpy

from helpers.frameworks import NUMPY_NAMES_MXNET_READS

NUMPY_1_26 = {line for line in (Path(__file__).parent / "numpy_1_26_names.txt").read_text()
              .splitlines() if line and not line.startswith("#")}


def numpy_names_read(source: str) -> set[str]:
    """The numpy attributes a module reads: ``np.X`` for every alias of ``import numpy``,
    ``from numpy import X``, and, in a module that calls ``getattr(np, name)``, each string
    constant that could be such a name (MXNet keeps lists of numpy function names)."""
    with warnings.catch_warnings():  # MXNet's docstrings hold invalid escapes
        warnings.simplefilter("ignore", SyntaxWarning)
        tree = ast.parse(source)
    aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for a in node.names if a.name == "numpy"}
    names, dynamic = set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "numpy" and not node.level:
            names.update(a.name for a in node.names)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in aliases):
            names.add(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "getattr" and node.args
              and isinstance(node.args[0], ast.Name) and node.args[0].id in aliases):
            dynamic = True
    if dynamic:
        names.update(node.value.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))
    return names


def test_the_scan_finds_direct_dynamic_and_imported_names():
    source = ("import numpy as onp\nfrom numpy import trapz\nx = onp.PINF\n"
              "LIST = ['alltrue', 'linalg.norm']\nf = [getattr(onp, n) for n in LIST]\n")
    assert {"trapz", "PINF", "alltrue", "linalg"} <= numpy_names_read(source)
    assert "alltrue" not in numpy_names_read("import numpy as np\nLIST = ['alltrue']\n")


def test_every_removed_name_mxnet_reads_is_restored_and_nothing_else():
    root = Path(importlib.util.find_spec("mxnet").origin).parent
    read: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        for name in numpy_names_read(path.read_text(encoding="utf-8", errors="replace")):
            read.setdefault(name, str(path.relative_to(root)))
    removed = {name: where for name, where in read.items()
               if name in NUMPY_1_26 and name not in vars(numpy) and not hasattr(numpy, name)
               or name in NUMPY_NAMES_MXNET_READS and name != "bool"}
    missing = sorted(set(removed) - set(NUMPY_NAMES_MXNET_READS))
    assert not missing, f"MXNet reads numpy names that numpy {numpy.__version__} lacks and " \
        f"apply_numpy_fix does not restore: {[(n, removed[n]) for n in missing]}"
    stale = sorted(set(NUMPY_NAMES_MXNET_READS) - set(read) - {"bool"})
    assert not stale, f"restored but never read by MXNet: {stale}"


def test_mxnet_imports_and_computes_on_this_numpy_after_the_fix():
    code = """
import numpy
from helpers import import_mxnet
mx = import_mxnet()
from mxnet import autograd, gluon, nd
net = gluon.nn.Dense(1); net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
with autograd.record():
    loss = net(nd.ones((4, 3))).sum()
loss.backward(); trainer.step(4)
assert float(numpy.sum(mx.np.ones(3))) == 3.0          # numpy dispatch to mxnet.numpy
padded = mx.np.pad(mx.np.ones((2, 2)), ((1, 1), (1, 1)), mode="constant")  # reads np.compat
assert padded.shape == (4, 4)
assert nd.ones(2, ctx=mx.cpu(0)).copyto(mx.cpu(1)).context == mx.cpu(1)
print("ok", numpy.__version__)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
