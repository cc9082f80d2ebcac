"""Tests of the copy-cost sweep (NumPy routes only: fast and deterministic enough)."""

import numpy as np
from matplotlib.figure import Figure

from helpers import measure
from helpers.measure import CopyRoute, copy_sweep


def numpy_route(name="numpy"):
    return CopyRoute(name, make=lambda n: (np.ones(n, np.float32), np.empty(n, np.float32)),
                     copy=lambda src, dst: np.copyto(dst, src), sync="none")


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


def test_big_copies_are_timed_fewer_times_and_sizes_never_vanish(monkeypatch):
    monkeypatch.setattr(measure, "BIG_BYTES", 100_000)
    sweep = copy_sweep([numpy_route()], [1e-9, 0.004, 0.4], warmup=0, repeat=5, big_repeat=2)
    assert sweep.sizes_bytes == [4.0, 4000.0, 400_000.0]  # at least one float32
    assert [len(r.samples) for r in sweep.results["numpy"]] == [5, 5, 2]
