"""Import MXNet and TensorFlow the way every notebook and worker process needs them.

MXNet 1.9.1 is the last MXNet release and it predates numpy 1.24, which removed the
``np.bool`` alias that MXNet still uses at import time. numpy 1.26.4 is the only numpy
that both MXNet 1.9.1 and TensorFlow 2.21 accept, so the alias is put back before MXNet
is imported. This must happen in *every* process (notebook kernels, cluster workers).

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

import importlib.util
import os
import sys
from types import ModuleType

import numpy

from helpers.capture import capture_fds

_startup_log: list[str] = []


def apply_numpy_fix() -> None:
    """Restore the ``numpy.bool`` alias that MXNet 1.9.1 uses (removed in numpy 1.24)."""
    vars(numpy).setdefault("bool", bool)


def import_mxnet() -> ModuleType:
    """Apply the numpy fix, import MXNet and return the module.

    Raises a RuntimeError that says what to install if the wrong MXNet is present.
    """
    apply_numpy_fix()
    import mxnet  # noqa: PLC0415  (the fix must run first)

    if not mxnet.__version__.startswith("1.9"):
        raise RuntimeError(
            f"mxnet {mxnet.__version__} is installed, the series needs 1.9.1: "
            "run `pip install mxnet==1.9.1 numpy==1.26.4` (or `make test`, which does it)"
        )
    return mxnet


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

        tf.config.list_physical_devices()
        return tf
    with capture_fds((2,)) as captured:
        import tensorflow as tf  # noqa: PLC0415

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
