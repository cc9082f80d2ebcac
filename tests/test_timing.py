"""Timing: warm-up excluded, sync applied after every timed call, rates computed right."""

import time

import pytest

from helpers.measure import TimingResult, benchmark, benchmark_in_turns, resolve_sync


def test_warmup_runs_are_not_timed_and_sync_follows_every_call():
    calls, synced = [], []

    def work():
        calls.append(1)
        return len(calls)

    result = benchmark(work, sync=synced.append, warmup=2, repeat=3)
    assert len(calls) == 5 and synced == [1, 2, 3, 4, 5]
    assert len(result.samples) == 3


def test_sync_time_is_inside_the_measurement():
    result = benchmark(lambda: None, sync=lambda _: time.sleep(0.02), warmup=0, repeat=3)
    assert result.best >= 0.019


def test_median_spread_and_rates():
    result = TimingResult("x", [0.1, 0.3, 0.2], flops=2e9, nbytes=4e8)
    assert result.median == pytest.approx(0.2)
    assert result.spread == pytest.approx(0.2)
    assert result.gflops == pytest.approx(10.0)
    assert result.gbps == pytest.approx(2.0)
    assert "GFLOP/s" in str(result) and "GB/s" in str(result)


def test_to_dict_keeps_samples_and_rates():
    data = TimingResult("x", [0.5, 0.25], flops=1e9).to_dict()
    assert data["samples"] == [0.5, 0.25] and data["median"] == pytest.approx(0.375)
    assert data["gflops"] == pytest.approx(1e9 / 0.375 / 1e9)


def test_named_syncs_resolve():
    assert callable(resolve_sync("mxnet")) and callable(resolve_sync("tensorflow"))
    assert resolve_sync("none")(123) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"repeat": 0}, "repeat"), ({"repeat": 1.5}, "repeat"), ({"warmup": -1}, "warmup"),
     ({"flops": -5}, "flops"), ({"nbytes": 0}, "nbytes"), ({"sync": "torch"}, "sync must be")],
)
def test_bad_benchmark_arguments(kwargs, message):
    args = {"sync": "none", **kwargs}
    with pytest.raises(ValueError, match=message):
        benchmark(lambda: None, **args)


def test_benchmark_needs_a_callable():
    with pytest.raises(ValueError, match="function"):
        benchmark(42, sync="none")


def test_in_turns_alternates_the_order_and_drops_the_warmup_turns():
    calls, synced = [], []
    works = {"a": lambda: calls.append("a") or "a", "b": lambda: calls.append("b") or "b"}
    results = benchmark_in_turns(works, sync=synced.append, warmup=1, repeat=3, flops=1e9)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"] and synced == calls
    assert list(results) == ["a", "b"] and [r.label for r in results.values()] == ["a", "b"]
    assert all(len(r.samples) == 3 and r.flops == 1e9 for r in results.values())


@pytest.mark.parametrize(("kwargs", "message"),
                         [({"repeat": 0}, "repeat"), ({"warmup": -1}, "warmup")])
def test_in_turns_rejects_bad_counts(kwargs, message):
    with pytest.raises(ValueError, match=message):
        benchmark_in_turns({"a": lambda: None}, sync="none", **kwargs)
