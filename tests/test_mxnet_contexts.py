"""Tests of the choice of two MXNet contexts on machines with 0, 1 and 2 GPUs."""

from types import SimpleNamespace

import pytest

from helpers.devices.mxnet_contexts import context_pair, omp_threads_requested
from helpers.frameworks import import_mxnet


class FakeContext(SimpleNamespace):
    def __str__(self):
        return f"{self.device_type}({self.device_id})"


def fake_mx(gpus):
    return SimpleNamespace(
        context=SimpleNamespace(num_gpus=lambda: gpus),
        cpu=lambda i=0: FakeContext(device_type="cpu", device_id=i),
        gpu=lambda i=0: FakeContext(device_type="gpu", device_id=i),
    )


@pytest.fixture(autouse=True)
def no_omp_settings(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MXNET_OMP_MAX_THREADS", raising=False)


@pytest.mark.parametrize("gpus, purpose, names, kind, same_memory, simulated", [
    (0, "compute", ("cpu(0)", "cpu(1)"), "cpu-only", True, True),
    (0, "transfer", ("cpu(0)", "cpu(1)"), "cpu-only", True, True),
    (1, "compute", ("gpu(0)", "gpu(0)"), "one-gpu", True, True),
    (1, "transfer", ("cpu(0)", "gpu(0)"), "host-and-gpu", False, False),
    (2, "compute", ("gpu(0)", "gpu(1)"), "two-gpus", False, False),
    (4, "transfer", ("gpu(0)", "gpu(1)"), "two-gpus", False, False),
])
def test_pairs_follow_what_mxnet_sees(gpus, purpose, names, kind, same_memory, simulated):
    pair = context_pair(fake_mx(gpus), purpose)
    assert (str(pair.first), str(pair.second)) == names
    assert pair.kind == kind and pair.gpus == gpus
    assert pair.same_memory is same_memory and pair.simulated is simulated
    assert ("SIMULATED" in pair.describe()) is simulated
    assert pair.contexts == [pair.first, pair.second]


def test_real_mxnet_without_gpu_gives_two_cpu_contexts():
    mx = import_mxnet()
    pair = context_pair(mx, "compute")
    if mx.context.num_gpus() == 0:
        assert pair.contexts == [mx.cpu(0), mx.cpu(1)] and pair.same_memory


def test_bad_purpose_is_rejected():
    with pytest.raises(ValueError, match="purpose must be one of"):
        context_pair(fake_mx(0), "training")


def test_several_omp_threads_with_two_cpu_contexts_are_refused(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    with pytest.raises(RuntimeError, match="hang"):
        context_pair(fake_mx(0), "compute")
    assert context_pair(fake_mx(0), "transfer").kind == "cpu-only"  # copies are safe
    assert context_pair(fake_mx(2), "compute").kind == "two-gpus"   # GPUs are unaffected
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert context_pair(fake_mx(0), "compute").kind == "cpu-only"


def test_omp_threads_requested_reads_both_settings():
    assert omp_threads_requested({}) is None
    assert omp_threads_requested({"OMP_NUM_THREADS": "4,2"}) == 4
    assert omp_threads_requested({"MXNET_OMP_MAX_THREADS": "3"}) == 3
    with pytest.raises(ValueError, match="not a thread count"):
        omp_threads_requested({"OMP_NUM_THREADS": "many"})
