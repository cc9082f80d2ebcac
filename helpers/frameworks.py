"""Import MXNet and TensorFlow the way every notebook and worker process needs them.

MXNet 1.9.1 (the last release) says ``numpy<2`` yet reads only a few names numpy 2 removed
(``np.PINF``, ``np.alltrue``, ``np.compat``, stubs such as ``np.mirr``): they are put back
before ``import mxnet`` in every process (:data:`NUMPY_NAMES_MXNET_READS`, from a scan of
MXNet's sources that ``tests/test_numpy_fix.py`` repeats). MXNet reads two speed settings
at import: OpenMP threads per operator (half the processors on x86) and its OpenBLAS
kernels (generic SSE3 on recent CPUs); ``import_mxnet`` gives it all physical cores and the
best safe kernels only while it loads (``SERIES_MXNET_TUNING=0``: as installed). The CUDA
build is used only where the MXNet GPU route's probe passed (:mod:`helpers.mxnet_gpu`), else
the CPU wheel, with a paragraph saying why. TensorFlow's C++ start-up chatter on descriptor
2 is kept aside (:func:`startup_log`), not silenced by ``TF_CPP_MIN_LOG_LEVEL``, which would
hide notebook 02's placement lines; ``keras=False`` skips its eager Keras import (3 of 7 s)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy

from helpers import mxnet_gpu
from helpers.machine import physical_cores, share_jit_cache, suggested_coretype
from helpers.placement import capture_fds

_startup_log: list[str] = []

TUNING_ENV = "SERIES_MXNET_TUNING"  # "0": import MXNet with its own thread count and kernels
#: The settings MXNet reads at import that decide its CPU speed.
MXNET_IMPORT_SETTINGS = ("MXNET_OMP_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE")
_mxnet_import: dict[str, dict[str, str]] = {}


def _calling(target: Any, name: str) -> Any:
    """A function of its own that calls ``target``: MXNet keys its dispatch table by the
    numpy function, so two removed names must not share one object with a living one."""
    def restored(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    restored.__name__ = restored.__qualname__ = name
    return restored


def _expired(name: str, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(f"numpy.{name} was removed in numpy 1.20 (numpy_financial has it); "
                       "MXNet only lists it among its NumPy fallbacks")


#: Every name numpy 2 (or 1.24) removed that MXNet 1.9.1's Python code reads, with what
#: numpy 1.26 offered under it. ``bool`` matters only on numpy 1.24-1.26 (numpy 2 has a
#: ``numpy.bool`` of its own, which is kept).
NUMPY_NAMES_MXNET_READS: dict[str, Any] = {
    "bool": bool, "PZERO": 0.0, "NZERO": -0.0, "PINF": numpy.inf, "NINF": -numpy.inf,
    "Inf": numpy.inf, "NaN": numpy.nan, "NAN": numpy.nan, "alltrue": _calling(numpy.all, "alltrue"),
    "sometrue": _calling(numpy.any, "sometrue"), "product": _calling(numpy.prod, "product"),
    "round_": _calling(numpy.round, "round_"), "trapz": _calling(numpy.trapezoid, "trapz"),
    "msort": _calling(lambda a: numpy.sort(a, axis=0), "msort"),
    "in1d": _calling(lambda *args, **kwargs: numpy.isin(*args, **kwargs).ravel(), "in1d"),
    "compat": SimpleNamespace(basestring=str),
    **{name: _calling(functools.partial(_expired, name), name)
       for name in ("mirr", "npv", "pmt", "ppmt", "pv", "rate")}}


def apply_numpy_fix() -> list[str]:
    """Put back the numpy names MXNet 1.9.1 reads (:data:`NUMPY_NAMES_MXNET_READS`).

    Only names this numpy lacks are added; returns them. On Python 3.12+ a process whose
    site-packages were installed after it started (a hosted notebook's setup cell) has no
    ``distutils`` yet, which MXNet imports: importing setuptools provides it."""
    namespace = vars(numpy)
    added = [name for name in NUMPY_NAMES_MXNET_READS if name not in namespace]
    namespace.update({name: NUMPY_NAMES_MXNET_READS[name] for name in added})
    if importlib.util.find_spec("distutils") is None:
        importlib.import_module("setuptools")
    return added


def mxnet_tuning(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The settings ``import_mxnet`` adds for MXNet's speed, given the environment.

    All physical cores unless ``OMP_NUM_THREADS`` or ``MXNET_OMP_MAX_THREADS`` is set, and a safe
    OpenBLAS kernel set unless ``OPENBLAS_CORETYPE`` is; nothing when ``SERIES_MXNET_TUNING=0``."""
    env = dict(os.environ) if environ is None else environ
    if env.get(TUNING_ENV, "1") == "0":
        return {}
    settings = {}
    if not (env.get("OMP_NUM_THREADS") or env.get("MXNET_OMP_MAX_THREADS")):
        settings["MXNET_OMP_MAX_THREADS"] = str(physical_cores())
    if not env.get("OPENBLAS_CORETYPE") and (core := suggested_coretype()) is not None:
        settings["OPENBLAS_CORETYPE"] = core
    return settings


def import_mxnet() -> ModuleType:
    """Apply the numpy fix, import MXNet at full speed (see the module docstring), return it.
    A GPU problem is explained once, on stderr, never raised; the wrong MXNet version is."""
    apply_numpy_fix()
    if "mxnet" not in sys.modules:
        chosen = mxnet_gpu.route()
        if chosen.on_gpu and chosen.side_dir:
            root = Path(chosen.side_dir)
            try:
                mxnet_gpu.load_cuda_libraries(root)
                import_mxnet_from(root)
            except Exception as exc:  # noqa: BLE001  (the probe passed, this process did not)
                for name in [m for m in sys.modules if m == "mxnet" or m.startswith("mxnet.")]:
                    del sys.modules[name]
                chosen = mxnet_gpu.record(mxnet_gpu.classify(1, "", f"{type(exc).__name__}: "
                                                             f"{exc}", root))
        if not chosen.on_gpu:
            mxnet_gpu.announce(chosen)
            import_mxnet_from(None)
    import mxnet  # noqa: PLC0415

    if not mxnet.__version__.startswith("1.9"):
        raise RuntimeError(f"mxnet {mxnet.__version__} is installed, the series needs 1.9.1: "
                           "run `pip install --no-deps -r requirements-mxnet.txt` (or `make "
                           "venv`, which does it)")
    return mxnet


def import_mxnet_from(root: Path | None) -> ModuleType:
    """Import MXNet with :func:`mxnet_tuning`'s settings, from the MXNet GPU route's side
    directory ``root`` (its CUDA libraries loaded first) or this environment's when None."""
    apply_numpy_fix()
    added = mxnet_tuning()
    _mxnet_import["added"] = dict(added)
    with environment_while(added):  # only while MXNet loads: nothing else inherits them
        _mxnet_import["read"] = {k: os.environ[k] for k in MXNET_IMPORT_SETTINGS
                                 if os.environ.get(k)}
        with mxnet_gpu.importable_from(root) if root else contextlib.nullcontext():
            import mxnet  # noqa: PLC0415  (the fix and the settings must come first)
    return mxnet


@contextlib.contextmanager
def environment_while(set_vars: Mapping[str, str] | None = None,
                      unset: Iterable[str] = ()) -> Iterator[None]:
    """Set ``set_vars`` and remove ``unset`` in this process's environment for the block.

    Afterwards exactly those variables get their old values back; anything else changed meanwhile (a
    library that set one while it loaded) stays. Children started in the block inherit them."""
    set_vars, unset = dict(set_vars or {}), tuple(unset)
    saved = {k: os.environ.get(k) for k in {*set_vars, *unset}}
    try:
        for key in unset:
            os.environ.pop(key, None)
        os.environ.update(set_vars)
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def mxnet_route() -> mxnet_gpu.MXNetRoute:
    """The MXNet route this process was, or will be, imported with (may run its probe once)."""
    return mxnet_gpu.route()


def mxnet_import_settings() -> dict[str, dict[str, str]]:
    """What MXNet read when this process imported it: ``{"read": {...}, "added": {...}}``
    (the speed settings in the environment then, and those :func:`import_mxnet` added)."""
    return {key: dict(value) for key, value in _mxnet_import.items()}


def import_tensorflow(keras: bool = True) -> ModuleType:
    """Import TensorFlow and look up its physical devices once, keeping C++ chatter out.

    The lookup is where CUDA is probed (after :func:`share_jit_cache` set its cache); it does
    not start the runtime, so logical devices can still be configured. ``keras=False``, before
    TensorFlow's first import, says Keras is the legacy ``tf_keras`` (``TF_USE_LEGACY_KERAS=1``),
    which is missing, so TensorFlow skips Keras and ``tf.keras`` is unusable in the process
    (left alone where ``tf_keras`` is installed: it would load)."""
    if not keras and "tensorflow" not in sys.modules and \
            importlib.util.find_spec("tf_keras") is None:
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    with capture_fds((2,)) as captured:
        import tensorflow as tf  # noqa: PLC0415

        share_jit_cache(tf)
        tf.config.list_physical_devices()
    if captured.stderr:
        _startup_log.append(captured.stderr)
    tf.get_logger().setLevel("ERROR")
    return tf


def startup_log() -> str:
    """What TensorFlow wrote to stderr while the quiet import ran (empty if nothing)."""
    return "".join(_startup_log)
