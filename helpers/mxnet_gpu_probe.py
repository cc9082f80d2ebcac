"""The MXNet GPU probe, ``python -m helpers.mxnet_gpu_probe SIDE_DIR`` (:mod:`.mxnet_gpu`).

In a child process, so a crash or "no kernel image" costs that process, never the notebook's
kernel: the steps a notebook takes, each stage noted, the outcome one JSON line (exit 1 on
failure).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from helpers.frameworks import import_mxnet_from, import_tensorflow
from helpers.mxnet_gpu import _last_line, load_cuda_libraries


def probe(root: Path, report: dict[str, Any]) -> None:
    report.update(stage="tensorflow", cards=[])
    if importlib.util.find_spec("tensorflow") is not None:
        try:  # TensorFlow loads its CUDA 12 libraries first, as in the notebooks
            tf = import_tensorflow(keras=False)
            gpus = tf.config.list_physical_devices("GPU")
            for gpu in gpus:
                details = tf.config.experimental.get_device_details(gpu)
                report["cards"].append([details.get("device_name", "GPU"),
                                        details.get("compute_capability")])
            if gpus:
                with tf.device("/GPU:0"):
                    float(tf.reduce_sum(tf.ones((2, 2))))
        except Exception as exc:  # noqa: BLE001  (recorded; MXNet is what is probed)
            report["tensorflow_error"] = _last_line(str(exc))
    report["stage"] = "cuda-libraries"
    load_cuda_libraries(root)
    report["stage"] = "import"
    mx = import_mxnet_from(root)
    report["gpus"] = mx.context.num_gpus()
    if report["gpus"]:
        report["stage"] = "kernels"
        ctx = mx.gpu(0)
        x = mx.nd.ones((4, 4), ctx=ctx) * 2  # an elementwise kernel of MXNet's own
        product = mx.nd.dot(x, x)  # cuBLAS
        conv = mx.nd.Convolution(mx.nd.ones((1, 1, 4, 4), ctx=ctx), mx.nd.ones((1, 1, 3, 3),
                                 ctx=ctx), kernel=(3, 3), num_filter=1, no_bias=True)  # cuDNN
        if float(product.sum().asscalar()) != 256.0 or float(conv.sum().asscalar()) != 36.0:
            raise RuntimeError("MXNet's GPU results are wrong")
    report["stage"] = "ok"


if __name__ == "__main__":
    outcome: dict[str, Any] = {}
    try:
        probe(Path(sys.argv[1]), outcome)
    except BaseException as exc:  # noqa: BLE001  (report any failure as JSON, then exit 1)
        text = f"{type(exc).__name__}: {exc}"
        outcome.update(error=_last_line(text.splitlines()[0] if text else ""),
                       error_text=text[-4000:])
        print(json.dumps(outcome), flush=True)
        sys.exit(1)
    print(json.dumps(outcome), flush=True)
