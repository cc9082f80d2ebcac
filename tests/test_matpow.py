"""The book's matrix power as notebook 04 writes it: the power it computes, its work count,
the overflow prediction and the cheap check of its result."""

import math

import numpy as np
import pytest
from lesson_cells import lesson

NB04 = lesson("04", "matpow", "true_power", "matpow_flops", "entry_log10", "overflows",
              "largest_safe_n", "relative_error", "check_matpow_sum", np=np)
matpow = NB04.matpow


def test_matpow_returns_the_power_n_plus_one_with_n_products():
    m = np.random.default_rng(0).random((5, 5))
    for n in range(5):
        assert np.allclose(matpow(m, n, np.matmul), np.linalg.matrix_power(m, n + 1))
    assert NB04.true_power(10) == 11
    calls = []

    def counting(a, b):
        calls.append(1)
        return a @ b

    matpow(np.eye(3), 7, counting)
    assert len(calls) == 7


@pytest.mark.parametrize("n", [-1, -5, 2.5])
def test_matpow_refuses_a_count_of_products_that_is_not_a_whole_number(n):
    with pytest.raises(ValueError, match="whole number >= 0"):
        matpow(np.eye(2), n, np.matmul)


def test_flops_count_products_and_the_sum():
    assert NB04.matpow_flops(10, 3) == 2 * 3 * 2 * 1000 + 100
    assert NB04.matpow_flops(10, 3, matrices=1) == 3 * 2 * 1000


def test_entry_estimate_matches_a_real_power():
    m = np.random.default_rng(1).random((200, 200))
    measured = math.log10(np.linalg.matrix_power(m, 6).mean())
    assert abs(NB04.entry_log10(200, 6) - measured) < 0.1


def test_the_books_configuration_is_just_below_float32_overflow():
    assert not NB04.overflows(10_000, 10)
    assert NB04.overflows(10_000, 11)
    assert NB04.largest_safe_n(10_000) == 10
    assert NB04.largest_safe_n(10_000, limit=float(np.finfo(np.float16).max)) == 1


def test_largest_safe_n_marks_the_real_boundary():
    m = np.random.default_rng(2).random((64, 64), dtype=np.float32)
    k = NB04.largest_safe_n(64, matrices=1)
    with np.errstate(over="ignore"):
        assert np.isfinite(matpow(m, k, np.matmul)).all()
        assert not np.isfinite(matpow(m, k + 1, np.matmul)).all()


def test_relative_error():
    ref = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert NB04.relative_error(ref, ref) == 0.0
    assert NB04.relative_error(ref + [[0, 0], [0, 0.4]], ref) == pytest.approx(0.1)
    assert NB04.relative_error(np.array([[np.inf, 0], [0, 0]]), ref) == math.inf


def test_check_matpow_sum_accepts_right_and_rejects_wrong_results():
    rng = np.random.default_rng(4)
    a, b = rng.random((50, 50), dtype=np.float32), rng.random((50, 50), dtype=np.float32)
    right = matpow(a, 5, np.matmul) + matpow(b, 5, np.matmul)
    assert NB04.check_matpow_sum(right, [a, b], 5) < 1e-5
    wrong = matpow(a, 4, np.matmul) + matpow(b, 4, np.matmul)  # off by one power
    assert NB04.check_matpow_sum(wrong, [a, b], 5) > 0.5
