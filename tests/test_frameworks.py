"""The framework imports: a TensorFlow without Keras for worker programs that need none."""

from fresh_python import run_python


def test_tensorflow_without_keras_skips_the_keras_import_and_still_computes():
    out = run_python("""
        import sys
        from helpers.frameworks import import_tensorflow
        tf = import_tensorflow(keras=False)
        v1 = tf.compat.v1
        with tf.Graph().as_default():  # the TF1 graph code the worker programs run
            total = v1.get_variable("w", initializer=2.0) * 3.0
            with v1.Session() as session:
                session.run(v1.global_variables_initializer())
                print("RESULT", session.run(total))
        print("KERAS LOADED", "keras" in sys.modules)
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "RESULT 6.0" in out.stdout
    assert "KERAS LOADED False" in out.stdout


def test_tensorflow_with_keras_by_default():
    out = run_python("""
        import sys
        from helpers.frameworks import import_tensorflow
        tf = import_tensorflow()
        print("KERAS LOADED", "keras" in sys.modules, tf.keras.layers.Dense(2).units)
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "KERAS LOADED True 2" in out.stdout


MXNET_LIBRARIES = """
    import json, os
    from threadpoolctl import threadpool_info
    from helpers.measure import blas_libraries, kernels_of
    def report(tag):
        libs = blas_libraries()
        omp = [i["num_threads"] for i in threadpool_info() if i["internal_api"] == "openmp"]
        left = {k: os.environ.get(k) for k in ("MXNET_OMP_MAX_THREADS", "OPENBLAS_CORETYPE")}
        print(tag, json.dumps({"mxnet": kernels_of(libs, "mxnet"),
                               "numpy": kernels_of(libs, "numpy"), "omp": omp, "left": left}))
"""


def _mxnet_import_report(env: dict[str, str]) -> tuple[dict, dict]:
    """Kernels and threads before and after ``import_mxnet`` in a fresh process."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    program = textwrap.dedent(MXNET_LIBRARIES) + textwrap.dedent("""
        import numpy
        report("BEFORE")
        from helpers.frameworks import import_mxnet, mxnet_import_settings
        import_mxnet()
        report("AFTER")
        print("SETTINGS", json.dumps(mxnet_import_settings()))
        from helpers.frameworks import mxnet_route
        print("ROUTE", json.dumps([mxnet_route().build, mxnet_route().verdict]))
    """)
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS",
                          "SERIES_MXNET_TUNING")}
    clean["SERIES_MXNET_GPU_DIR"] = os.path.join(os.sep, "no", "mxnet-gpu-route")
    out = subprocess.run([sys.executable, "-c", program], env={**clean, **env},
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    return json.loads(lines["BEFORE"]) | {"settings": json.loads(lines["SETTINGS"]),
                                          "route": json.loads(lines["ROUTE"])}, \
        json.loads(lines["AFTER"])


def test_import_mxnet_gives_mxnet_all_cores_and_safe_kernels_without_touching_numpy():
    from helpers.machine import physical_cores, suggested_coretype
    from helpers.measure import GENERIC_KERNELS

    before, after = _mxnet_import_report({})
    added = before["settings"]["added"]
    assert added["MXNET_OMP_MAX_THREADS"] == str(physical_cores())
    assert after["omp"] and max(after["omp"]) == physical_cores()
    if suggested_coretype() is not None:
        assert added["OPENBLAS_CORETYPE"] == suggested_coretype()
        assert after["mxnet"] not in GENERIC_KERNELS
    assert after["numpy"] == before["numpy"]  # NumPy's OpenBLAS keeps its own kernels
    assert after["left"] == {"MXNET_OMP_MAX_THREADS": None, "OPENBLAS_CORETYPE": None}
    assert before["route"] == ["cpu", "not-installed"]  # no MXNet GPU route: the CPU wheel


def test_import_mxnet_respects_the_users_settings_and_the_opt_out():
    before, _ = _mxnet_import_report({"OMP_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Haswell"})
    assert before["settings"]["added"] == {}
    assert before["settings"]["read"] == {"OMP_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Haswell"}
    before, after = _mxnet_import_report({"SERIES_MXNET_TUNING": "0"})
    assert before["settings"]["added"] == {} and after["left"]["MXNET_OMP_MAX_THREADS"] is None
