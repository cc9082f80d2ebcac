"""Tests of the choice of two MXNet contexts on machines with 0, 1 and 2 GPUs."""

from types import SimpleNamespace

import numpy as np
import pytest

from helpers.blas import mxnet_omp_threads
from helpers.devices import ContextPair, context_pair
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


def test_mxnet_thread_count_follows_what_mxnet_reads(monkeypatch):
    assert mxnet_omp_threads({"OMP_NUM_THREADS": "4,2"}) == 4
    assert mxnet_omp_threads({"MXNET_OMP_MAX_THREADS": "3", "OMP_NUM_THREADS": "1"}) == 3
    monkeypatch.setattr("helpers.blas.cpu_cores", lambda: 8)
    assert mxnet_omp_threads({}) == 4  # MXNet's own rule on x86: half the processors
    with pytest.raises(ValueError, match="not a thread count"):
        mxnet_omp_threads({"OMP_NUM_THREADS": "many"})


@pytest.mark.parametrize("kinds, threads, risk", [
    (("cpu", "cpu"), 2, True),    # two engine threads, each with an OpenMP team: deadlock
    (("cpu", "cpu"), 1, False),   # one thread per operator: safe
    (("gpu", "gpu"), 8, False),   # cuBLAS on the GPUs
    (("cpu", "gpu"), 4, False),
])
def test_products_on_two_cpu_contexts_avoid_the_openblas_deadlock(kinds, threads, risk):
    first, second = (FakeContext(device_type=k, device_id=i) for i, k in enumerate(kinds))
    pair = ContextPair(first, second, "cpu-only", 0, threads)
    nd = import_mxnet().nd
    assert pair.blas_deadlock_risk is risk
    assert (pair.matmul is nd.dot) is not risk


def test_the_safe_product_is_the_same_product():
    mx = import_mxnet()
    pair = ContextPair(mx.cpu(0), mx.cpu(1), "cpu-only", 0, omp_threads=2)
    rng = np.random.default_rng(0)
    a, b = rng.random((5, 3), dtype=np.float32), rng.random((3, 4), dtype=np.float32)
    product = pair.matmul(mx.nd.array(a, ctx=mx.cpu(1)), mx.nd.array(b, ctx=mx.cpu(1)))
    assert product.context == mx.cpu(1)
    np.testing.assert_allclose(product.asnumpy(), a @ b, rtol=1e-5)
