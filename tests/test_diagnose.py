"""The troubleshooting check finds each known failure and names its fix."""

import pytest

from helpers import environment


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr("helpers.devices.inventory.nvidia_smi", lambda: None)


def rows(table):
    return {check: (status, fix) for check, status, fix in table.rows}


def test_this_machine_passes_the_version_checks(no_gpu):
    found = rows(environment.diagnose())
    assert found["MXNet version"][0] == "ok"
    assert found["numpy version"][0] == "ok"
    assert found["NVIDIA driver"][0].startswith("none found")


def test_the_silent_mxnet_fallback_is_caught(monkeypatch, no_gpu):
    versions = {"mxnet": "1.0.0.post1", "numpy": "2.1.0"}
    monkeypatch.setattr(environment, "installed_version", lambda p: versions.get(p, "0"))
    found = rows(environment.diagnose())
    assert found["MXNet version"] == (
        "problem: 1.0.0.post1", "pip install mxnet==1.9.1 numpy==1.26.4 (or re-run `make test`)")
    assert "numpy==1.26.4" in found["numpy version"][1]
    assert found["all pins of requirements.txt"][0].startswith("problem")


def test_gpu_machine_with_cpu_builds_is_diagnosed(monkeypatch):
    from helpers.table import Table

    monkeypatch.setattr("helpers.devices.inventory.nvidia_smi",
                        lambda: Table(["index"], [["0"], ["1"]]))
    monkeypatch.setattr("helpers.devices.inventory.physical_gpu_count", lambda: 0)
    found = rows(environment.diagnose())
    assert found["NVIDIA driver"][0] == "ok: 2 GPU(s)"
    assert "requirements-gpu.txt" in found["TensorFlow sees the GPUs"][1]
    assert "mxnet-cu117" in found["MXNet sees the GPUs"][1]
