import math

import numpy as np
import pytest

from helpers.costs import (
    AlphaBeta,
    fit_alpha_beta,
    parameter_server_seconds,
    ring_allreduce_seconds,
)

LINK = AlphaBeta(1e-4, 1e-9, "test")


def test_alpha_beta_time_bandwidth_and_half_size():
    assert LINK.time(0) == 1e-4
    assert LINK.time(1e6) == pytest.approx(1e-4 + 1e-3)
    assert LINK.bandwidth == pytest.approx(1e9)
    assert LINK.half_size == pytest.approx(1e5)
    assert AlphaBeta(1.0, 0.0).bandwidth == math.inf


def test_network_from_datasheet_numbers():
    link = AlphaBeta.network("10 GbE", 50e-6, 10)
    assert link.alpha == 50e-6
    assert link.bandwidth == pytest.approx(1.25e9)  # bytes per second


def test_fit_recovers_a_noiseless_line_and_divides_by_transfers():
    sizes = [1e3, 1e4, 1e5, 1e6, 1e7]
    times = [2 * (3e-4 + 2e-9 * s) for s in sizes]  # push + pull = 2 transfers
    fit = fit_alpha_beta(sizes, times, transfers=2)
    assert fit.alpha == pytest.approx(3e-4, rel=1e-6)
    assert fit.beta == pytest.approx(2e-9, rel=1e-6)


def test_fit_weights_small_messages_by_relative_error():
    rng = np.random.default_rng(0)
    sizes = np.array([1e3, 1e4, 1e5, 1e6, 1e7])
    times = (5e-4 + 1e-9 * sizes) * (1 + 0.05 * rng.standard_normal(5))
    fit = fit_alpha_beta(sizes, times)
    assert fit.alpha == pytest.approx(5e-4, rel=0.2)
    assert fit.beta == pytest.approx(1e-9, rel=0.2)


def test_fit_keeps_alpha_and_beta_non_negative():
    flat = fit_alpha_beta([1, 10, 100], [3.0, 2.9, 2.8])
    assert flat.beta == 0 and flat.alpha > 0
    proportional = fit_alpha_beta([1, 10, 100], [0.5, 10.0, 100.0])
    assert proportional.alpha == 0 and proportional.beta > 0


def test_fit_through_the_origin_has_the_units_of_the_data():
    # Times that would need a negative fixed cost (noisy timings of a small fixed cost):
    # the fit falls back to a line through the origin, in seconds per unit of size.
    sizes = [256, 512, 1024]
    times = [0.54e-3, 1.18e-3, 2.46e-3]
    fit = fit_alpha_beta(sizes, times)
    assert fit.alpha == 0
    assert min(t / x for t, x in zip(times, sizes, strict=True)) < fit.beta < max(
        t / x for t, x in zip(times, sizes, strict=True))
    slower = fit_alpha_beta(sizes, [1e4 * t for t in times])  # 10,000 times slower
    assert slower.beta == pytest.approx(1e4 * fit.beta)


def test_fit_needs_two_sizes():
    with pytest.raises(ValueError, match="two or more different sizes"):
        fit_alpha_beta([5, 5, 5], [1.0, 1.1, 0.9])


def test_alpha_beta_rejects_negative_or_bad_values():
    with pytest.raises(ValueError, match="alpha"):
        AlphaBeta(-1.0, 0.0)
    with pytest.raises(ValueError, match="beta"):
        AlphaBeta(0.0, float("inf"))
    with pytest.raises(ValueError, match="speed"):
        AlphaBeta.network("dead", 1e-6, 0)


def test_ring_allreduce_bandwidth_term_is_bounded():
    m = 1e8
    assert ring_allreduce_seconds(1, m, LINK) == 0
    assert ring_allreduce_seconds(2, m, LINK) == pytest.approx(2 * 1e-4 + m * 1e-9)
    big = ring_allreduce_seconds(256, m, LINK)
    assert big < 2 * m * LINK.beta + 2 * 255 * LINK.alpha + 1e-12
    assert big > ring_allreduce_seconds(8, m, LINK)  # latency terms grow


def test_parameter_server_load_grows_with_workers_per_server():
    m = 1e6
    one = parameter_server_seconds(1, m, LINK)
    assert one == pytest.approx(2 * LINK.time(m))
    # one server handles 8 messages of m bytes in each direction
    assert parameter_server_seconds(8, m, LINK) == pytest.approx(2 * 8 * LINK.time(m))
    # 8 servers: each handles 8 messages of m / 8, each worker sends 8 messages
    sharded = parameter_server_seconds(8, m, LINK, servers=8)
    assert sharded == pytest.approx(2 * (8 * 1e-4 + m * 1e-9))
    # more servers than workers: the workers' own links are the limit
    assert parameter_server_seconds(2, m, LINK, servers=4) == pytest.approx(
        2 * (4 * 1e-4 + m * 1e-9))
    # A single server falls behind a ring for large gradients and many workers.
    assert parameter_server_seconds(64, 1e8, LINK) > 10 * ring_allreduce_seconds(64, 1e8, LINK)
