"""Tests of the BLAS report, the busy-thread count and the fresh-process MXNet probe
(helpers.measure)."""

import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from helpers.frameworks import import_mxnet
from helpers.machine import suggested_coretype
from helpers.measure import (
    _owner,
    blas_libraries,
    busy_threads,
    cpu_seconds_per_call,
    kernels_of,
    probe_mxnet_dot,
)
from helpers.output import Table

linux = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")


def spin(seconds):
    end = time.thread_time() + seconds  # burn CPU time in the calling thread
    while time.thread_time() < end:
        pass


def test_libraries_list_mxnet_and_numpy_openblas():
    import_mxnet()
    np.ones((4, 4)) @ np.ones((4, 4))
    table = blas_libraries()
    owners = table.column("used by")
    assert "numpy" in owners and "mxnet" in owners
    assert kernels_of(table, "mxnet")  # the kernel set OpenBLAS chose, e.g. 'Haswell'
    assert kernels_of(table, "no-such-package") is None


def test_owner_names_the_package_folder():
    assert _owner("/x/site-packages/mxnet/libopenblas.so.0") == "mxnet"
    assert _owner("/x/site-packages/numpy.libs/libopenblas64.so") == "numpy"
    assert _owner("/usr/lib/libgomp.so.1") == "system"


def test_kernels_of_reads_the_table():
    table = Table(["used by", "library", "version", "kernels", "threads", "threading"],
                  [["pkg", "openblas", "0.3", "Zen", 4, "pthreads"],
                   ["pkg", "openmp", None, None, 4, None]])
    assert kernels_of(table, "pkg") == "Zen"


def test_suggested_coretype_from_flags():
    assert suggested_coretype({"avx", "avx2", "fma", "sse2"}) == "Haswell"
    assert suggested_coretype({"avx", "sse2"}) == "Sandybridge"
    assert suggested_coretype({"sse2"}) is None


@linux
def test_busy_threads_counts_working_threads():
    # a second and more of wall-clock time: enough CPU time to count even on a busy machine
    assert busy_threads(lambda: spin(0.02), min_seconds=1.5) == 1

    with ThreadPoolExecutor(1) as pool:  # a pool that lives on, like a BLAS's threads

        def two_threads():
            helper = pool.submit(spin, 0.03)
            spin(0.03)
            helper.result()

        assert busy_threads(two_threads, min_seconds=1.5) == 2


@linux
def test_busy_threads_says_none_when_too_little_work():
    assert busy_threads(lambda: None, min_seconds=0.01) is None


def test_cpu_seconds_per_call_counts_cpu_time_not_waiting():
    busy = cpu_seconds_per_call(lambda: spin(0.02), min_seconds=0.2)
    asleep = cpu_seconds_per_call(lambda: time.sleep(0.02), min_seconds=0.2)
    assert 0.01 < busy < 0.2  # a spin of 20 ms costs about 20 ms of CPU, even on a busy machine
    assert asleep < 0.5 * busy  # sleeping costs almost none


def test_probe_runs_mxnet_in_a_fresh_process_with_the_given_settings():
    result = probe_mxnet_dot({"OPENBLAS_CORETYPE": "Prescott"}, size=128, repeat=2)
    assert result["settings"] == {"OPENBLAS_CORETYPE": "Prescott"}
    assert result["kernels_mxnet"] == "Prescott"  # the setting reached the child's OpenBLAS
    assert result["gflops_mxnet"] > 0 and result["gflops_numpy"] > 0
    assert result["cpu_gflops_mxnet"] > 0 and result["cpu_gflops_numpy"] > 0


def test_probe_wants_settings_as_strings():
    with pytest.raises(ValueError, match="strings"):
        probe_mxnet_dot({"OMP_NUM_THREADS": 2})
