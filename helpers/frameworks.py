"""Import MXNet and TensorFlow the way every notebook and worker process needs them.

MXNet 1.9.1 (2022) is the last MXNet release: the project moved to the Apache Attic in
2023. Its metadata says ``numpy<2``, yet its Python code reads only a few names that numpy
2 removed (constants such as ``np.PINF``, aliases such as ``np.alltrue``, ``np.compat``,
stubs such as ``np.mirr``), at import time and when it registers its NumPy dispatch. The
series installs MXNet without that stale requirement and puts those names back before
``import mxnet``, in *every* process (notebook kernels, cluster workers):
:data:`NUMPY_NAMES_MXNET_READS`, found by scanning MXNet's sources
(``tests/test_numpy_fix.py`` repeats the scan, so a name missed here fails CI).

MXNet's CPU speed depends on two settings it reads once, at import: how many OpenMP
threads each operator gets (on x86 it assumes hyper-threading and takes half of the
processors, which leaves half the cores idle on machines with one thread per core) and
which kernels its bundled OpenBLAS 0.3.13 uses (it does not recognise recent CPUs and
falls back to generic SSE3 ones). Unless the user set them, ``import_mxnet`` gives MXNet
all physical cores and the best kernel set the CPU's flags allow, the latter for MXNet's
OpenBLAS alone: NumPy's OpenBLAS is already loaded by then and keeps its own choice, and
both variables are removed again after the import so that no other library or child
process inherits them. ``SERIES_MXNET_TUNING=0`` imports MXNet exactly as installed.

Which MXNet: the environment's own (the CPU wheel, also on GPU machines by default), or
the CUDA build of the opt-in MXNet GPU route, but only once a probe in a separate
process showed that it loads and runs a kernel on this GPU (:mod:`helpers.mxnet_gpu`
explains why). Whatever fails on the GPU side, ``import_mxnet`` falls back to the CPU
wheel with a one-paragraph explanation: it never leaves a kernel without MXNet.

TensorFlow prints several lines of C++ start-up messages (oneDNN, CUDA probing, CPU
features) on stderr when it is imported and when it first looks for devices. The quiet
import captures the descriptor while that happens and keeps the text for anyone who wants
to read it. It deliberately leaves ``TF_CPP_MIN_LOG_LEVEL`` alone: raising it would also
hide the ``Executing op ... in device ...`` lines that the placement lessons read.

TensorFlow 2.16+ also imports Keras eagerly at start-up: about 3 of the 7 seconds an
import takes on a 2-core machine. Worker programs that use no Keras (TF1 graph code, a
bare ``tf.distribute.Server``) skip that with ``import_tensorflow(keras=False)``, which
matters when several tasks start at once on the same cores.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy

from helpers.placement import capture_fds
from helpers.machine import physical_cores, share_jit_cache, suggested_coretype

_startup_log: list[str] = []

#: Set to ``0`` to import MXNet with its own thread count and kernel choice.
TUNING_ENV = "SERIES_MXNET_TUNING"
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


def _expired(name: str) -> Any:
    def expired(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"numpy.{name} was removed in numpy 1.20 (numpy_financial has it); "
                           "MXNet only lists it among its NumPy fallbacks")

    expired.__name__ = expired.__qualname__ = name
    return expired


def _in1d(ar1: Any, ar2: Any, assume_unique: bool = False, invert: bool = False) -> Any:
    return numpy.isin(ar1, ar2, assume_unique=assume_unique, invert=invert).ravel()


#: Every name numpy 2 (or 1.24) removed that MXNet 1.9.1's Python code reads, with what
#: numpy 1.26 offered under it. ``bool`` matters only on numpy 1.24-1.26 (numpy 2 has a
#: ``numpy.bool`` of its own, which is kept).
NUMPY_NAMES_MXNET_READS: dict[str, Any] = {
    "bool": bool,
    "PZERO": 0.0, "NZERO": -0.0, "PINF": numpy.inf, "NINF": -numpy.inf, "Inf": numpy.inf,
    "NaN": numpy.nan, "NAN": numpy.nan,
    "alltrue": _calling(numpy.all, "alltrue"), "sometrue": _calling(numpy.any, "sometrue"),
    "product": _calling(numpy.prod, "product"), "round_": _calling(numpy.round, "round_"),
    "trapz": _calling(getattr(numpy, "trapezoid", None) or getattr(numpy, "trapz", None),
                      "trapz"),
    "msort": _calling(lambda a: numpy.sort(a, axis=0), "msort"),
    "in1d": _calling(_in1d, "in1d"),
    "compat": SimpleNamespace(basestring=str),
    **{name: _expired(name) for name in ("mirr", "npv", "pmt", "ppmt", "pv", "rate")},
}


def apply_numpy_fix() -> list[str]:
    """Put back the numpy names MXNet 1.9.1 reads (:data:`NUMPY_NAMES_MXNET_READS`).

    Only names this numpy lacks are added; returns them. On Python 3.12+ a process whose
    site-packages were installed after it started (a hosted notebook's setup cell) has no
    ``distutils`` yet, which MXNet imports: importing setuptools provides it.
    """
    namespace = vars(numpy)
    added = [name for name in NUMPY_NAMES_MXNET_READS if name not in namespace]
    for name in added:
        namespace[name] = NUMPY_NAMES_MXNET_READS[name]
    if importlib.util.find_spec("distutils") is None:
        importlib.import_module("setuptools")
    return added


def mxnet_tuning(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The settings ``import_mxnet`` adds for MXNet's speed, given the environment.

    All physical cores unless ``OMP_NUM_THREADS`` or ``MXNET_OMP_MAX_THREADS`` is set, and
    a safe OpenBLAS kernel set unless ``OPENBLAS_CORETYPE`` is; nothing at all when
    ``SERIES_MXNET_TUNING=0``.
    """
    env = dict(os.environ) if environ is None else environ
    if env.get(TUNING_ENV, "1") == "0":
        return {}
    settings = {}
    if not (env.get("OMP_NUM_THREADS") or env.get("MXNET_OMP_MAX_THREADS")):
        settings["MXNET_OMP_MAX_THREADS"] = str(physical_cores())
    core = None if env.get("OPENBLAS_CORETYPE") else suggested_coretype()
    if core is not None:
        settings["OPENBLAS_CORETYPE"] = core
    return settings


def import_mxnet() -> ModuleType:
    """Apply the numpy fix, import MXNet at full speed (see the module docstring), return it.

    The CUDA build where the MXNet GPU route passed its probe, else the CPU wheel; a GPU
    problem is explained (once, on stderr), never raised. Raises a RuntimeError that says
    what to install if the wrong MXNet version is present.
    """
    apply_numpy_fix()
    if "mxnet" not in sys.modules:
        _import_chosen_mxnet()
    import mxnet  # noqa: PLC0415

    if not mxnet.__version__.startswith("1.9"):
        raise RuntimeError(
            f"mxnet {mxnet.__version__} is installed, the series needs 1.9.1: "
            "run `pip install --no-deps -r requirements-mxnet.txt` (or `make venv`, which does it)"
        )
    return mxnet


def _import_chosen_mxnet() -> None:
    from helpers import mxnet_gpu  # noqa: PLC0415

    chosen = mxnet_gpu.route()
    if chosen.on_gpu and chosen.side_dir:
        root = Path(chosen.side_dir)
        try:
            mxnet_gpu.load_cuda_libraries(root)
            import_mxnet_from(root)
        except Exception as exc:  # noqa: BLE001  (the probe passed, this process did not)
            for name in [m for m in sys.modules if m == "mxnet" or m.startswith("mxnet.")]:
                del sys.modules[name]
            chosen = mxnet_gpu.classify(1, "", f"{type(exc).__name__}: {exc}", root)
    if not chosen.on_gpu:
        mxnet_gpu.announce(chosen)
        import_mxnet_from(None)
    mxnet_gpu.record(chosen)


def import_mxnet_from(root: Path | None) -> ModuleType:
    """Import MXNet with the speed settings of :func:`mxnet_tuning`: from the side
    directory ``root`` of the MXNet GPU route, or this environment's MXNet when None.

    :func:`import_mxnet` decides which; call this only to probe a build (its CUDA
    libraries must be loaded first, :func:`helpers.mxnet_gpu.load_cuda_libraries`).
    """
    from helpers.mxnet_gpu import importable_from  # noqa: PLC0415

    apply_numpy_fix()
    added = mxnet_tuning()
    _mxnet_import["added"] = dict(added)
    with environment_while(added):  # only while MXNet loads: nothing else inherits them
        _mxnet_import["read"] = {k: os.environ[k] for k in MXNET_IMPORT_SETTINGS
                                 if os.environ.get(k)}
        with importable_from(root) if root is not None else contextlib.nullcontext():
            import mxnet  # noqa: PLC0415  (the fix and the settings must come first)
    return mxnet


@contextlib.contextmanager
def environment_while(set_vars: Mapping[str, str] | None = None,
                      unset: Iterable[str] = ()) -> Iterator[None]:
    """Set ``set_vars`` and remove ``unset`` in this process's environment for the block.

    Afterwards exactly those variables get their old values back (or are removed again);
    whatever else changed meanwhile, e.g. a library that set a variable of its own while
    it loaded, stays as it is. Children started inside the block inherit the changes.
    """
    set_vars, unset = dict(set_vars or {}), tuple(unset)
    saved = {k: os.environ.get(k) for k in {*set_vars, *unset}}
    try:
        for key in unset:
            os.environ.pop(key, None)
        for key, value in set_vars.items():
            if not isinstance(value, str):
                raise ValueError(f"environment values are strings, not {value!r} for {key}")
            os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def mxnet_route() -> Any:
    """How this process gets its MXNet: a :class:`helpers.mxnet_gpu.MXNetRoute`.

    The route MXNet was imported with, or, before the import, the one it will take (which
    may run the probe of the MXNet GPU route once for the session).
    """
    from helpers import mxnet_gpu  # noqa: PLC0415

    return mxnet_gpu.used_route() or mxnet_gpu.route()


def mxnet_import_settings() -> dict[str, dict[str, str]]:
    """What MXNet read when this process imported it: ``{"read": {...}, "added": {...}}``.

    ``read`` holds the speed settings in the environment at that moment, ``added`` the
    ones :func:`import_mxnet` put there itself. Empty before MXNet is imported.
    """
    return {key: dict(value) for key, value in _mxnet_import.items()}


def import_tensorflow(quiet: bool = True, keras: bool = True) -> ModuleType:
    """Import TensorFlow and look up its physical devices once, keeping C++ chatter out.

    The physical-device lookup is where CUDA is probed; it does not initialise the
    runtime, so logical devices can still be configured afterwards.

    ``keras=False``, in a process that has not imported TensorFlow yet, makes TensorFlow
    skip its eager Keras import: it is told that Keras is the legacy ``tf_keras`` package
    (``TF_USE_LEGACY_KERAS=1``), tries to import that, finds it missing and goes on.
    ``tf.keras`` is then unusable in the process, so only programs without Keras ask for
    it. Where ``tf_keras`` is installed the setting would load it instead, so it is left
    alone there.
    """
    if not keras and "tensorflow" not in sys.modules and not _tf_keras_installed():
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    if not quiet:
        import tensorflow as tf  # noqa: PLC0415

        share_jit_cache(tf)
        tf.config.list_physical_devices()
        return tf
    with capture_fds((2,)) as captured:
        import tensorflow as tf  # noqa: PLC0415

        share_jit_cache(tf)
        tf.config.list_physical_devices()
    if captured.stderr:
        _startup_log.append(captured.stderr)
    tf.get_logger().setLevel("ERROR")
    return tf


def _tf_keras_installed() -> bool:
    return importlib.util.find_spec("tf_keras") is not None


def startup_log() -> str:
    """What TensorFlow wrote to stderr while the quiet import ran (empty if nothing)."""
    return "".join(_startup_log)
