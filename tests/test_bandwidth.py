"""Tests of the copy-cost sweep (NumPy routes only: fast and deterministic enough)."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from helpers.measure import BIG_BYTES, CopyRoute, copy_sweep, elements_for, repeats_for


def numpy_route(name="numpy"):
    return CopyRoute(name, make=lambda n: (np.ones(n, np.float32), np.empty(n, np.float32)),
                     copy=lambda src, dst: np.copyto(dst, src), sync="none")


def test_elements_for_megabytes():
    assert elements_for(1.0) == 250_000
    assert elements_for(0.004) == 1000
    assert elements_for(1e-9) == 1  # never zero elements
    assert elements_for(1.0, itemsize=8) == 125_000
    for bad in (0, -1, "1", True):
        with pytest.raises(ValueError, match="megabytes"):
            elements_for(bad)
    with pytest.raises(ValueError, match="itemsize"):
        elements_for(1.0, itemsize=0)


def test_repeats_shrink_only_for_big_copies():
    assert repeats_for(1e3, 5) == 5
    assert repeats_for(BIG_BYTES, 5, big_repeat=2) == 2
    assert repeats_for(BIG_BYTES, 1, big_repeat=2) == 1
    with pytest.raises(ValueError, match="repeat"):
        repeats_for(1e3, 0)
    with pytest.raises(ValueError, match="big_repeat"):
        repeats_for(1e3, 3, big_repeat=0)


def test_sweep_times_every_route_at_every_size():
    copied = []

    def checking_copy(src, dst):
        np.copyto(dst, src)
        copied.append(np.array_equal(src, dst))

    routes = [numpy_route("a"), CopyRoute("b", make=numpy_route().make, copy=checking_copy)]
    sweep = copy_sweep(routes, [0.004, 0.4], warmup=1, repeat=3)
    assert sweep.sizes_bytes == [4000.0, 400_000.0]
    assert set(sweep.results) == {"a", "b"}
    assert all(len(rs) == 2 and all(len(r.samples) == 3 for r in rs)
               for rs in sweep.results.values())
    assert all(copied) and len(copied) == 2 * (1 + 3)
    assert all(rate > 0 for rates in sweep.gbps().values() for rate in rates)
    assert sweep.largest()["a"] == sweep.gbps()["a"][-1]
    assert len(sweep.table()) == 4
    assert isinstance(sweep.plot("t"), Figure)
    assert set(sweep.to_dict()["routes"]) == {"a", "b"}


def test_sweep_rejects_bad_input():
    with pytest.raises(ValueError, match="at least one CopyRoute"):
        copy_sweep([], [1.0])
    with pytest.raises(ValueError, match="distinct"):
        copy_sweep([numpy_route(), numpy_route()], [1.0])
    with pytest.raises(ValueError, match="at least one size"):
        copy_sweep([numpy_route()], [])
    with pytest.raises(ValueError, match="sync must be one of"):
        CopyRoute("x", make=numpy_route().make, copy=numpy_route().copy, sync="cuda")
    with pytest.raises(ValueError, match="copy must be a function"):
        CopyRoute("x", make=numpy_route().make, copy=None)
    with pytest.raises(ValueError, match="non-empty name"):
        CopyRoute("", make=numpy_route().make, copy=numpy_route().copy)
