"""This machine's cores and GPUs (try_gpu is written in notebook 01)."""

from helpers.devices import nvidia_smi
from helpers.machine import cpu_cores


def test_cores_and_nvidia_smi_describe_this_machine():
    assert cpu_cores() >= 1
    summary = nvidia_smi()
    assert summary is None or len(summary) >= 1
