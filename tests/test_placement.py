"""Placement logs parsed into records, from text and from a real TensorFlow run."""

import sys

from fresh_python import run_python

from helpers.placement import PlacementLog, parse_placement

GRAPH_STDOUT = """\
a: (Const): /job:localhost/replica:0/task:0/device:CPU:0
b: (Const): /job:localhost/replica:0/task:0/device:CPU:1
MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0
x: (_Arg): /job:localhost/replica:0/task:0/device:CPU:0
[[22. 28.]
"""
PREFIXED_STDERR = (
    "I0000 00:00:1795317031.708567    2017 placer.cc:162] "
    "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0\n"
    "I0000 00:00:1795317031.705722    2017 execute.cc:1775] "
    "Executing op AddN in device /job:worker/replica:0/task:1/device:CPU:0\n"
)


def test_graph_lines_from_stdout_and_eager_lines_from_stderr_without_duplicates():
    records = parse_placement(GRAPH_STDOUT, PREFIXED_STDERR)
    assert [(r.name, r.via) for r in records] == [
        ("a", "graph"), ("b", "graph"), ("MatMul", "graph"), ("x", "graph"), ("AddN", "eager"),
    ]
    assert records[-1].short_device == "CPU:0"
    assert records[-1].device.startswith("/job:worker/")


def test_graph_lines_fall_back_to_stderr_when_stdout_has_none():
    records = parse_placement("", PREFIXED_STDERR)
    assert [(r.op, r.short_device) for r in records] == [("MatMul", "GPU:0"), ("AddN", "CPU:0")]


def test_table_hides_plumbing_and_devices_of_finds_ops():
    log = PlacementLog(parse_placement(GRAPH_STDOUT))
    assert log.devices_of("MatMul") == {"GPU:0"}
    assert log.devices_of("b") == {"CPU:1"}
    assert log.table().column("node") == ["a", "b", "MatMul"]
    assert len(log.table(skip_plumbing=False)) == 4


def test_table_keeps_only_one_log_when_asked():
    log = PlacementLog(parse_placement(GRAPH_STDOUT, PREFIXED_STDERR))
    assert log.table(via="eager").column("op") == ["AddN"]
    assert "AddN" not in log.table(via="graph").column("op")
    try:
        log.table(via="session")
    except ValueError as err:
        assert "via must be" in str(err)
    else:
        raise AssertionError("an unknown log kind must be rejected")


def test_eager_lines_written_through_python_stdout_are_caught(capsys):
    from helpers.placement import capture_placement

    line = "Executing op MatMul in device /job:localhost/replica:0/task:0/device:GPU:1"
    with capture_placement() as log:
        sys.stdout.write("Executing ")  # a listener may write a line in pieces
        sys.stdout.write(line[len("Executing "):] + "\n")
        print("Device mapping:\n/job:localhost/replica:0/task:0/device:GPU:0 -> device: 0, name: X")
        print("the learner's own output", end="")
    assert [(r.op, r.short_device, r.via) for r in log.records] == [("MatMul", "GPU:1", "eager")]
    assert sys.stdout is not None and not hasattr(sys.stdout, "caught")
    assert capsys.readouterr().out == "the learner's own output"


def test_unrelated_text_gives_no_records():
    assert parse_placement("hello\n[[1, 2]]\n", "W0000 some warning\n") == []


def test_real_tensorflow_run_on_two_logical_cpus():
    """End to end: logical CPUs, logging on before the runtime starts, ops pinned."""
    program = """
        from helpers import capture_placement, import_tensorflow
        from helpers.devices import use_logical_cpus
        tf = import_tensorflow()
        use_logical_cpus(2)
        tf.debugging.set_log_device_placement(True)
        with capture_placement() as log:
            with tf.device("/CPU:1"):
                c = tf.matmul(tf.ones((2, 3)), tf.ones((3, 2)))
        print("DEVICES", sorted(log.devices_of("MatMul")))
    """
    out = run_python(program, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "DEVICES ['CPU:1']" in out.stdout
