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
