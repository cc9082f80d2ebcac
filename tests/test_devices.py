"""Device listings, and MXNet contexts from device strings (try_gpu is written in notebook 01)."""


from helpers.devices.inventory import (
    cpu_cores,
    nvidia_smi,
)


def test_cores_and_nvidia_smi_describe_this_machine():
    assert cpu_cores() >= 1
    summary = nvidia_smi()
    assert summary is None or len(summary) >= 1
