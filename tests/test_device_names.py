"""Device strings: every spelling TensorFlow accepts, and clear errors for the rest."""

import pytest

from helpers.devices import DeviceName, parse_device


@pytest.mark.parametrize(
    ("spec", "device_type", "index"),
    [("/cpu:0", "CPU", 0), ("/gpu:1", "GPU", 1), ("GPU:0", "GPU", 0), ("/device:GPU:3", "GPU", 3),
     ("cpu:2", "CPU", 2)],
)
def test_short_forms(spec, device_type, index):
    name = parse_device(spec)
    assert (name.device_type, name.index) == (device_type, index)
    assert name.job is None and name.task is None


def test_fully_qualified_form_keeps_cluster_coordinates():
    name = parse_device("/job:worker/replica:0/task:1/device:GPU:0")
    assert name == DeviceName("GPU", 0, job="worker", replica=0, task=1)
    assert name.full == "/job:worker/replica:0/task:1/device:GPU:0"


def test_short_and_full_round_trip():
    name = parse_device("/gpu:1")
    assert name.short == "/GPU:1"
    assert name.full == "/job:localhost/replica:0/task:0/device:GPU:1"
    assert parse_device(name.full).short == "/GPU:1"


def test_job_and_task_without_replica():
    name = parse_device("/job:ps/task:0/device:CPU:0")
    assert (name.job, name.task, name.replica) == ("ps", 0, None)
    assert parse_device(" /job:ps/task:1/cpu:0 ") == DeviceName("CPU", 0, "ps", None, 1)


@pytest.mark.parametrize(
    ("spec", "message"),
    [("", "empty"), (None, "empty"), ("/fpga:0", "unknown device type 'fpga'"),
     ("/gpu", "TYPE:INDEX"), ("/gpu:x", "TYPE:INDEX"), ("/job:worker/task:0", "TYPE:INDEX"),
     ("/job:worker/task:one/device:CPU:0", "TYPE:INDEX"), ("/job:a/job:b/device:CPU:0", "TYPE"),
     ("/host:1/device:CPU:0", "TYPE:INDEX"), ("/task:0/job:ps/device:CPU:0", "TYPE:INDEX")],
)
def test_bad_device_strings_say_what_is_accepted(spec, message):
    with pytest.raises(ValueError, match=message) as err:
        parse_device(spec)
    assert "/cpu:0" in str(err.value)  # the message shows accepted forms
