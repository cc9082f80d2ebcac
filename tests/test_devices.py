"""Device choice with a CPU fallback, for both frameworks, and bad input rejected."""

import pytest

from helpers import import_mxnet
from helpers.devices.inventory import (
    cpu_cores,
    nvidia_smi,
    physical_gpu_count,
    try_all_gpus,
    try_gpu,
)
from helpers.devices.names import mxnet_context


def test_try_gpu_falls_back_to_the_cpu_beyond_the_last_gpu():
    gpus = physical_gpu_count()
    assert try_gpu(gpus) == "/CPU:0"
    assert try_gpu(0) == ("/GPU:0" if gpus else "/CPU:0")


def test_try_all_gpus_is_never_empty():
    devices = try_all_gpus()
    assert devices and (devices == ["/CPU:0"]) == (physical_gpu_count() == 0)


def test_mxnet_fallbacks_return_contexts():
    mx = import_mxnet()
    beyond = mx.context.num_gpus()
    assert try_gpu(beyond, "mxnet") == mx.cpu()
    assert try_all_gpus("mxnet")[0].device_type in ("cpu", "gpu")


def test_mxnet_context_from_device_strings():
    mx = import_mxnet()
    assert mxnet_context("/cpu:0") == mx.cpu(0)
    assert mxnet_context("/job:localhost/replica:0/task:0/device:CPU:1") == mx.cpu(1)


def test_mxnet_context_rejects_gpus_that_do_not_exist_and_tpus():
    mx = import_mxnet()
    with pytest.raises(ValueError, match="MXNet sees"):
        mxnet_context(f"/gpu:{mx.context.num_gpus()}")
    with pytest.raises(ValueError, match="no TPU context"):
        mxnet_context("/tpu:0")


@pytest.mark.parametrize("index", [-1, 1.0, "0", None])
def test_bad_gpu_indices(index):
    with pytest.raises(ValueError, match="GPU index"):
        try_gpu(index)


def test_unknown_framework():
    with pytest.raises(ValueError, match="framework must be one of"):
        try_gpu(0, "torch")
    with pytest.raises(ValueError, match="framework must be one of"):
        try_all_gpus("jax")


def test_cores_and_nvidia_smi_describe_this_machine():
    assert cpu_cores() >= 1
    summary = nvidia_smi()
    assert summary is None or len(summary) >= 1
