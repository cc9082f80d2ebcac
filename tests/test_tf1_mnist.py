"""The TF1 worker program: its flags, its checks, and one short real cluster run."""

from __future__ import annotations

import re

import pytest

from helpers.processes import leftover_processes
from helpers.tf_cluster import LocalTFCluster
from helpers.workers import tf1_mnist

HOSTS = ["--ps_hosts=127.0.0.1:1", "--worker_hosts=127.0.0.1:2,127.0.0.1:3"]


def test_flags_parse_with_defaults_and_absl_booleans():
    fv = tf1_mnist.parse_flags(["prog", "--job_name=worker", "--task_index=1",
                                "--nodevice_filters", "--steps=7", *HOSTS])
    assert (fv.job_name, fv.task_index, fv.steps) == ("worker", 1, 7)
    assert fv.device_filters is False and fv.session == "supervisor"
    # a fresh FlagValues each time: defining twice in one process is fine
    assert tf1_mnist.parse_flags(["prog", "--job_name=ps", *HOSTS]).device_filters is True


@pytest.mark.parametrize(("argv", "message"), [
    (["--job_name=chief", *HOSTS], "--job_name must be 'ps' or 'worker'"),
    (["--job_name=worker", "--task_index=2", *HOSTS], "--task_index must be 0 to 1"),
    (["--job_name=ps", "--task_index=1", *HOSTS], "--task_index must be 0 to 0"),
    (["--job_name=worker", "--worker_hosts=a:1"], "--ps_hosts and --worker_hosts"),
    (["--job_name=worker", "--ps_hosts=nohost", "--worker_hosts=a:1"], "is not host:port"),
    (["--job_name=worker", "--steps=0", *HOSTS], "--steps must be an int >= 1, not 0"),
    (["--job_name=worker", "--learning_rate=-1", *HOSTS], "--learning_rate must be a number > 0"),
    (["--job_name=worker", "--learning_rate=nan", *HOSTS], "--learning_rate must be a number > 0"),
    (["--job_name=worker", "--steps=many", *HOSTS], "bad command line"),
    (["--job_name=worker", "--session=keras", *HOSTS], "bad command line"),
    (["--job_name=worker", "--unknown=1", *HOSTS], "bad command line"),
])
def test_bad_flags_are_clear_value_errors(argv, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        tf1_mnist.parse_flags(["prog", *argv])


def test_main_reports_bad_flags_with_exit_code_2(capsys):
    assert tf1_mnist.main(["prog", "--job_name=boss", *HOSTS]) == 2
    assert "--job_name must be 'ps' or 'worker'" in capsys.readouterr().err


def test_one_ps_one_worker_trains_and_the_ps_is_ended():
    def flags(task_type, index, cluster):
        return [f"--job_name={task_type}", f"--task_index={index}",
                "--ps_hosts=" + ",".join(cluster["ps"]),
                "--worker_hosts=" + ",".join(cluster["worker"]), "--steps=20", "--log_every=10"]

    with LocalTFCluster("helpers.workers.tf1_mnist", workers=1, ps=1, task_args=flags,
                        set_tf_config=False) as cluster:
        cluster.start()
        assert cluster.wait(["worker-0"], timeout=90) == {"worker-0": 0}
        log = cluster.logs()["worker-0"]
        assert "Worker : 0, Step: 20, Accuracy (batch):" in log
        assert 0.0 <= float(re.search(r"Test accuracy: ([\d.]+)", log).group(1)) <= 1.0
        assert cluster.exit_codes()["ps-0"] is None  # blocked in server.join()
    assert cluster.exit_codes()["ps-0"] is not None
    assert leftover_processes() == []
