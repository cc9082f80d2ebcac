"""The MXNet GPU route: which build a process imports, decided once, never fatal.

Probe verdicts are faked from what the probe process prints on each kind of machine
(a GPU MXNet runs on, an H100 without kernels, CUDA libraries missing, no driver, a crash,
a hang); the two cases in fresh processes run the real probe and the real fallback of
``import_mxnet`` on a side directory that cannot work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from gpu_fakes import CARDS

from helpers import mxnet_gpu
from helpers.mxnet_gpu import (
    CUDA_LIBRARIES,
    INSTALL_COMMAND,
    MXNetRoute,
    classify,
    library_plan,
    runs_mxnet_kernels,
)


def probe_output(card: str, gpus: int) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the probe on ``gpus`` cards of this kind."""
    name, _memory, capability = CARDS[card]
    cards = [[name, list(capability)]] * gpus
    if runs_mxnet_kernels(capability):
        return 0, json.dumps({"stage": "ok", "cards": cards, "gpus": gpus}), ""
    error = ("MXNetError: Traceback (most recent call last):\n  File \"../src/operator/"
             "tensor/./elemwise_binary_scalar_op.h\", line 264\nCheck failed: err == "
             "cudaSuccess (209 vs. 0) : Name: mxnet_generic_kernel ErrStr:no kernel image is "
             "available for execution on the device")
    report = {"stage": "kernels", "cards": cards, "gpus": gpus,
              "error": error.splitlines()[0], "error_text": error}
    return 1, json.dumps(report), ""


@pytest.mark.parametrize("gpus", [1, 2, 4, 8])
@pytest.mark.parametrize("card", list(CARDS))
def test_gpu_probe_verdict_per_card(tmp_path, card, gpus):
    route = classify(*probe_output(card, gpus), tmp_path)
    if card == "H100":  # sm_90: the import works, the first kernel does not
        assert not route.on_gpu and route.verdict == "no-kernel-image"
        text = route.message()
        assert "NVIDIA H100 80GB HBM3 (9.0)" in text and "no kernel image is available" in text
        assert "T4 (7.5)" in text and "A100 (8.0)" in text and "L4 (8.9)" in text
        assert "TensorFlow keeps the GPUs" in text
        assert "no kernels for this GPU" in route.summary()
    else:
        assert route.on_gpu and route.verdict == "ok" and route.gpus == gpus
        assert route.message() == "" and f"{gpus} GPU(s)" in route.summary()


@pytest.mark.parametrize(("capability", "runs"), [
    ((7, 5), True), ((8, 6), True), ((8, 9), True), ((8, 0), True), ((7, 0), True),
    ((5, 2), True), ((3, 7), False), ((9, 0), False), ((10, 0), False), ((12, 0), False),
    (None, None)], ids=lambda v: f"gpu-{v}")
def test_gpu_mxnet_kernels_by_compute_capability(capability, runs):
    assert runs_mxnet_kernels(capability) is runs


@pytest.mark.parametrize(("stage", "error", "verdict", "names"), [
    ("import", "OSError: libnvrtc.so.11.2: cannot open shared object file: No such file or "
     "directory", "missing-libraries", ["libnvrtc.so.11.2 (nvidia-cuda-nvrtc-cu11)"]),
    ("cuda-libraries", "OSError: libcudnn.so.8: cannot open shared object file: No such file "
     "or directory", "missing-libraries", ["libcudnn.so.8 (nvidia-cudnn-cu11)"]),
    ("import", "OSError: libquadmath.so.0: cannot open shared object file: No such file or "
     "directory", "missing-libraries", ["libquadmath.so.0 (a system package)"]),
    ("import", "OSError: libcuda.so.1: cannot open shared object file: No such file or "
     "directory", "no-driver", ["libcuda.so.1"]),
    ("kernels", "MXNetError: CUDA: CUDA driver version is insufficient for CUDA runtime "
     "version", "driver-too-old", ["newer NVIDIA driver"]),
], ids=["gpu-import-fails-nvrtc", "gpu-import-fails-cudnn", "gpu-import-fails-quadmath",
        "gpu-no-driver", "gpu-old-driver"])
def test_gpu_mxnet_import_failures_fall_back_with_the_fix(tmp_path, stage, error, verdict, names):
    out = json.dumps({"stage": stage, "cards": [["Tesla T4", [7, 5]]], "error": error})
    route = classify(1, out, "", tmp_path)
    assert not route.on_gpu and route.verdict == verdict
    text = route.message()
    assert text.startswith("MXNet runs on the CPU wheel here")
    assert all(name in text for name in names)
    if verdict == "missing-libraries":
        assert INSTALL_COMMAND in text
    assert "/" not in text.split(INSTALL_COMMAND)[0].replace("MiB", "")  # no absolute paths


def test_gpu_probe_crash_and_hang_fall_back(tmp_path):
    crashed = classify(-11, "", "Segmentation fault (core dumped)\n", tmp_path)
    assert crashed.verdict == "failed" and "Segmentation fault" in crashed.message()
    hung = classify(None, "", "", tmp_path)
    assert hung.verdict == "timeout" and "probe" in hung.message()


def make_side_dir(root, missing=()):
    """A side directory laid out as pip --target lays it out, with empty stand-in files."""
    (root / "mxnet").mkdir(parents=True)
    (root / "mxnet" / "libmxnet.so").write_bytes(b"")
    for pattern, package in CUDA_LIBRARIES:
        name = pattern.replace("*", "7")
        if name in missing:
            continue
        folder = root / "nvidia" / package.removeprefix("nvidia-").removesuffix("-cu11") / "lib"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"")
    return root


@pytest.fixture
def side(tmp_path, monkeypatch):
    monkeypatch.setattr(mxnet_gpu.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    root = make_side_dir(tmp_path / "side")
    monkeypatch.setenv(mxnet_gpu.SIDE_DIR_ENV, str(root))
    monkeypatch.delenv(mxnet_gpu.SWITCH_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    mxnet_gpu.forget()
    yield root
    mxnet_gpu.forget()


def test_gpu_probe_runs_once_per_session_and_again_after_a_change(side, monkeypatch):
    calls = []

    def probe(root):
        calls.append(root)
        return classify(*probe_output("T4", 1), root)

    assert mxnet_gpu.route(probe).on_gpu and len(calls) == 1
    assert mxnet_gpu.route(probe).on_gpu and len(calls) == 1  # this process remembers
    mxnet_gpu.forget()  # another kernel of the same session reads the cached verdict
    assert mxnet_gpu.route(probe) == mxnet_gpu.route(probe) and len(calls) == 1
    mxnet_gpu.forget()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # other GPUs: ask again
    mxnet_gpu.route(probe)
    assert len(calls) == 2
    mxnet_gpu.forget()
    os.utime(side, ns=(1, 1))  # the side directory was installed again
    mxnet_gpu.route(probe)
    assert len(calls) == 3


def test_gpu_no_side_dir_or_switched_off_never_probes(side, monkeypatch, tmp_path):
    def probe(root):
        raise AssertionError("no probe expected")

    monkeypatch.setenv(mxnet_gpu.SWITCH_ENV, "0")
    assert mxnet_gpu.route(probe).verdict == "disabled"
    mxnet_gpu.forget()
    monkeypatch.delenv(mxnet_gpu.SWITCH_ENV)
    monkeypatch.setenv(mxnet_gpu.SIDE_DIR_ENV, str(tmp_path / "nowhere"))
    route = mxnet_gpu.route(probe)
    assert route.verdict == "not-installed" and route.message() == ""
    assert "CPU wheel" in route.summary() and "opt-in" in route.summary()


def test_gpu_incomplete_side_dir_names_what_is_missing(tmp_path, monkeypatch):
    root = make_side_dir(tmp_path / "side", missing=("libcudnn.so.8", "libnccl.so.2"))
    monkeypatch.setenv(mxnet_gpu.SIDE_DIR_ENV, str(root))
    mxnet_gpu.forget()
    route = mxnet_gpu.route(lambda r: pytest.fail("no probe for an incomplete install"))
    mxnet_gpu.forget()
    assert route.verdict == "incomplete" and route.missing == ("libcudnn.so.8", "libnccl.so.2")
    assert "libcudnn.so.8 (nvidia-cudnn-cu11), libnccl.so.2 (nvidia-nccl-cu11)" in route.message()


def test_gpu_library_plan_shares_tensorflows_newer_copies(tmp_path):
    root = make_side_dir(tmp_path / "side")
    shared = tmp_path / "site" / "nvidia" / "cusolver" / "lib"
    shared.mkdir(parents=True)
    (shared / "libcusolver.so.11").write_bytes(b"")  # CUDA 12's cusolver keeps the name
    (shared / "libcublas.so.12").write_bytes(b"")
    plan = library_plan(root, shared=[shared], loaded=lambda name: name == "libcudart.so.11.0")
    names = [p.name for p in plan]
    assert "libcudart.so.11.0" not in names  # already in the process: left alone
    first = names.index("libcusolver.so.11")
    assert plan[first].parent == shared and plan[first + 1].parent != shared  # theirs, then ours
    assert names.index("libcublasLt.so.11") < names.index("libcublas.so.11") < names.index(
        "libcudnn.so.8") and names[-1] == "libnvToolsExt.so.1"


def _fresh(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=180, env={**os.environ, **env})


def test_gpu_import_mxnet_falls_back_instead_of_dying(side, tmp_path):
    # the session's verdict says "ok", but this side directory's libraries cannot load
    cached = mxnet_gpu.cache_file(side)
    cached.write_text(json.dumps({"build": "gpu", "verdict": "ok", "side_dir": str(side),
                                  "gpus": 1}))
    out = _fresh(f"""
        import tempfile
        tempfile.tempdir = {str(cached.parent)!r}
        from helpers import import_mxnet
        from helpers.frameworks import mxnet_route
        mx = import_mxnet()
        print("SUM", (mx.nd.ones((2, 2)) * 2).sum().asscalar(), mxnet_route().verdict)
    """, {mxnet_gpu.SIDE_DIR_ENV: str(side)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "SUM 8.0 failed" in out.stdout
    assert "MXNet runs on the CPU wheel here" in out.stderr


def test_gpu_probe_process_reports_and_is_bounded(side):
    route = mxnet_gpu.run_probe(side)  # a real probe process: these libraries are empty files
    assert not route.on_gpu and route.verdict == "failed"
    assert "at cuda-libraries" in route.detail and "libcudart.so.11.0" in route.detail
    assert str(side) not in route.message()  # the side directory by its name only
    assert mxnet_gpu.run_probe(side, timeout=0.05).verdict == "timeout"


def test_gpu_route_round_trips_through_the_cache(side):
    route = MXNetRoute("cpu", "no-kernel-image", side_dir=str(side),
                       cards=(("NVIDIA H100 80GB HBM3", (9, 0)),), detail="x")
    mxnet_gpu._write(mxnet_gpu.cache_file(side), route)
    assert mxnet_gpu._read(mxnet_gpu.cache_file(side)) == route
