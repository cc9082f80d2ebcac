"""Unit tests of the bench's pure logic: statistics, targets, parsing and the report.

Nothing here times anything or starts a framework: the bench's measurements run in
``make bench``; these tests check the arithmetic and the text built around them.
"""

from __future__ import annotations

import json

import pytest

from bench import matmul, orphans, report, run_all, stats, suite, timing_accuracy
from bench.subproc import environment


# -- statistics -------------------------------------------------------------------------
def test_median_and_spread():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([1, 2, 3, 4]) == 2.5
    assert stats.spread([1.0, 2.0, 3.0]) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [[], [float("nan")], ["1"], "123", [True]])
def test_median_rejects_bad_samples(bad):
    with pytest.raises(ValueError):
        stats.median(bad)


def test_speed_ratio_is_median_of_paired_ratios():
    # the framework takes twice the reference's time in every round, whatever the load
    ref = [1.0, 5.0, 2.0]
    fw = [2.0, 10.0, 4.0]
    assert stats.speed_ratio(fw, ref) == pytest.approx(0.5)
    # a ratio of medians would mix rounds; pairing keeps each round's own ratio
    assert stats.paired_ratios([1.0, 9.0], [2.0, 3.0]) == [0.5, 3.0]


def test_paired_ratios_rejects_mismatch_and_zero():
    with pytest.raises(ValueError, match="equal lengths"):
        stats.paired_ratios([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="> 0"):
        stats.paired_ratios([1.0], [0.0])


def test_relative_error_and_gflops():
    assert stats.relative_error(1.05, 1.0) == pytest.approx(0.05)
    assert stats.relative_error(0.9, 1.0) == pytest.approx(0.1)
    assert stats.gflops_matmul(1000, 2.0) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        stats.relative_error(1.0, 0.0)
    with pytest.raises(ValueError):
        stats.gflops_matmul(0, 1.0)
    with pytest.raises(ValueError):
        stats.gflops_matmul(10, 0.0)


def test_interleaved_rotates_order_and_respects_budget():
    calls: list[str] = []
    ticks = iter(range(1000))
    clock = lambda: float(next(ticks))  # noqa: E731  (each reading advances one second)
    contestants = {name: (lambda n=name: calls.append(n), lambda _r: None) for name in "abc"}
    samples = stats.interleaved(contestants, rounds=3, warmup=0, clock=clock)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert all(len(v) == 3 and all(t == 1.0 for t in v) for v in samples.values())
    calls.clear()
    samples = stats.interleaved(contestants, rounds=50, warmup=1, budget_s=1.0,
                                min_rounds=2, clock=clock)
    assert len(samples["a"]) == 2  # stopped after the minimum once the budget was spent
    assert calls[:3] == ["a", "b", "c"]  # the warm-up ran each once


def test_interleaved_records_cpu_seconds():
    wall = iter(range(0, 1000, 2))  # each timed call: 2 s of wall time ...
    cpu = iter(range(1000))  # ... and 1 s of CPU time
    got: dict[str, list[float]] = {}
    stats.interleaved({"a": (lambda: None, lambda _r: None)}, rounds=2, warmup=0,
                      clock=lambda: float(next(wall)), cpu_samples=got,
                      cpu_clock=lambda: float(next(cpu)))
    assert got == {"a": [1.0, 1.0]}


def test_interleaved_rejects_bad_input():
    with pytest.raises(ValueError, match="nothing to time"):
        stats.interleaved({})
    with pytest.raises(ValueError, match="pair of callables"):
        stats.interleaved({"x": lambda: None})
    with pytest.raises(ValueError, match="rounds"):
        stats.interleaved({"x": (lambda: None, lambda _r: None)}, rounds=0)


def test_targets():
    t = stats.Target("x", "<=", 5)
    assert t.met(5) is True and t.met(5.1) is False and t.met(None) is None
    assert t.met(float("nan")) is None and t.met(True) is None
    assert stats.Target("y", ">=", 0.8).met(0.79) is False
    assert stats.Target("z", "==", 0).met(0) is True
    with pytest.raises(ValueError, match="compares"):
        stats.Target("x", "<", 1)
    checked = stats.check_targets({"suite_seconds": 301, "orphans": 0})
    assert checked["suite_seconds"]["met"] is False
    assert checked["orphans"]["met"] is True
    assert checked["timing_error"]["met"] is None
    assert "copy_vs_memcpy" not in checked and "copy_vs_memcpy" in stats.FIGURES
    with pytest.raises(ValueError):
        stats.check_targets([1, 2])


# -- matmul logic -------------------------------------------------------------------------
def test_configs_take_the_series_tuning_from_the_helpers():
    from helpers.frameworks import TUNING_ENV, mxnet_tuning

    tuning = {"MXNET_OMP_MAX_THREADS": "2", "OPENBLAS_CORETYPE": "SkylakeX"}
    configs = matmul.mx_configs(tuning)
    assert [c["name"] for c in configs] == ["series", "library defaults", "threads only",
                                            "kernels only"]
    series = configs[0]
    assert series["env"] == {}  # import_mxnet tunes it, as in the notebooks ...
    assert "OPENBLAS_CORETYPE" in series["unset"]  # ... from an environment without overrides
    assert all(c["env"][TUNING_ENV] == "0" for c in configs[1:])  # the others: tuning off ...
    assert configs[2]["env"]["MXNET_OMP_MAX_THREADS"] == "2"  # ... and one setting back
    assert configs[3]["env"]["OPENBLAS_CORETYPE"] == "SkylakeX"
    assert "OMP_NUM_THREADS" in configs[1]["unset"]
    assert len(matmul.mx_configs({"MXNET_OMP_MAX_THREADS": "4"})) == 3  # no core type here
    assert len(matmul.mx_configs(mxnet_tuning({}))) >= 3  # this machine's own tuning
    assert [c["name"] for c in matmul.tf_configs()][0] == "series"


def test_bench_defines_no_blas_or_cpu_probe_of_its_own():
    for name in ("cpu_flags", "openblas_coretype_for", "physical_cores", "busy_threads",
                 "library_owner", "_blas_libraries", "_mx_openblas", "suggested_coretype"):
        own = getattr(matmul, name, None)
        assert own is None or own.__module__.startswith("helpers."), \
            f"bench.matmul has its own {name}"


def test_summarise_and_headline():
    s = matmul.summarise(1000, {"numpy": [1.0, 1.0, 2.0], "mxnet dot": [2.0, 2.0, 4.0]})
    assert s["routes"]["numpy"]["vs_blas"] == 1.0
    assert s["routes"]["mxnet dot"]["vs_blas"] == pytest.approx(0.5)
    assert s["routes"]["numpy"]["gflops"] == pytest.approx(2.0)
    with_cpu = matmul.summarise(1000, {"numpy": [1.0], "x": [2.0]},
                                cpu={"numpy": [2.0], "x": [2.0]})
    # half the speed on the clock, the same work per CPU-second (it used half the threads)
    assert with_cpu["routes"]["x"]["vs_blas"] == 0.5
    assert with_cpu["routes"]["x"]["vs_blas_per_cpu_s"] == 1.0
    section = {"mxnet": [{"name": "library defaults", "routes": {"mxnet dot": {"vs_blas": 9}}},
                         {"name": "series", **s}]}
    assert matmul.headline(section, "mxnet", "mxnet dot") == pytest.approx(0.5)
    assert matmul.headline({}, "mxnet", "mxnet dot") is None
    both = matmul.summarise(1000, {"numpy": [1.0], "mxnet dot": [2.0],
                                   "mxnet FullyConnected": [1.25]})
    figures = matmul.figures({"mxnet": [{"name": "series", **both}]})
    assert figures["matmul_mx_vs_blas"] == 0.5 and figures["matmul_mx_best_vs_blas"] == 0.8
    assert figures["matmul_tf_vs_blas"] is None
    assert matmul.figures({})["matmul_mx_best_vs_blas"] is None
    with pytest.raises(ValueError, match="reference"):
        matmul.summarise(10, {"mxnet dot": [1.0]})


def test_batch_size_for():
    assert timing_accuracy.batch_size_for(0.01, 0.1) == 10
    assert timing_accuracy.batch_size_for(1.0, 0.1) == 1
    assert timing_accuracy.batch_size_for(1e-6, 0.1, most=64) == 64
    assert timing_accuracy.paired_error([1.01, 0.99, 1.02], [1.0, 1.0, 1.0]) == pytest.approx(0.01)
    with pytest.raises(ValueError):
        timing_accuracy.batch_size_for(0.0, 0.1)


# -- suite and orphans --------------------------------------------------------------------
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="notebooks.a.ipynb" name="Cell 0" file="notebooks/a.ipynb" time="10.5"/>
<testcase classname="notebooks.a.ipynb" name="Cell 1" file="notebooks/a.ipynb" time="40.0"/>
<testcase classname="notebooks.b.ipynb" name="Cell 0" file="notebooks/b.ipynb" time="3.0">
<failure message="boom">x</failure></testcase>
<testcase classname="notebooks.c.ipynb" name="Cell 0" time="1.0"/>
</testsuite></testsuites>"""


def test_per_notebook_from_junit(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text(JUNIT)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "a.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": ["ShapedNetwork( in prose is not a cell's code"]},
        {"cell_type": "code", "source": ["x = 1"]},
        {"cell_type": "code", "source": ["with ShapedNetwork(2) as net:\n", "    pass"]}]}))
    assert suite.shaped_cells(tmp_path / "notebooks" / "a.ipynb") == {"Cell 1"}
    (tmp_path / "notebooks" / "b.ipynb").write_text(json.dumps({"cells": []}))
    assert suite.per_notebook(path)["notebooks/a.ipynb"] == {  # no root: no notebook is read
        "seconds": 50.5, "cells": 2, "failed": 0}
    books = suite.per_notebook(path, root=tmp_path)
    assert books["notebooks/a.ipynb"] == {"seconds": 50.5, "cells": 2, "failed": 0,
                                          "shaped_seconds": 40.0}
    assert books["notebooks/b.ipynb"]["shaped_seconds"] == 0.0
    with pytest.raises(FileNotFoundError, match="from the repository root"):
        suite.per_notebook(path, root=tmp_path / "elsewhere")  # a wrong root is no silent zero
    assert books["notebooks/b.ipynb"]["failed"] == 1
    assert "notebooks.c.ipynb" in books  # no file attribute: the class name is used
    assert suite.over_limit(books) == ["notebooks/a.ipynb"]


def test_per_notebook_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="--junitxml"):
        suite.per_notebook(tmp_path / "missing.xml")
    bad = tmp_path / "bad.xml"
    bad.write_text("not xml <")
    with pytest.raises(ValueError, match="JUnit"):
        suite.per_notebook(bad)


def test_classify_leftovers():
    assert orphans.classify(["python"], {"DMLC_ROLE": "server"}).startswith("MXNet ps-lite server")
    assert orphans.classify("python -m helpers.workers.tf_server") == "series worker program"
    assert orphans.classify(["python", "-m", "ipykernel_launcher"]) == "Jupyter kernel"
    task = orphans.classify(["python", "x.py"], {"TF_CONFIG": "{}"})
    assert task == "TensorFlow task (TF_CONFIG)"
    assert orphans.classify([]) == "other"
    with pytest.raises(ValueError):
        orphans.marked_processes("")


def test_environment_sets_and_restores(monkeypatch):
    monkeypatch.setenv("BENCH_TEST_A", "1")
    monkeypatch.delenv("BENCH_TEST_B", raising=False)
    import os

    with environment({"BENCH_TEST_B": "2"}, unset=("BENCH_TEST_A",)):
        assert "BENCH_TEST_A" not in os.environ and os.environ["BENCH_TEST_B"] == "2"
    assert os.environ["BENCH_TEST_A"] == "1" and "BENCH_TEST_B" not in os.environ


# -- orchestration and report -------------------------------------------------------------
def test_choose_sections():
    assert run_all.choose_sections(None, None) == list(run_all.SECTIONS)
    assert run_all.choose_sections(["suite", "timing"], None) == ["timing", "suite"]
    assert "suite" not in run_all.choose_sections(None, ["suite"])
    with pytest.raises(ValueError, match="unknown section"):
        run_all.choose_sections(["nope"], None)


def _probe(name, what, dot, fc, kernels, threads, settings=None):
    return {"name": name, "what": what, "n": 2048, "cpu_share": 1.9,
            "routes": {"numpy": {"gflops": 100.0, "vs_blas": 1.0},
                       "mxnet dot": {"gflops": 100.0 * dot, "vs_blas": dot},
                       "mxnet FullyConnected": {"gflops": 100.0 * fc, "vs_blas": fc}},
            "threads": {"mxnet dot": threads},
            "kernels": {"mxnet": kernels, "numpy": "Cooperlake"},
            "import_settings": {"read": settings or {}, "added": settings or {}}}


def _results():
    matmul_section = {
        "n": 2048, "physical_cores": 2,
        "removed_from_environment": {"OPENBLAS_CORETYPE": "Haswell"},
        "mxnet": [_probe("series", "as the notebooks run", 0.45, 0.75, "Haswell", 2,
                         {"MXNET_OMP_MAX_THREADS": "2", "OPENBLAS_CORETYPE": "SkylakeX"}),
                  _probe("library defaults", "SERIES_MXNET_TUNING=0", 0.1, 0.6, "Prescott", 1),
                  _probe("threads only", "MXNET_OMP_MAX_THREADS=2", 0.2, 0.7, "Prescott", 2)],
        "tensorflow": [{"name": "series", "what": "as run", "version": "2.21.0", "onednn": True,
                        "intra_op_threads": 0, "threads": {"tensorflow matmul": 2},
                        "cpu_share": 1.9,
                        "routes": {"numpy": {"gflops": 100.0, "vs_blas": 1.0},
                                   "tensorflow matmul": {"gflops": 98.0, "vs_blas": 0.98}}},
                       {"name": "oneDNN off", "what": "TF_ENABLE_ONEDNN_OPTS=0",
                        "error": "RuntimeError: boom\nmore"}],
    }
    details = {
        "matmul": matmul_section,
        "suite": {"command": "pytest notebooks", "suite_seconds": 320.0, "passed": True,
                  "summary": "99 passed", "cells_seconds": 70.0, "shaped_seconds": 30.0,
                  "notebooks": {
                      "notebooks/00_a.ipynb": {"seconds": 50.0, "cells": 9, "failed": 0,
                                               "shaped_seconds": 30.0},
                      "notebooks/01_b.ipynb": {"seconds": 20.0, "cells": 5, "failed": 0}}},
        "cluster": {"workers": 2, "worker_program": "helpers.workers.tf_server",
                    "runs": [{"ready_s": 5.0, "teardown_s": 0.2}],
                    "single_worker": {"ready_s": 3.5, "teardown_s": 0.1},
                    "fixed_sleep": {"sleep_s": 10, "ready_s": 13.0, "teardown_s": 0.2,
                                    "first_ready_when_sleep_ended": True},
                    "cluster_ready_seconds": 5.0, "cluster_teardown_seconds": 0.2},
        "orphans": {"processes": []},
    }
    figures = run_all.extract_figures(details, 0)
    return {**figures, "targets": stats.check_targets(figures),
            "machine": {"cpu": "Test CPU", "logical_cpus": 2, "physical_cores": 2,
                        "date": "2030-01-01 00:00:00 UTC", "versions": {"mxnet": "1.9.1"}},
            "run": {"seconds": 400.0, "argv": [], "load_average_start": [0.1, 0.2, 0.3]},
            "errors": {"copies": "RuntimeError: no copy"}, "details": details}


def test_extract_figures_reads_the_series_rows():
    r = _results()
    assert r["matmul_mx_vs_blas"] == 0.45 and r["matmul_tf_vs_blas"] == 0.98
    assert r["matmul_mx_best_vs_blas"] == 0.75
    assert r["suite_seconds"] == 320.0 and r["copy_vs_memcpy"] is None
    assert r["targets"]["matmul_mx_vs_blas"]["met"] is False  # target 0.5
    assert r["targets"]["matmul_mx_best_vs_blas"]["met"] is False  # target 0.8


def test_report_renders_figures_and_explains_misses():
    r = _results()
    text = report.render(json.loads(json.dumps(r)))  # what results.json round-trips to
    assert text.startswith("# Benchmarks of the series")
    assert "Test CPU" in text and "2030-01-01" in text
    assert "| `suite_seconds` | 320 | <= 240 | **missed** |" in text
    assert "| `copy_vs_memcpy` | - | none | - |" in text
    # the MXNet misses are explained from the probe data: the series' settings, kernels,
    # threads, what the untuned library does and why, and the vector width left over
    assert "`MXNET_OMP_MAX_THREADS=2` `OPENBLAS_CORETYPE=SkylakeX` (added by `import_mxnet`)" \
        in text
    assert "`Haswell` kernels and `nd.dot` worked on 2 thread(s) of 2 physical cores" in text
    assert "at 0.45 of NumPy's speed" in text and "The faster of the two" in text
    assert "falls back to `Prescott`" in text and "half the logical CPUs" in text
    assert "One setting at a time: `MXNET_OMP_MAX_THREADS=2` 0.20" in text
    assert "(256-bit vectors), NumPy's `Cooperlake` (512-bit), 2x" in text
    assert "environment sets `OPENBLAS_CORETYPE=Haswell`; every probe ran without it" in text
    assert "- `matmul_mx_best_vs_blas`:" in text and "| `matmul_mx_best_vs_blas` | 0.75 |" in text
    # the suite miss names the slowest notebook; per-notebook rows flag the one over 45 s
    assert "notebooks/00_a.ipynb 50 s" in text and "**over**" in text
    assert "shaped links took 30 s of the notebooks' 70 s" in text and "about 290 s" in text
    assert "| notebooks/00_a.ipynb | 50 | 30 | 9 | 0 | **over** |" in text
    r["details"]["suite"]["shaping_problem"] = "no tc command"  # skipped: no cost claimed
    text = report.render(json.loads(json.dumps(r)))
    assert "shaped links were skipped here (no tc command)" in text and "about 290" not in text
    assert "worker 0 was listening" in text
    assert "copies: `RuntimeError: no copy`" in text and "oneDNN off: `RuntimeError: boom`" in text


def test_report_shows_gpu_figures_when_present():
    r = _results()
    r["details"]["matmul"]["gpu"] = {
        "gpus": 1, "n": 8192, "tf_gflops_by_size": {"4096": 40000.0, "8192": 50000.0},
        "cublas_peak_gflops": 50000.0, "tf_vs_peak": 1.0, "tf32_gflops": 200000.0,
        "mx_gflops": None, "mx_note": "this MXNet build has no CUDA"}
    r["details"]["copies"] = {"rows": [], "headline_bytes": 2**26, "gpu": {"gpus": 1, "rows": [
        {"route": "tensorflow host->GPU:0", "bytes": 2**28, "gbps": 25.0}]}}
    text = report.render(r)
    assert "### GPU" in text and "cuBLAS peak" in text and "no CUDA" in text
    assert "| tensorflow host->GPU:0 | 256 | 25 |" in text


def test_report_rejects_non_dict_and_handles_empty():
    with pytest.raises(ValueError):
        report.render([])
    text = report.render({})
    assert "not measured" in text


def test_fmt():
    assert report.fmt(None) == "-" and report.fmt(True) == "yes" and report.fmt(3) == "3"
    assert report.fmt(0.123456) == "0.123" and report.fmt(12345.6) == "12346"


def test_sweep_finds_and_ends_a_leftover_of_this_run_only():
    import os
    import subprocess

    from bench import RUN_MARKER

    env = dict(os.environ, **{RUN_MARKER: "test-run-id", "DMLC_ROLE": "server"})
    other = dict(os.environ, **{RUN_MARKER: "someone-else"})
    mine = subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)
    theirs = subprocess.Popen(["sleep", "30"], env=other, start_new_session=True)
    try:
        found = orphans.sweep("test-run-id", grace_s=0.2)
        assert found["count"] == 1 and found["killed"] == 1
        assert found["processes"][0]["pid"] == mine.pid
        assert found["processes"][0]["kind"] == "MXNet ps-lite server (DMLC_ROLE)"
        assert mine.wait(timeout=5) != 0  # ended by the sweep
        assert theirs.poll() is None  # another run's process is left alone
    finally:
        for p in (mine, theirs):
            p.kill()
            p.wait()
