"""The troubleshooting check finds each known failure and names its fix."""

import shutil
import subprocess

import pytest

from helpers import environment


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr("helpers.environment.nvidia_smi", lambda: None)


def rows(table):
    return {check: (status, fix) for check, status, fix in table.rows}


def test_this_machine_passes_the_version_checks(no_gpu):
    found = rows(environment.diagnose())
    assert found["MXNet version"][0] == "ok"
    assert found["numpy version"][0] == "ok"
    assert found["NVIDIA driver"][0].startswith("none found")


def test_the_silent_mxnet_fallback_is_caught(monkeypatch, no_gpu):
    versions = {"mxnet": "1.0.0.post1", "numpy": "2.1.0"}
    monkeypatch.setattr(environment, "package_version", lambda p: versions.get(p, "0"))
    found = rows(environment.diagnose())
    assert found["MXNet version"] == (
        "problem: 1.0.0.post1",
        "pip install --no-deps -r requirements-mxnet.txt (or re-run `make test`)")
    assert found["numpy version"][0] == "ok"  # 2.1 is what TensorFlow 2.21 needs at least
    assert found["all pins of requirements*.txt"][0].startswith("problem")


def test_a_numpy_1_is_caught(monkeypatch, no_gpu):
    versions = {"mxnet": "1.9.1", "numpy": "1.26.4"}
    monkeypatch.setattr(environment, "package_version", lambda p: versions.get(p, "0"))
    status, fix = rows(environment.diagnose())["numpy version"]
    assert status == "problem: 1.26.4"
    assert "numpy 2" in fix and "constraints/py3.X.txt" in fix


def _gpu_machine(monkeypatch, card, gpus, route, mxnet_gpus=0):
    """nvidia-smi and TensorFlow report ``gpus`` cards; MXNet took ``route``."""
    from gpu_fakes import FakeMX, FakeTF, fake_nvidia_smi

    from helpers import devices

    tf = FakeTF(gpus, card)
    monkeypatch.setattr(devices, "import_tensorflow", lambda **_kw: tf)
    monkeypatch.setattr(shutil, "which", lambda exe: f"/usr/bin/{exe}")
    monkeypatch.setattr(subprocess, "run", fake_nvidia_smi(card, max(gpus, 2)))
    monkeypatch.setattr(environment, "mxnet_route", lambda: route)
    monkeypatch.setattr(environment, "import_mxnet", lambda: FakeMX(mxnet_gpus))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_gpu_machine_with_cpu_builds_is_diagnosed(monkeypatch):
    from helpers.mxnet_gpu import INSTALL_COMMAND, MXNetRoute

    _gpu_machine(monkeypatch, "T4", 0, MXNetRoute("cpu", "not-installed"))
    found = rows(environment.diagnose())
    assert found["NVIDIA driver"][0] == "ok: 2 GPU(s)"
    assert "requirements-gpu.txt" in found["TensorFlow sees the GPUs"][1]
    assert found["MXNet build"] == ("CPU wheel: MXNet computes on the CPU",
                                    f"optional, for MXNet on GPU: {INSTALL_COMMAND} (README, "
                                    "GPU instances)")


def test_gpu_h100_is_diagnosed_as_beyond_mxnets_kernels(monkeypatch):
    from helpers.mxnet_gpu import MXNetRoute

    route = MXNetRoute("cpu", "no-kernel-image", side_dir=".mxnet-gpu",
                       cards=(("NVIDIA H100 80GB HBM3", (9, 0)),))
    _gpu_machine(monkeypatch, "H100", 8, route)
    found = rows(environment.diagnose())
    assert found["TensorFlow sees the GPUs"][0] == "ok: 8"
    assert found["MXNet's CUDA build on NVIDIA H100 80GB HBM3"][0] == "has NO kernels for it"
    status, fix = found["MXNet build"]
    assert status == "problem: CPU wheel, the GPU route failed (no-kernel-image)"
    assert "no kernel image is available" in fix and "T4 (7.5)" in fix


def test_gpu_t4_with_the_mxnet_gpu_route_is_ok(monkeypatch):
    from helpers.mxnet_gpu import MXNetRoute

    _gpu_machine(monkeypatch, "T4", 2, MXNetRoute("gpu", "ok", side_dir=".mxnet-gpu", gpus=2),
                 mxnet_gpus=2)
    found = rows(environment.diagnose())
    assert found["MXNet's CUDA build on Tesla T4"] == ("has kernels for it", "-")
    assert found["MXNet build"] == ("ok: CUDA build, probe passed, 2 GPU(s)", "-")


def test_gpu_h200_without_tensorflow_gets_a_row_not_a_traceback(monkeypatch):
    """A fresh cloud GPU instance: the driver answers (the recorded H200's nvidia-smi) and
    TensorFlow is not installed, in a fresh interpreter where ``import tensorflow`` fails."""
    import json
    from pathlib import Path

    from fresh_python import run_python

    monkeypatch.setenv("SERIES_MXNET_GPU_DIR", "/nonexistent/.mxnet-gpu")  # MXNet's CPU wheel
    done = run_python(f"""
        import json, shutil, subprocess, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        sys.modules["tensorflow"] = None  # import tensorflow: ModuleNotFoundError
        from gpu_fakes import recorded_nvidia_smi
        shutil.which = lambda exe: "/usr/bin/" + exe
        subprocess.run = recorded_nvidia_smi("H200")
        from helpers.environment import diagnose
        print(json.dumps(diagnose().rows))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    found = rows(type("T", (), {"rows": json.loads(done.stdout.splitlines()[-1])}))
    assert found["TensorFlow"] == (
        "problem: TensorFlow not installed",
        "make lab REQUIREMENTS=requirements-gpu.txt (TensorFlow's CUDA build, in an "
        "environment of its own)")
    assert found["NVIDIA driver"] == ("ok: 1 GPU(s)", "-")
    assert found["MXNet's CUDA build on NVIDIA H200"][0] == "has NO kernels for it"  # 9.0
    assert "TensorFlow sees the GPUs" not in found  # it cannot look


def test_gpu_tensorflow_that_fails_as_it_loads_gets_a_row(monkeypatch):
    """Kaggle's protobuf, older than TensorFlow 2.21 wants: installed, but no import."""
    from helpers import devices
    from helpers.mxnet_gpu import MXNetRoute

    _gpu_machine(monkeypatch, "T4", 2, MXNetRoute("cpu", "not-installed"))

    def broken(**_kw):
        raise ImportError("cannot import name 'runtime_version' from 'google.protobuf'")

    monkeypatch.setattr(devices, "import_tensorflow", broken)
    status, fix = rows(environment.diagnose())["TensorFlow sees the GPUs"]
    assert status == ("problem: TensorFlow does not import: cannot import name "
                      "'runtime_version' from 'google.protobuf'")
    assert "requirements-gpu.txt" in fix
