"""Strategy choice: mirrored over what exists, announced when simulated, bad input rejected.

Logical devices can be configured only once per process, so cases that configure them
run in a fresh Python process.
"""

import pytest
from fresh_python import run_python as run_fresh

from helpers.devices import mirrored_over

CPU_ONLY = """
from helpers import import_tensorflow
from helpers.devices import mirrored_over, replica_devices, use_logical_cpus
tf = import_tensorflow()
if tf.config.list_physical_devices("GPU"):
    print("SKIP")  # these cases are about machines without GPUs
    raise SystemExit
"""


def run_python(code: str):
    """Run ``code`` after the CPU-only preamble in a fresh process (devices are set once)."""
    return run_fresh(code, preamble=CPU_ONLY)


def test_mirrored_strategies_over_different_counts_coexist_on_logical_cpus():
    out = run_python("""
        devices = use_logical_cpus(4)
        # strategies over different counts coexist in one process: without their own
        # collective keys the 2-replica all-reduce would join the 4-replica group and abort
        for s in (mirrored_over(devices, 4), mirrored_over(devices, 2), mirrored_over(devices, 1),
                  mirrored_over(devices, 4)):
            k = s.num_replicas_in_sync
            step = tf.function(lambda: s.run(lambda: tf.distribute.get_replica_context()
                                             .all_reduce("SUM", tf.constant(1.0))))
            sums = [float(x) for x in s.experimental_local_results(step())]
            assert sums == [float(k)] * k, (k, sums)
            assert replica_devices(s) == devices[:k]
        print("DONE")
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    if "SKIP" not in out.stdout:
        assert "DONE" in out.stdout


def test_the_default_strategy_has_no_device_list():
    out = run_python("""
        assert replica_devices(tf.distribute.get_strategy()) == []
        print("DONE")
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "DONE" in out.stdout or "SKIP" in out.stdout


@pytest.mark.parametrize("k", [0, 3, -1, 1.0, True, "2"])
def test_mirrored_over_rejects_counts_outside_the_devices(k):
    with pytest.raises(ValueError, match="k must be an int between 1 and 2"):
        mirrored_over(["/CPU:0", "/CPU:1"], k)


@pytest.mark.parametrize("devices, message", [
    ("/CPU:0", "not the string"),
    (["/CPU:0", "cpu:0"], "distinct"),
    (["/XPU:0"], "unknown device type"),
])
def test_mirrored_over_rejects_bad_device_lists(devices, message):
    with pytest.raises(ValueError, match=message):
        mirrored_over(devices, 1)

