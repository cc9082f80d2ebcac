"""Bad input, each case through a real entry point: a clear error that says what to do.

Every case here once hung, crashed with a traceback from deep inside TensorFlow, MXNet
or JSON (one segfaulted), or was silently accepted. Helpers raise ValueError (or the
error their callers expect) with a message in the words of :mod:`helpers.machine`;
worker programs end with argparse's ``error:`` line and exit code 2 before importing
either framework. Most cases run in this process; a few run the program itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from fresh_python import run_python

from helpers import exposure
from helpers.devices import plan_devices, use_logical_cpus
from helpers.exposure import NetworkExposure
from helpers.measure import benchmark
from helpers.mx_cluster import LocalMXCluster, dmlc_env, shell_commands, train_on_cluster
from helpers.profiles import get_profile, require_fits_in_memory
from helpers.tf_cluster import LocalTFCluster, cluster_spec, gpu_task_env, tf_config
from helpers.workers import mwms_train, mx_pushpull, mx_train, mx_worker, tf1_mnist, tf_server

PUSHPULL = "helpers.workers.mx_pushpull"
TWO_WORKERS = {"worker": ["127.0.0.1:20000", "127.0.0.1:20001"]}
GOOD_TF_CONFIG = json.dumps({"cluster": TWO_WORKERS, "task": {"type": "worker", "index": 0}})
DMLC = {"DMLC_ROLE": "worker", "DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": "9091",
        "DMLC_NUM_SERVER": "1", "DMLC_NUM_WORKER": "2"}
SCHEDULER = {**DMLC, "DMLC_ROLE": "scheduler"}
UNRESOLVABLE = "no-such-host.invalid"  # .invalid never resolves (RFC 2606)


@dataclass
class Case:
    """One bad input: what to call, and the message (a regex) that must come out."""

    call: Callable[[], object]
    message: str
    error: type[BaseException] = ValueError
    env: dict[str, str | None] | None = None  # environment for the call (None: remove)


def _config(**task: object) -> str:
    return json.dumps({"cluster": TWO_WORKERS, "task": task})


def _a_file(tmp: str) -> str:
    path = os.path.join(tmp, "a-file")
    open(path, "w").close()
    return path


def _unwritable(tmp: str) -> str:
    """A folder nobody, not even root, can create: its parent is a file."""
    blocker = os.path.join(tmp, "a-file")
    open(blocker, "w").close()
    return os.path.join(blocker, "checkpoints")


CASES: dict[str, Case] = {
    # -- hangs --------------------------------------------------------------------------
    "tf_cluster_million_workers": Case(
        lambda: LocalTFCluster("json.tool", workers=10**6),
        r"the number of workers must be an int from 0 to 64, not 1000000; a local cluster "
        r"runs every task on this machine"),
    "dmlc_num_worker_abc_worker_program": Case(
        lambda: mx_pushpull.parse_args([]), r"DMLC_NUM_WORKER must be an int >= 1, not 'abc'",
        SystemExit, {**DMLC, "DMLC_NUM_WORKER": "abc"}),
    "dmlc_num_worker_abc_server_program": Case(
        lambda: mx_worker.main([]), r"DMLC_NUM_WORKER must be an int >= 1, not 'abc'",
        SystemExit, {**SCHEDULER, "DMLC_NUM_WORKER": "abc"}),
    "dmlc_num_server_zero_worker_program": Case(
        lambda: mx_pushpull.parse_args([]), r"DMLC_NUM_SERVER must be an int >= 1, not 0",
        SystemExit, {**DMLC, "DMLC_NUM_SERVER": "0"}),
    # -- tracebacks -----------------------------------------------------------------------
    "tf_config_malformed_json_mwms": Case(
        lambda: mwms_train.parse_args([]), r"TF_CONFIG is not valid JSON \(",
        SystemExit, {"TF_CONFIG": "{'cluster': nope"}),
    "tf_config_malformed_json_tf_server": Case(
        lambda: tf_server.parse_args([]), r"TF_CONFIG is not valid JSON",
        SystemExit, {"TF_CONFIG": '{"cluster": '}),
    "tf_config_not_an_object": Case(
        lambda: mwms_train.parse_args([]), r"TF_CONFIG must be a JSON object",
        SystemExit, {"TF_CONFIG": "[1, 2]"}),
    "tf_config_task_missing": Case(
        lambda: mwms_train.parse_args([]), r'TF_CONFIG has no "task"',
        SystemExit, {"TF_CONFIG": json.dumps({"cluster": TWO_WORKERS})}),
    "tf_config_task_index_out_of_range": Case(
        lambda: mwms_train.parse_args([]),
        r"TF_CONFIG's task index must be an int from 0 to 1 .*not 2",
        SystemExit, {"TF_CONFIG": _config(type="worker", index=2)}),
    "tf_config_task_type_not_in_cluster": Case(
        lambda: mwms_train.parse_args([]),
        r"TF_CONFIG's task type 'chief' is not a job of its cluster \(worker\)",
        SystemExit, {"TF_CONFIG": _config(type="chief", index=0)}),
    "tf_config_address_without_port": Case(
        lambda: tf_server.parse_args([]), r"TF_CONFIG's job 'worker' must be a non-empty list",
        SystemExit, {"TF_CONFIG": json.dumps({"cluster": {"worker": ["nohost"]},
                                              "task": {"type": "worker", "index": 0}})}),
    "tf_config_own_host_unresolvable": Case(
        lambda: mwms_train.parse_args([]), rf"the host '{UNRESOLVABLE}', which does not resolve",
        SystemExit, {"TF_CONFIG": json.dumps({"cluster": {"worker": [f"{UNRESOLVABLE}:2222"]},
                                              "task": {"type": "worker", "index": 0}})}),
    "mx_scheduler_without_its_port": Case(
        lambda: mx_worker.main([]), r"DMLC_PS_ROOT_PORT not set",
        SystemExit, {**SCHEDULER, "DMLC_PS_ROOT_PORT": None}),
    "mx_scheduler_port_out_of_range": Case(
        lambda: mx_worker.main([]), r"DMLC_PS_ROOT_PORT must be an int from 1 to 65535",
        SystemExit, {**SCHEDULER, "DMLC_PS_ROOT_PORT": "70000"}),
    "mx_server_role_given_the_worker_role": Case(
        lambda: mx_worker.main([]), r"DMLC_ROLE is 'worker' .* workers run a worker program",
        SystemExit, DMLC),
    "mx_train_global_batch_0": Case(
        lambda: mx_train.parse_args(["--global-batch", "0"]),
        r"--global-batch must be an int >= 1, not 0", SystemExit, DMLC),
    "mx_train_global_batch_below_workers": Case(
        lambda: mx_train.parse_args(["--global-batch", "1"]),
        r"--global-batch 1 is smaller than the number of workers \(2\)", SystemExit, DMLC),
    "mx_train_hidden_0": Case(lambda: mx_train.parse_args(["--hidden", "0"]),
                              r"--hidden must be an int >= 1, not 0", SystemExit, DMLC),
    "mx_pushpull_groups_without_sizes": Case(
        lambda: mx_pushpull.parse_args(["--groups", "1", "2"]),
        r"--groups .* and --sizes-kb go together", SystemExit, DMLC),
    "mx_pushpull_groups_larger_than_the_cluster": Case(
        lambda: mx_pushpull.parse_args(["--groups", "4", "--sizes-kb", "4"]),
        r"--groups \(at most the cluster's 2 workers\)", SystemExit, DMLC),
    "mx_pushpull_sync_groups_smaller_than_the_cluster": Case(
        lambda: mx_pushpull.parse_args(["--groups", "1", "2", "--sizes-kb", "4"]),
        r"under dist_sync a server answers a push only once all 2 workers .* --groups 2 "
        r"\(the whole cluster\) only, or --kvstore dist_async", SystemExit, DMLC),
    "mwms_resolver_slurm_outside_slurm": Case(
        lambda: mwms_train.parse_args(["--resolver", "slurm"]),
        r"--resolver slurm needs SLURM's job variables .* run the program with srun",
        SystemExit, {"SLURM_PROCID": None, "SLURM_STEP_NUM_TASKS": None,
                     "SLURM_STEP_NODELIST": None}),
    "tf_server_resolver_slurm_outside_slurm": Case(
        lambda: tf_server.parse_args(["--resolver", "slurm"]),
        r"--resolver slurm needs SLURM's job variables", SystemExit,
        {"SLURM_PROCID": None, "SLURM_STEP_NUM_TASKS": None, "SLURM_STEP_NODELIST": None}),
    "mwms_checkpoint_dir_unwritable": Case(
        lambda: mwms_train.parse_args(["--checkpoint-dir", _unwritable(CASE_TMP[0])]),
        r"--checkpoint-dir '.*' cannot be created \(Not a directory\); give a folder you can",
        SystemExit, {"TF_CONFIG": GOOD_TF_CONFIG}),
    "mwms_out_dir_unwritable": Case(
        lambda: mwms_train.parse_args(["--out-dir", _unwritable(CASE_TMP[0])]),
        r"--out-dir '.*' cannot be created", SystemExit, {"TF_CONFIG": GOOD_TF_CONFIG}),
    "profile_matpow_n_5000": Case(lambda: get_profile("ci", matpow_n=5000),
                                  r"matpow_n must be an int from 1 to 200, not 5000; notebook "
                                  r"04's matpow recurses once per product"),
    "matrices_too_big_for_memory": Case(
        lambda: require_fits_in_memory(50_000, available=2**30),
        r"8 matrices of 50000 x 50000 take 74.5 GiB but this machine has 1.0 GiB free; use a "
        r"size of at most 5792"),
    "profile_matrices_too_big_for_memory": Case(
        lambda: get_profile("ci", matpow_size=100_000), r"GiB free; use a size of at most"),
    "tf_cluster_unresolvable_host": Case(
        lambda: LocalTFCluster("json.tool", workers=1, host=UNRESOLVABLE),
        rf"host '{UNRESOLVABLE}' does not resolve to an address; .*leave host at its default"),
    "mx_cluster_unresolvable_host": Case(
        lambda: LocalMXCluster(PUSHPULL, host=UNRESOLVABLE), r"does not resolve to an address"),
    "cluster_spec_host_of_another_machine": Case(
        lambda: cluster_spec(2, host="192.0.2.254"),
        r"host '192.0.2.254' is not an address of this machine"),
    "tf_ready_timeout_a_string": Case(
        lambda: LocalTFCluster("json.tool", workers=1, ready_timeout="10"),
        r"ready_timeout \(seconds\) must be a number > 0, not '10'"),
    "mx_ready_timeout_a_string": Case(
        lambda: LocalMXCluster(PUSHPULL, ready_timeout="10"),
        r"ready_timeout \(seconds\) must be a number > 0, not '10'"),
    # -- silently accepted -------------------------------------------------------------------
    "tf_cluster_5000_workers": Case(lambda: LocalTFCluster("json.tool", workers=5000),
                                    r"the number of workers must be an int from 0 to 64"),
    "tf_cluster_3000_ps": Case(lambda: cluster_spec(1, ps=3000),
                               r"the number of parameter servers must be an int from 0 to 64"),
    "mx_cluster_5000_workers": Case(lambda: LocalMXCluster(PUSHPULL, workers=5000),
                                    r"the number of workers must be an int from 1 to 64"),
    "mx_cluster_2000_servers": Case(lambda: LocalMXCluster(PUSHPULL, servers=2000),
                                    r"the number of servers must be an int from 1 to 64"),
    "profile_matpow_size_negative": Case(lambda: get_profile("ci", matpow_size=-5),
                                         r"the profile's matpow_size must be an int >= 1, not -5"),
    "profile_cluster_workers_0": Case(lambda: get_profile("ci", cluster_workers=0),
                                      r"the profile's cluster_workers must be an int >= 1, not 0"),
    "profile_cluster_workers_5000": Case(lambda: get_profile("ci", cluster_workers=5000),
                                         r"cluster_workers must be an int from 1 to 64"),
    "profile_repeat_0": Case(lambda: get_profile("ci", repeat=0),
                             r"the profile's repeat must be an int >= 1, not 0"),
    "profile_copy_size_negative": Case(lambda: get_profile("ci", copy_sizes_mb=(1.0, -2.0)),
                                       r"each of the profile's copy_sizes_mb must be a number > 0"),
    "profile_scaling_workers_from_2": Case(lambda: get_profile("ci", scaling_workers=(2, 4)),
                                           r"scaling_workers must rise from 1, 2 .*not \(2, 4\)"),
    "profile_scaling_workers_unsorted": Case(lambda: get_profile("ci", scaling_workers=(1, 4, 2)),
                                             r"scaling_workers must rise from 1"),
    "profile_scaling_workers_no_pair": Case(lambda: get_profile("ci", scaling_workers=(1, 3)),
                                            r"scaling_workers must rise from 1, 2 .*not \(1, 3\)"),
    "profile_scaling_workers_one": Case(lambda: get_profile("ci", scaling_workers=(1,)),
                                        r"scaling_workers must rise from 1, 2"),
    "profile_matmul_sizes_not_a_tuple": Case(lambda: get_profile("ci", matmul_sizes=512),
                                             r"matmul_sizes must be a non-empty tuple"),
    "tf_server_no_task": Case(lambda: tf_server.parse_args([]), r'TF_CONFIG has no "task"',
                              SystemExit, {"TF_CONFIG": json.dumps({"cluster": TWO_WORKERS})}),
    "tf_server_unknown_job": Case(
        lambda: tf_server.parse_args([]), r"TF_CONFIG's cluster has an unknown job 'boss'",
        SystemExit, {"TF_CONFIG": json.dumps({"cluster": {"boss": ["127.0.0.1:1"]},
                                              "task": {"type": "boss", "index": 0}})}),
    "tf_server_threads_negative": Case(
        lambda: tf_server.parse_args(["--threads", "-4"]),
        r"--threads must be an int >= 0, not -4", SystemExit, {"TF_CONFIG": GOOD_TF_CONFIG}),
    "mwms_learning_rate_nan": Case(
        lambda: mwms_train.parse_args(["--learning-rate", "nan"]),
        r"--learning-rate must be a number > 0, not nan", SystemExit,
        {"TF_CONFIG": GOOD_TF_CONFIG}),
    "mx_train_learning_rate_nan": Case(lambda: mx_train.parse_args(["--lr", "nan"]),
                                       r"--lr must be a number > 0, not nan", SystemExit, DMLC),
    "tf1_learning_rate_nan": Case(
        lambda: tf1_mnist.parse_flags(["tf1", "--job_name=worker", "--ps_hosts=a:1",
                                       "--worker_hosts=b:1", "--learning_rate=nan"]),
        r"--learning_rate must be a number > 0, not nan"),
    "mwms_timeout_negative": Case(
        lambda: mwms_train.parse_args(["--timeout", "-1"]),
        r"--timeout must be a number > 0, not -1", SystemExit, {"TF_CONFIG": GOOD_TF_CONFIG}),
    "mwms_connect_timeout_0": Case(
        lambda: mwms_train.parse_args(["--connect-timeout", "0"]),
        r"--connect-timeout must be a number > 0", SystemExit, {"TF_CONFIG": GOOD_TF_CONFIG}),
    "tf_cluster_wait_timeout_negative": Case(
        lambda: LocalTFCluster("json.tool", workers=1).wait(timeout=-1),
        r"timeout \(seconds\) must be a number > 0, not -1"),
    "mx_cluster_wait_timeout_negative": Case(
        lambda: LocalMXCluster(PUSHPULL).wait(timeout=-1),
        r"timeout \(seconds\) must be a number > 0, not -1"),
    "train_on_cluster_timeout_nan": Case(
        lambda: train_on_cluster(1, [], timeout=float("nan")),
        r"timeout \(seconds\) must be a number > 0, not nan"),
    "cluster_wait_for_log_timeout_negative": Case(
        lambda: LocalTFCluster("json.tool", workers=1).wait_for_log("worker-0", "x", -5),
        r"timeout \(seconds\) must be a number > 0, not -5"),
    "tf_ready_timeout_negative": Case(
        lambda: LocalTFCluster("json.tool", workers=1, ready_timeout=-1),
        r"ready_timeout \(seconds\) must be a number > 0"),
    "mx_pushpull_rounds_negative": Case(lambda: mx_pushpull.parse_args(["--rounds", "-1"]),
                                        r"--rounds must be an int >= 1, not -1", SystemExit, DMLC),
    "mx_train_steps_negative": Case(
        lambda: mx_train.parse_args(["--steps", "-3", "--warmup-steps", "0"]),
        r"--steps must be an int >= 1, not -3", SystemExit, DMLC),
    "mx_train_warmup_negative": Case(lambda: mx_train.parse_args(["--warmup-steps", "-1"]),
                                     r"--warmup-steps must be an int >= 0", SystemExit, DMLC),
    "mx_pushpull_sizes_kb_0": Case(lambda: mx_pushpull.parse_args(["--sizes-kb", "4", "0"]),
                                   r"--sizes-kb must be an int >= 1, not 0", SystemExit, DMLC),
    "logical_cpus_100000": Case(lambda: use_logical_cpus(100_000),
                                r"the number of logical CPUs must be an int from 1 to 64, not "
                                r"100000; logical devices share the same hardware"),
    "plan_devices_100000": Case(
        lambda: plan_devices(100_000),
        r"the number of devices a lesson needs must be an int from 1 to 64"),
    "mx_cluster_env_sets_dmlc": Case(
        lambda: LocalMXCluster(PUSHPULL, env={"DMLC_NUM_WORKER": "abc"}),
        r"env sets DMLC_NUM_WORKER, but the cluster sets the DMLC_\* variables itself"),
    "mx_cluster_verbose_5": Case(lambda: LocalMXCluster(PUSHPULL, verbose=5),
                                 r"verbose \(PS_VERBOSE\) must be one of 0, 1, 2, not 5"),
    "mx_cluster_threads_negative": Case(lambda: LocalMXCluster(PUSHPULL, threads=-4),
                                        r"the number of threads must be an int >= 1, not -4"),
    "mwms_batch_per_replica_0": Case(
        lambda: mwms_train.parse_args(["--batch-per-replica", "0"]),
        r"--batch-per-replica must be an int >= 1, not 0", SystemExit,
        {"TF_CONFIG": GOOD_TF_CONFIG}),
    # -- inputs of the cluster lessons (06-12) ------------------------------------------------
    "cluster_spec_ipv6_loopback": Case(lambda: cluster_spec(1, host="::1"),
                                       r"host '::1' is an IPv6 address; .* use 127.0.0.1"),
    "tf_config_port_99999": Case(
        lambda: tf_config({"worker": ["127.0.0.1:99999"]}, "worker", 0),
        r"worker-0's address '127.0.0.1:99999' needs a port from 1 to 65535"),
    "tf_config_same_address_twice": Case(
        lambda: tf_config({"worker": ["127.0.0.1:2222"], "ps": ["127.0.0.1:2222"]}, "ps", 0),
        r"ps-0 and worker-0 both have the address 127.0.0.1:2222"),
    "worker_tf_config_same_address_twice": Case(
        lambda: mwms_train.parse_args([]), r"TF_CONFIG lists 127.0.0.1:20000 for two tasks",
        SystemExit, {"TF_CONFIG": json.dumps({"cluster": {"worker": ["127.0.0.1:20000"] * 2},
                                              "task": {"type": "worker", "index": 0}})}),
    "tf_cluster_set_tf_config_no": Case(
        lambda: LocalTFCluster("json.tool", workers=1, set_tf_config="no"),
        r"set_tf_config must be one of False, True, not 'no'"),
    "tf_cluster_env_value_an_int": Case(
        lambda: LocalTFCluster("json.tool", workers=1, env={"A": 1}),
        r"env gives worker-0 the variable 'A' = 1 \(int\); environment variables are "
        r"strings: write 'A': '1'"),
    "tf_cluster_task_env_value_an_int": Case(
        lambda: LocalTFCluster("json.tool", workers=1, ps=1,
                               task_env=lambda job, i: {"A": 1} if job == "ps" else {}),
        r"task_env\('ps', 0\) gives ps-0 the variable 'A' = 1 \(int\); environment "
        r"variables are strings: write 'A': '1'"),
    "tf_cluster_task_env_returns_none": Case(
        lambda: LocalTFCluster("json.tool", workers=1, task_env=lambda job, i: None),
        r"task_env\('worker', 0\) returned None; a task_env returns a dict of strings"),
    "gpu_task_env_minus_one": Case(
        lambda: gpu_task_env(-1),
        r"gpus \(the GPUs to hand out; physical_gpu_count\(\) counts them\) must be an int "
        r">= 0, not -1"),
    "tf_cluster_this_process_not_a_task": Case(
        lambda: LocalTFCluster("json.tool", workers=1, chief=1, this_process="chief"),
        r"this_process must be one of 'chief-0', 'worker-0', not 'chief'"),
    "tf_cluster_log_dir_is_a_file": Case(
        lambda: LocalTFCluster("json.tool", workers=1, log_dir=_a_file(CASE_TMP[0])),
        r"log_dir '.*' cannot be a folder \(File exists\); give a folder you can write to"),
    "show_logs_pattern_not_a_regex": Case(
        lambda: LocalTFCluster("json.tool", workers=1).show_logs(pattern="["),
        r"pattern '\[' is not a regular expression .*re.escape"),
    "tf1_ps_hosts_port_99999": Case(
        lambda: tf1_mnist.parse_flags(["tf1", "--job_name=worker", "--worker_hosts=b:1",
                                       "--ps_hosts=127.0.0.1:99999"]),
        r"'127.0.0.1:99999' is not host:port with a port from 1 to 65535"),
    "shell_commands_hosts_as_strings": Case(
        lambda: shell_commands(PUSHPULL, "10.0.0.1", 9091, "server1", "worker1"),
        r"server_hosts is a non-empty list of host names, not 'server1': write \['server1'\]"),
    "dmlc_env_empty_host": Case(lambda: dmlc_env("worker", "", 9091, 1, 1),
                                r"scheduler_host must be a host name or address, not ''"),
    "mx_node_host_of_another_machine": Case(
        lambda: mx_worker.main([]), r"DMLC_NODE_HOST='192.0.2.254' is not an address of this "
        r"machine", SystemExit, {**SCHEDULER, "DMLC_NODE_HOST": "192.0.2.254"}),
    "benchmark_flops_nan": Case(lambda: benchmark(lambda: 1, sync="none", flops=float("nan")),
                                r"flops must be a number > 0, not nan"),
    "mx_pushpull_local_kvstore": Case(lambda: mx_pushpull.parse_args(["--kvstore", "local"]),
                                      r"argument --kvstore: invalid choice: 'local'", SystemExit,
                                      DMLC),
}
CASE_TMP: list[str] = []


@pytest.fixture
def case_tmp(tmp_path):
    CASE_TMP[:] = [str(tmp_path)]
    yield tmp_path
    CASE_TMP.clear()


@pytest.mark.parametrize("name", [pytest.param(n, id=f"bad_input-{n}") for n in CASES])
def test_bad_input(name, case_tmp, monkeypatch, capsys):
    case = CASES[name]
    for variable, value in (case.env or {}).items():
        if value is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, value)
    if "TF_CONFIG" not in (case.env or {}):
        monkeypatch.setenv("TF_CONFIG", GOOD_TF_CONFIG)
    with pytest.raises(case.error) as info:
        case.call()
    if case.error is SystemExit:  # a worker program: argparse's one-line error, exit code 2
        assert info.value.code == 2
        message = capsys.readouterr().err.strip().splitlines()[-1]
        assert ": error: " in message and "Traceback" not in message
    else:
        message = str(info.value)
    assert re.search(case.message, message), message


# -- the same, through the programs themselves ------------------------------------------------

PROGRAM_CASES = {
    "mx_scheduler_without_its_port_program": (
        "helpers.workers.mx_worker", {**SCHEDULER, "DMLC_PS_ROOT_PORT": ""},
        "DMLC_PS_ROOT_PORT not set"),
    "dmlc_num_worker_abc_pushpull_program": (
        "helpers.workers.mx_pushpull", {**DMLC, "DMLC_NUM_WORKER": "abc"},
        "DMLC_NUM_WORKER must be an int >= 1, not 'abc'"),
    "tf_server_without_task_program": (
        "helpers.workers.tf_server", {"TF_CONFIG": json.dumps({"cluster": TWO_WORKERS})},
        'TF_CONFIG has no "task"'),
}


@pytest.mark.parametrize("name", [pytest.param(n, id=f"bad_input-{n}") for n in PROGRAM_CASES])
def test_bad_input_ends_the_program_at_once_with_exit_code_2(name):
    module, env, message = PROGRAM_CASES[name]
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("DMLC_") and k != "TF_CONFIG"}
    result = subprocess.run([sys.executable, "-m", module], env={**clean, **env},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def missing_gpu_strategies():
    """Strategies over /gpu:7 on a machine without it, tried in a fresh process."""
    result = run_python("""
        from helpers import import_tensorflow
        from helpers.devices import mirrored_over, replica_devices
        tf = import_tensorflow()
        if tf.config.list_physical_devices("GPU"):
            print("SKIP")
            raise SystemExit
        for name, attempt in [("mirrored", lambda: mirrored_over(["/gpu:7"], 1)),
                              ("one_device", lambda: replica_devices(
                                  tf.distribute.OneDeviceStrategy("/gpu:7")))]:
            try:
                attempt()
                print(name, "ACCEPTED")
            except ValueError as error:
                print(name, "ValueError:", error)
    """)
    if "SKIP" in result.stdout:
        pytest.skip("this machine has a GPU")
    return dict(line.split(" ", 1) for line in result.stdout.splitlines() if line)


@pytest.mark.parametrize("kind, message", [
    pytest.param("mirrored", "a MirroredStrategy over /GPU:7, which this process does not have",
                 id="bad_input-mirrored_strategy_on_missing_gpu"),
    pytest.param("one_device", "this OneDeviceStrategy has replicas on /GPU:7, which this "
                 "process does not have", id="bad_input-replica_reported_on_missing_gpu"),
])
def test_bad_input_a_strategy_on_a_missing_device(missing_gpu_strategies, kind, message):
    assert missing_gpu_strategies[kind].startswith(f"ValueError: {message}")


def test_bad_input_nccl_on_a_worker_without_gpus():
    no_gpu = SimpleNamespace(config=SimpleNamespace(list_physical_devices=lambda kind: []))
    with pytest.raises(SystemExit) as info:
        mwms_train.make_strategy(no_gpu, None, 10.0, "nccl")
    assert "--collective nccl needs a GPU in every worker and this one has none; use " \
           "--collective ring" in str(info.value.code)


PUBLIC = NetworkExposure(public=("203.0.113.7 (eth0)",), private=())
PRIVATE = NetworkExposure(public=(), private=("10.0.0.5 (eth0)",))


def test_bad_input_mx_cluster_on_every_address_of_a_public_machine(monkeypatch):
    monkeypatch.setattr(exposure, "network_exposure", lambda: PUBLIC)
    monkeypatch.delenv(exposure.ENV_VAR, raising=False)
    cluster = LocalMXCluster(PUSHPULL, host="0.0.0.0")
    with pytest.raises(exposure.ExposureError, match=r"LocalMXCluster \(host 0.0.0.0\) was not "
                       r"started: .* MXNet's ps-lite processes listen on 0.0.0.0 .* unpickle"):
        cluster.launch()
    assert not cluster.group.processes  # refused before anything started


def test_bad_input_mx_cluster_on_every_address_of_a_private_machine_is_warned(capsys):
    exposure.check_exposure(False, "this LocalMXCluster (host 0.0.0.0)", PRIVATE,
                            servers="MXNet's ps-lite processes listen on 0.0.0.0 with no "
                            "authentication and unpickle what they receive")
    out = capsys.readouterr().out
    assert "Warning: this LocalMXCluster (host 0.0.0.0): MXNet's ps-lite processes listen on " \
           "0.0.0.0" in out and "10.0.0.5 (eth0)" in out and "127.0.0.1" in out, out


def test_private_banner_names_the_cloud_case():
    banner = " ".join(PRIVATE.banner().split())  # as read, whatever the line breaks
    assert "1:1 NAT" in banner and "checkip.amazonaws.com" in banner, banner


def test_bad_input_dmlc_env_names_the_three_roles():
    with pytest.raises(ValueError, match=r"role \(DMLC_ROLE\) must be one of 'scheduler', "
                                         r"'server', 'worker', not 'boss'"):
        dmlc_env("boss", "127.0.0.1", 9091, 1, 1)
