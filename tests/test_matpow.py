"""Tests of the seed's matrix power, its work count, overflow prediction and checks."""

import math

import numpy as np
import pytest

from helpers.matpow import (
    FLOAT32_MAX,
    check_matpow_sum,
    device_memory_mb,
    entry_log10,
    largest_safe_n,
    matpow,
    matpow_flops,
    matvec_power,
    overflows,
    relative_error,
    true_power,
)


def test_matpow_returns_the_power_n_plus_one():
    m = np.random.default_rng(0).random((5, 5))
    for n in range(5):
        assert np.allclose(matpow(m, n, np.matmul), np.linalg.matrix_power(m, n + 1))
    assert true_power(10) == 11


def test_matpow_uses_the_given_product_n_times():
    calls = []

    def counting(a, b):
        calls.append(1)
        return a @ b

    matpow(np.eye(3), 7, counting)
    assert len(calls) == 7


def test_matpow_rejects_bad_input():
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        matpow(np.eye(2), -1, np.matmul)
    with pytest.raises(ValueError, match="n must be an int"):
        matpow(np.eye(2), 2.0, np.matmul)
    with pytest.raises(ValueError, match="matmul must be a function"):
        matpow(np.eye(2), 2, "matmul")


def test_flops_count_products_and_the_sum():
    assert matpow_flops(10, 3) == 2 * 3 * 2 * 1000 + 100
    assert matpow_flops(10, 3, matrices=1) == 3 * 2 * 1000
    with pytest.raises(ValueError, match="size"):
        matpow_flops(0, 3)
    with pytest.raises(ValueError, match="matrices"):
        matpow_flops(10, 3, matrices=0)


def test_entry_estimate_matches_a_real_power():
    m = np.random.default_rng(1).random((200, 200))
    measured = math.log10(np.linalg.matrix_power(m, 6).mean())
    assert abs(entry_log10(200, 6) - measured) < 0.1


def test_seed_configuration_is_just_below_float32_overflow():
    assert not overflows(10_000, 10)
    assert overflows(10_000, 11)
    assert largest_safe_n(10_000) == 10
    assert largest_safe_n(10_000, limit=float(np.finfo(np.float16).max)) == 1


def test_largest_safe_n_marks_the_real_boundary():
    m = np.random.default_rng(2).random((64, 64), dtype=np.float32)
    k = largest_safe_n(64, matrices=1)
    with np.errstate(over="ignore"):
        assert np.isfinite(matpow(m, k, np.matmul)).all()
        assert not np.isfinite(matpow(m, k + 1, np.matmul)).all()


def test_overflow_helpers_reject_impossible_input():
    with pytest.raises(ValueError, match="mean must be > 0"):
        entry_log10(10, 2, mean=0.0)
    with pytest.raises(ValueError, match="power must be an int >= 1"):
        entry_log10(10, 0)
    with pytest.raises(ValueError, match="never overflow"):
        largest_safe_n(1)
    with pytest.raises(ValueError, match="already exceed"):
        largest_safe_n(10, mean=1e39, limit=FLOAT32_MAX)


def test_matvec_power_and_its_input_checks():
    m = np.random.default_rng(3).random((6, 6))
    v = np.arange(6.0)
    assert np.allclose(matvec_power(m, 4, v), np.linalg.matrix_power(m, 4) @ v)
    with pytest.raises(ValueError, match="square"):
        matvec_power(np.ones((2, 3)), 2, np.ones(3))
    with pytest.raises(ValueError, match="shape"):
        matvec_power(np.ones((3, 3)), 2, np.ones(4))


def test_relative_error():
    ref = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert relative_error(ref, ref) == 0.0
    assert relative_error(ref + [[0, 0], [0, 0.4]], ref) == pytest.approx(0.1)
    assert relative_error(np.array([[np.inf, 0], [0, 0]]), ref) == math.inf
    with pytest.raises(ValueError, match="shape"):
        relative_error(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="empty"):
        relative_error(np.ones(0), np.ones(0))


def test_check_matpow_sum_accepts_right_and_rejects_wrong_results():
    rng = np.random.default_rng(4)
    a, b = rng.random((50, 50), dtype=np.float32), rng.random((50, 50), dtype=np.float32)
    right = matpow(a, 5, np.matmul) + matpow(b, 5, np.matmul)
    assert check_matpow_sum(right, [a, b], 5) < 1e-5
    wrong = matpow(a, 4, np.matmul) + matpow(b, 4, np.matmul)  # off by one power
    assert check_matpow_sum(wrong, [a, b], 5) > 0.5
    with pytest.raises(ValueError, match="input matrices"):
        check_matpow_sum(right, [], 5)
    with pytest.raises(ValueError, match="square"):
        check_matpow_sum(np.ones(3), [a], 5)


def test_device_memory_grows_with_size_and_chains():
    assert device_memory_mb(10_000) > 1024  # more than a default 1 GiB virtual GPU
    assert device_memory_mb(1024, chains=2) == 2 * device_memory_mb(1024, chains=1) == 40
    with pytest.raises(ValueError, match="chains"):
        device_memory_mb(100, chains=0)
