"""Logical devices: idempotent, too-late changes explained, plans and banners honest.

TensorFlow's runtime can start only once per process, so each case runs in a fresh
Python process.
"""

import pytest
from fresh_python import run_python

from helpers.devices import DevicePlan, use_logical_cpus


def test_same_count_twice_is_a_no_op_and_a_different_count_after_start_is_explained():
    out = run_python("""
        from helpers import import_tensorflow
        from helpers.devices import use_logical_cpus
        tf = import_tensorflow()
        assert use_logical_cpus(3) == ["/CPU:0", "/CPU:1", "/CPU:2"]
        use_logical_cpus(3)
        assert len(tf.config.list_logical_devices("CPU")) == 3  # runtime starts here
        use_logical_cpus(3)  # still fine
        try:
            use_logical_cpus(2)
        except RuntimeError as e:
            print("ERROR:", e)
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "already started with 3 logical CPU(s)" in out.stdout
    assert "restart the kernel" in out.stdout


def test_plan_on_a_cpu_machine_uses_logical_cpus_and_says_so():
    out = run_python("""
        from helpers import requirements_banner, import_tensorflow
        plan = requirements_banner(2)
        tf = import_tensorflow()
        print("KIND", plan.kind, plan.devices, len(tf.config.list_logical_devices("CPU")))
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    if "KIND gpu" not in out.stdout:  # a GPU machine plans differently
        assert "KIND logical-cpu ('/CPU:0', '/CPU:1') 2" in out.stdout
        assert "SIMULATED" in out.stdout and "adds no compute" in out.stdout


def test_banner_for_real_gpus_does_not_claim_simulation():
    plan = DevicePlan(2, "gpu", ("/GPU:0", "/GPU:1"), physical_gpus=4, cores=16)
    assert not plan.simulated
    assert "SIMULATED" not in plan.banner()
    assert "2 real GPU(s)" in plan.banner()


def test_virtual_gpu_plan_never_duplicates_mxnet_contexts():
    from gpu_fakes import FakeMX

    plan = DevicePlan(3, "virtual-gpu", ("/GPU:0", "/GPU:1", "/GPU:2"), 1, 8)
    assert plan.simulated and "virtual GPUs" in plan.banner()
    # one GPU cannot be three MXNet devices: three CPU contexts, said to be stand-ins
    assert [str(c) for c in plan.mxnet_contexts(FakeMX(1))] == ["cpu(0)", "cpu(1)", "cpu(2)"]
    assert "SIMULATED: MXNet sees only 1 GPU(s)" in plan.describe_mxnet_contexts(FakeMX(1))
    assert [str(c) for c in plan.mxnet_contexts(FakeMX(4))] == ["gpu(0)", "gpu(1)", "gpu(2)"]
    cpu_plan = DevicePlan(2, "logical-cpu", ("/CPU:0", "/CPU:1"), 0, 2)
    assert [str(c) for c in cpu_plan.mxnet_contexts(FakeMX(0))] == ["cpu(0)", "cpu(1)"]


def test_real_mxnet_contexts_on_this_machine():
    from helpers import import_mxnet

    mx = import_mxnet()
    plan = DevicePlan(2, "logical-cpu", ("/CPU:0", "/CPU:1"), 0, 2)
    contexts = plan.mxnet_contexts(mx)
    assert len(set(contexts)) == 2 and all(c.device_type in ("cpu", "gpu") for c in contexts)


@pytest.mark.parametrize("n", [0, -1, 1.5, True, "2"])
def test_bad_logical_cpu_counts(n):
    with pytest.raises(ValueError, match="logical CPUs must be an int >= 1"):
        use_logical_cpus(n)


def test_bad_gpu_memory_need():
    from helpers.devices import plan_devices

    with pytest.raises(ValueError, match="gpu_memory_mb"):
        plan_devices(2, gpu_memory_mb=0)


def test_one_cpu_is_not_called_simulated():
    plan = DevicePlan(1, "logical-cpu", ("/CPU:0",), physical_gpus=0, cores=2)
    assert not plan.simulated
    assert "SIMULATED" not in plan.banner() and "using the CPU (/CPU:0)" in plan.banner()
