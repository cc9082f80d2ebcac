"""The roofline model and the arithmetic of one data-parallel step."""

import math

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from helpers.cost.communication import AlphaBeta  # noqa: E402
from helpers.cost.data_parallel import (  # noqa: E402
    accumulation_seconds,
    critical_batch,
    critical_batch_from_rates,
    overlap_bounds,
)
from helpers.cost.roofline import OpPoint, Roofline, elementwise_cost, matmul_cost  # noqa: E402

ROOF = Roofline(peak=100e9, bandwidth=10e9, name="test")


def test_costs_count_flops_and_bytes():
    assert matmul_cost(2, 3, 4) == (48.0, 4.0 * (6 + 12 + 8))
    flops, nbytes = matmul_cost(1024, 1024, 1024)
    assert flops / nbytes == pytest.approx(1024 / 6)  # square float32 products: n / 6
    assert elementwise_cost(10, inputs=2, flops_per_element=1) == (10.0, 120.0)
    with pytest.raises(ValueError, match="m must be"):
        matmul_cost(0, 1, 1)
    with pytest.raises(ValueError, match="inputs"):
        elementwise_cost(10, inputs=0, flops_per_element=1)


def test_roofline_ceilings_and_ridge():
    assert ROOF.ridge == 10.0
    assert ROOF.attainable(1.0) == 10e9
    assert ROOF.attainable(1000.0) == 100e9
    assert ROOF.bound(9.9) == "memory" and ROOF.bound(10.0) == "compute"
    op = OpPoint("x", flops=1e9, nbytes=1e8, seconds=0.02)
    assert op.intensity == 10.0 and op.flops_per_second == 5e10 and op.bytes_per_second == 5e9
    assert ROOF.fraction(op) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="peak"):
        Roofline(peak=0, bandwidth=1)
    with pytest.raises(ValueError, match="seconds"):
        OpPoint("bad", 1.0, 1.0, 0.0)


def test_plot_skips_operations_without_arithmetic():
    ops = [OpPoint("copy", 0.0, 8e6, 1e-3), OpPoint("mm", *matmul_cost(64, 64, 64), 1e-4)]
    assert isinstance(ROOF.plot(ops), Figure)


def test_critical_batch_is_exchange_over_per_example_compute():
    assert critical_batch(1e-5, 2e-3) == pytest.approx(200)
    assert critical_batch(1e-5, 0.0) == 0.0
    # ResNet-50-like: 22.8 GFLOP per image at 100 TFLOP/s, 0.1 s exchange
    assert critical_batch_from_rates(22.8e9, 100e12, 0.1) == pytest.approx(0.1 / 22.8e-5)
    with pytest.raises(ValueError, match="per_example_seconds"):
        critical_batch(0.0, 1.0)


def test_overlap_saves_at_most_the_smaller_part():
    assert overlap_bounds(3.0, 1.0) == (3.0, 4.0)
    best, worst = overlap_bounds(2.0, 2.0)
    assert worst - best == 2.0 and best / worst == 0.5  # equal parts: half the step at best


def test_accumulation_pays_one_exchange():
    compute = AlphaBeta(1e-3, 1e-5)
    together = accumulation_seconds(4, 8, compute, 5e-3, accumulate=True)
    apart = accumulation_seconds(4, 8, compute, 5e-3, accumulate=False)
    assert apart - together == pytest.approx(3 * 5e-3)
    assert together == pytest.approx(4 * (1e-3 + 8e-5) + 5e-3)
    with pytest.raises(ValueError, match="micro_batches"):
        accumulation_seconds(0, 8, compute, 1e-3)
    assert math.isfinite(together)
