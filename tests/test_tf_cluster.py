"""Tests of helpers.tf_cluster: layout, TF_CONFIG, and the local cluster's life cycle.

Most tests run a tiny stand-in worker (no TensorFlow, starts in milliseconds) that reads
TF_CONFIG and listens on its port like a TensorFlow server; its FAKE_MODE variable makes
it crash, hang, or exit on purpose (FAKE_BIND "::" listens on every address, as TensorFlow
does). One test starts the real ``tf_server`` program.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from test_processes import NEEDS_NETNS, machine_addresses

from helpers.processes import (
    describe_exit,
    isolation_problem,
    leftover_processes,
    port_accepts,
    port_bindable,
    unshare_command,
)
from helpers.tf_cluster import (
    LocalTFCluster,
    cluster_spec,
    gpu_task_env,
    tf_config,
)

FAKE_WORKER = textwrap.dedent("""
    import json, os, socket, sys, time
    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    host, port = config["cluster"][task["type"]][task["index"]].rsplit(":", 1)
    mode = os.environ.get("FAKE_MODE", "serve")
    print("task", task["type"], task["index"], "args", sys.argv[1:],
          "color", os.environ.get("COLOR", "-"), flush=True)
    if mode == "crash" and task["index"] == int(os.environ.get("FAKE_WHO", "0")):
        print("boom: cannot start", flush=True)
        sys.exit(3)
    if mode == "hang":
        time.sleep(60)
    if mode == "late" and task["index"] == int(os.environ.get("FAKE_WHO", "0")):
        time.sleep(float(os.environ["FAKE_DELAY"]))  # like TensorFlow's import, before listening
    host = os.environ.get("FAKE_BIND", host)
    server = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, int(port)))
    server.listen()
    print("listening on", port, flush=True)
    if mode == "exit":
        code = int(os.environ.get("FAKE_CODE", "0")) if task["index"] == 0 else 0
        time.sleep(0.3)
        print("done", flush=True)
        sys.exit(code)
    while True:
        connection, _ = server.accept()
        connection.sendall(f"{task['type']}-{task['index']}".encode())  # who answered
        connection.close()
""")


SQUATTER = textwrap.dedent("""
    import socket, time
    s = socket.socket()
    time.sleep(0.3)  # after start() has checked the port
    s.bind(("127.0.0.1", {port}))
    s.listen()
    time.sleep(60)
""")


@pytest.fixture
def fake_module(tmp_path, monkeypatch):
    """A worker module `fake_tf_worker` importable here and in the children."""
    (tmp_path / "fake_tf_worker.py").write_text(FAKE_WORKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    return "fake_tf_worker", {"PYTHONPATH": path}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by anyone) counts as ended
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _pids(cluster: LocalTFCluster) -> list[int]:
    """The tasks' pids and that of their network namespace's holder, if it has one."""
    return [p.pid for group in (cluster.group, cluster.netns) for p in group.processes.values()]


# -- cluster_spec and tf_config ----------------------------------------------------------

def test_cluster_spec_lays_out_jobs_with_distinct_free_ports():
    spec = cluster_spec(workers=2, ps=1, chief=1)
    assert list(spec) == ["chief", "worker", "ps"]
    assert [len(spec[j]) for j in spec] == [1, 2, 1]
    addresses = [a for job in spec.values() for a in job]
    assert all(a.startswith("127.0.0.1:") for a in addresses)
    ports = [int(a.split(":")[1]) for a in addresses]
    assert len(set(ports)) == 4 and all(port_bindable(p) for p in ports)


def test_cluster_spec_leaves_out_empty_jobs():
    assert list(cluster_spec(workers=3)) == ["worker"]
    assert list(cluster_spec(workers=0, chief=1)) == ["chief"]


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": 0}, "at least one worker"),
    ({"workers": -1}, "workers"),
    ({"workers": 2, "ps": -1}, "parameter servers"),
    ({"workers": 2, "chief": 2}, "chiefs must be an int from 0 to 1"),
    ({"workers": True}, "workers"),
    ({"workers": 1.5}, "workers"),
    ({"workers": 1, "host": ""}, "host"),
])
def test_cluster_spec_rejects_bad_counts(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cluster_spec(**kwargs)


def test_tf_config_names_cluster_and_task():
    spec = cluster_spec(workers=2, ps=1)
    config = json.loads(tf_config(spec, "worker", 1))
    assert config == {"cluster": spec, "task": {"type": "worker", "index": 1}}


@pytest.mark.parametrize("task_type, index", [
    ("evaluator", 0), ("chief", 0), ("worker", 2), ("worker", -1), ("worker", "0"),
])
def test_tf_config_rejects_tasks_the_cluster_does_not_have(task_type, index):
    spec = cluster_spec(workers=2, ps=1)
    with pytest.raises(ValueError, match=rf"no task {task_type}-{index}; its jobs are "
                                         r"worker \(2 tasks\), ps \(1 tasks\)"):
        tf_config(spec, task_type, index)


def test_describe_exit():
    assert describe_exit(None) == "running"
    assert describe_exit(0) == "exit 0 (ok)"
    assert describe_exit(75) == "exit 75 (failed)"
    assert describe_exit(-9) == "killed by SIGKILL"


def test_gpu_task_env_spreads_workers_over_gpus():
    assert gpu_task_env(0)("worker", 3) == {}
    two = gpu_task_env(2)
    assert [two("worker", i)["CUDA_VISIBLE_DEVICES"] for i in range(3)] == ["0", "1", "0"]
    assert two("ps", 0) == {"CUDA_VISIBLE_DEVICES": ""}
    with_chief = gpu_task_env(4, chief=1)
    assert with_chief("chief", 0)["CUDA_VISIBLE_DEVICES"] == "0"
    assert with_chief("worker", 0)["CUDA_VISIBLE_DEVICES"] == "1"


# -- LocalTFCluster: bad input ------------------------------------------------------------

def test_missing_worker_program_is_a_clear_error():
    with pytest.raises(ValueError, match="no Python module 'helpers.workers.nope'"):
        LocalTFCluster("helpers.workers.nope", workers=2)


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": 0}, "at least one worker"),
    ({"workers": 2, "ps": -1}, "parameter servers"),
    ({"workers": 2, "ready_timeout": 0}, "ready_timeout"),
    ({"workers": 1, "host": "192.0.2.254"}, "not an address of this machine"),
])
def test_bad_cluster_arguments(fake_module, kwargs, message):
    module, _ = fake_module
    with pytest.raises(ValueError, match=message):
        LocalTFCluster(module, **kwargs)


def test_unknown_task_names_are_rejected(fake_module):
    module, env = fake_module
    with LocalTFCluster(module, workers=2, env=env) as cluster:
        for call in (lambda: cluster.start(["ps-0"]), lambda: cluster.kill("worker-2"),
                     lambda: cluster.restart("chief-0"), lambda: cluster.start("worker-0"),
                     lambda: cluster.wait(["evaluator-0"]), lambda: cluster.wait(["worker-0"])):
            with pytest.raises(ValueError):
                call()
        assert cluster.group.processes == {}


def test_port_already_taken_is_reported_and_nothing_starts(fake_module):
    module, env = fake_module  # only tasks outside a namespace share ports with strangers
    with LocalTFCluster(module, workers=2, env=env, isolate=False) as cluster:
        holder = socket.socket()
        holder.bind(("127.0.0.1", cluster.port("worker-1")))
        holder.listen()
        try:
            with pytest.raises(ValueError, match=r"already in use: worker-1 127\.0\.0\.1:\d+"):
                cluster.start()
        finally:
            holder.close()
        assert cluster.group.processes == {}


def test_a_port_squatted_while_the_task_starts_fails_naming_the_task(fake_module):
    # A stranger takes worker-1's port after start() checked it and before worker-1
    # listens (TensorFlow's import takes seconds): start() must not call that "ready".
    module, env = fake_module
    cluster = LocalTFCluster(module, workers=2, env={**env, "FAKE_MODE": "late",
                                                      "FAKE_WHO": "1", "FAKE_DELAY": "2"},
                             isolate=False)
    port = cluster.port("worker-1")
    squatter = subprocess.Popen([sys.executable, "-c", SQUATTER.format(port=port)],
                                stdout=subprocess.PIPE, text=True)
    try:
        with cluster, pytest.raises(RuntimeError) as info:
            cluster.start()
        message = str(info.value)
        assert message.startswith("worker-1 (") and "exit 1 (failed) before its server" in message
        assert f"its port {port} is held by another process (held by pid {squatter.pid} " in message
        assert "Address already in use" in message  # the task's own log says why it died
        assert cluster.alive() == []
    finally:
        squatter.kill()
        squatter.wait()


def test_a_stranger_on_the_port_of_a_task_that_never_listens_is_named_at_the_timeout(
        fake_module):
    module, env = fake_module
    cluster = LocalTFCluster(module, workers=1, env={**env, "FAKE_MODE": "hang"},
                             ready_timeout=2.0, isolate=False)
    squatter = subprocess.Popen([sys.executable, "-c",
                                 SQUATTER.format(port=cluster.port("worker-0"))])
    try:
        with cluster, pytest.raises(TimeoutError, match=(
                r"worker-0 not listening after 2 s \(ready_timeout\); its port \d+ is held by "
                rf"another process \(held by pid {squatter.pid} ")):
            cluster.start()
        assert cluster.alive() == []
    finally:
        squatter.kill()
        squatter.wait()


def test_two_clusters_of_one_process_on_the_same_ports_are_refused(fake_module):
    module, env = fake_module
    first = LocalTFCluster(module, workers=1, env=env)
    second = LocalTFCluster(module, workers=1, env=env)
    second.cluster = dict(first.cluster)  # as if the port picker had handed out the same port
    with first, second:
        first.start()
        with pytest.raises(ValueError, match=r"already used by another cluster of this process "
                                             r"\(tf-cluster, still running: worker-0\)"):
            second.start()
        assert second.group.processes == {}


def test_worker_crashing_at_start_stops_the_cluster(fake_module):
    module, env = fake_module
    cluster = LocalTFCluster(module, workers=2, ps=1,
                             env={**env, "FAKE_MODE": "crash", "FAKE_WHO": "1"})
    with cluster, pytest.raises(RuntimeError) as info:
        cluster.start()
    message = str(info.value)
    assert "exit 3 (failed)" in message and "boom: cannot start" in message
    assert message.startswith("worker-1") or "worker-1" in message.splitlines()[0]
    assert not any(_alive(pid) for pid in _pids(cluster))


def test_worker_that_never_listens_times_out_and_is_ended(fake_module):
    module, env = fake_module
    cluster = LocalTFCluster(module, workers=1, env={**env, "FAKE_MODE": "hang"},
                             ready_timeout=1.0)
    began = time.monotonic()
    with cluster, pytest.raises(TimeoutError, match="worker-0 not listening after 1 s"):
        cluster.start()
    assert time.monotonic() - began < 10
    assert not any(_alive(pid) for pid in _pids(cluster))


def test_starting_a_running_task_again_is_refused(fake_module):
    module, env = fake_module
    with LocalTFCluster(module, workers=1, env=env) as cluster:
        cluster.start()
        with pytest.raises(ValueError, match="already running; use restart"):
            cluster.start()


# -- LocalTFCluster: life cycle -----------------------------------------------------------

def test_start_gives_each_task_its_tf_config_args_and_env(fake_module):
    module, env = fake_module
    cluster = LocalTFCluster(
        module, workers=2, ps=1, env=env,
        task_args=lambda job, i, spec: [f"--job_name={job}", f"--task_index={i}",
                                        f"--ps_hosts={','.join(spec['ps'])}"],
        task_env=lambda job, i: {"COLOR": f"{job}{i}"},
    )
    with cluster:
        assert cluster.task_names() == ["worker-0", "worker-1", "ps-0"]
        seconds = cluster.start()
        assert 0 < seconds < 60
        assert set(cluster.ready_seconds) == set(cluster.task_names())
        cluster.wait_for_log("ps-0", "listening on")
        logs = cluster.logs()
        assert "task worker 1 args ['--job_name=worker', '--task_index=1'" in logs["worker-1"]
        assert f"--ps_hosts={cluster.address('ps-0')}" in logs["worker-0"]
        assert "color ps0" in logs["ps-0"]
        assert cluster.exit_codes() == {t: None for t in cluster.task_names()}
        assert cluster.table().column("state") == ["running"] * 3
        # where each task's own process listens, read from the kernel
        assert cluster.table().column("listening on") == [cluster.address(t)
                                                          for t in cluster.task_names()]
        pids = _pids(cluster)
        assert all(_alive(p) for p in pids)
    assert not any(_alive(p) for p in pids)
    assert all(code is not None and code < 0 for code in cluster.exit_codes().values())


def test_wait_returns_exit_codes(fake_module):
    module, env = fake_module
    with LocalTFCluster(module, workers=2, env={**env, "FAKE_MODE": "exit"}) as cluster:
        cluster.start()
        assert cluster.wait(timeout=30) == {"worker-0": 0, "worker-1": 0}
        assert cluster.table().column("state") == ["exit 0 (ok)"] * 2


def test_wait_reports_a_failed_task(fake_module):
    module, env = fake_module
    env = {**env, "FAKE_MODE": "exit", "FAKE_CODE": "75"}
    with LocalTFCluster(module, workers=2, env=env) as cluster:
        cluster.start()
        with pytest.raises(RuntimeError, match="worker-0 failed with exit code 75"):
            cluster.wait(timeout=30)


def test_wait_times_out_naming_running_tasks(fake_module):
    module, env = fake_module
    with LocalTFCluster(module, workers=1, env=env) as cluster:
        cluster.start()
        with pytest.raises(TimeoutError, match="worker-0"):
            cluster.wait(timeout=0.3)
        with pytest.raises(TimeoutError, match="printing 'never printed'"):
            cluster.wait_for_log("worker-0", "never printed", timeout=0.3)


def test_kill_and_restart_on_the_same_port_keeps_the_old_log(fake_module, capsys):
    module, env = fake_module
    with LocalTFCluster(module, workers=2, env=env) as cluster:
        cluster.start()
        port = cluster.port("worker-1")
        old_pid = cluster.group.processes["worker-1"].pid
        cluster.kill("worker-1")
        assert cluster.exit_codes()["worker-1"] == -9
        assert "worker-1" in cluster.killed_at
        with pytest.raises(ValueError, match="not running"):
            cluster.kill("worker-1")
        assert cluster.restart("worker-1") > 0
        assert cluster.port("worker-1") == port
        assert cluster.group.processes["worker-1"].pid != old_pid
        cluster.wait_for_log("worker-1", "listening on")
        log = cluster.logs()["worker-1"]
        assert log.count("listening on") == 2 and "--- restarted ---" in log
        cluster.show_logs(["worker-1"], last=1)
        shown = capsys.readouterr().out
        assert shown.splitlines()[0] == "===== worker-1 [running] ====="
        assert shown.splitlines()[1].startswith("listening on")


def test_restarting_several_tasks_at_once_kills_the_running_and_keeps_every_log(fake_module):
    module, env = fake_module
    with LocalTFCluster(module, workers=3, env=env) as cluster:
        cluster.start()
        cluster.kill("worker-1")
        old_pids = {t: cluster.group.processes[t].pid for t in ("worker-1", "worker-2")}
        assert cluster.restart(["worker-1", "worker-2"]) > 0  # worker-2 was still running
        for task in ("worker-1", "worker-2"):
            assert cluster.group.processes[task].pid != old_pids[task]
            assert cluster.exit_codes()[task] is None
            cluster.wait_for_log(task, "listening on")
            assert cluster.logs()[task].count("listening on") == 2
        assert cluster.group.processes["worker-0"].alive  # the others are left alone
        with pytest.raises(ValueError, match="no task 'worker-7'"):
            cluster.restart(["worker-0", "worker-7"])


def test_show_logs_filters(fake_module, capsys):
    module, env = fake_module
    with LocalTFCluster(module, workers=1, env=env) as cluster:
        cluster.start()
        cluster.wait_for_log("worker-0", "listening")
        capsys.readouterr()  # the network banner, printed once per process
        cluster.show_logs(pattern=r"^listening")
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 2 and lines[1].startswith("listening on")


def test_shown_framework_lines_lose_their_time_and_thread():  # stored pages stay the same
    from helpers.mx_cluster import LocalMXCluster
    tf_line = "I0000 00:00:1795812059.745719   11776 master.cc:243] Scanning workers for devices"
    mx_line = "[20:41:16] ../3rdparty/ps-lite/src/van.cc:97: the scheduler is connected"
    assert LocalTFCluster.LOG_STAMP.sub("", tf_line) == tf_line[38:]
    assert LocalMXCluster.LOG_STAMP.sub("", mx_line) == mx_line[11:]


def test_interrupt_inside_the_block_ends_every_process(fake_module):
    module, env = fake_module
    cluster = LocalTFCluster(module, workers=2, ps=1, env=env)
    with pytest.raises(KeyboardInterrupt), cluster:
        cluster.start()
        pids = _pids(cluster)
        raise KeyboardInterrupt
    assert not any(_alive(p) for p in pids)


def test_leftover_processes_lists_running_children(fake_module):
    module, env = fake_module
    with LocalTFCluster(module, workers=1, env=env) as cluster:
        cluster.start()
        pid = cluster.group.processes["worker-0"].pid
        assert any(line.startswith(f"{pid} ") and module in line for line in leftover_processes())
    assert not any(line.startswith(f"{pid} ") for line in leftover_processes())


def test_stop_is_idempotent(fake_module):
    module, env = fake_module
    cluster = LocalTFCluster(module, workers=1, env=env)
    cluster.start()
    assert cluster.stop() >= 0
    assert cluster.stop() >= 0
    assert not any(_alive(p) for p in _pids(cluster))


# -- a network namespace of their own ----------------------------------------------------

def _reached(port: int) -> list[str]:
    """This machine's addresses (127.0.0.1 included) where something accepts on ``port``."""
    return [address for address in machine_addresses() if port_accepts(port, address)]


@NEEDS_NETNS
def test_by_default_no_one_outside_reaches_the_tasks_and_they_reach_each_other(fake_module):
    module, env = fake_module
    env = {**env, "FAKE_BIND": "::"}  # every address, as TensorFlow listens
    with LocalTFCluster(module, workers=2, env=env) as cluster:
        cluster.start()
        port = cluster.port("worker-1")
        reached = _reached(port)
        connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
        inside = subprocess.run(["nsenter", f"--target={cluster.group.processes['worker-0'].pid}",
                                 *(["--user", "--preserve-credentials"] if os.geteuid() else []),
                                 "--net", sys.executable, "-c", connect], timeout=30)
        assert (cluster.isolated, cluster.why_not_isolated) == (True, "")
        assert cluster.table().column("listening on")[1] == (
            f"[::]:{port} (every address of its own network namespace)")
        assert cluster.command_of("worker-1")[0] == sys.executable  # what it runs, as shown
        pids = _pids(cluster)
    assert reached == [] and inside.returncode == 0, (reached, inside)
    assert len(pids) == 3 and not any(_alive(p) for p in pids)  # the holder ended too
    with LocalTFCluster(module, workers=1, env=env, isolate=False) as cluster:
        cluster.start()  # the same task outside a namespace: reached on every address
        assert _reached(cluster.port("worker-0")) == machine_addresses()
        assert cluster.why_not_isolated == "isolate=False" and cluster.netns.processes == {}


@NEEDS_NETNS
def test_in_a_namespace_a_stranger_on_the_port_cannot_get_in_the_way(fake_module):
    module, env = fake_module
    with LocalTFCluster(module, workers=1, env=env) as cluster, socket.socket() as stranger:
        stranger.bind(("127.0.0.1", cluster.port("worker-0")))
        stranger.listen()
        cluster.start()  # its task listens on the same port, in its own network
        assert cluster.table().column("listening on") == [cluster.address("worker-0")]


@NEEDS_NETNS
def test_tasks_started_later_join_the_namespace_of_those_running(fake_module):
    module, env = fake_module
    with LocalTFCluster(module, workers=3, env=env, isolate=True) as cluster:
        cluster.start(["worker-0", "worker-1"])
        cluster.start(["worker-2"])
        cluster.restart("worker-0")
        networks = {os.readlink(f"/proc/{p.pid}/ns/net") for p in cluster.group.processes.values()}
        assert len(networks) == 1 and networks != {os.readlink("/proc/self/ns/net")}


# A network namespace of the test's own, whose loopback also carries a non-loopback address of
# each family (TEST-NET-2, and an IPv6 ULA): what another machine would connect to, on every
# machine (CI machines may have no address but loopback).
TEST_ADDRESSES = ("198.51.100.7", "fd00::7")
IN_TEST_NAMESPACE = f"""ip link set lo up && ip addr add {TEST_ADDRESSES[0]}/32 dev lo &&
{{ ip -6 addr add {TEST_ADDRESSES[1]}/128 nodad dev lo 2>/dev/null; exec "$0" -c "$@"; }}"""
SCENARIOS = textwrap.dedent("""
    import json, os, socket, subprocess, sys
    from helpers.processes import port_accepts
    from helpers.tf_cluster import LocalTFCluster
    module, addresses, env = sys.argv[1], json.loads(sys.argv[2]), {"FAKE_BIND": "::"}
    found = {}

    def answer(port, enter=()):  # the name a task sends on 127.0.0.1:port, read from where
        code = (f"import socket; s = socket.create_connection(('127.0.0.1', {port}), 5); "
                "print(s.recv(64).decode())")
        return subprocess.run([*enter, sys.executable, "-c", code], capture_output=True,
                              text=True, timeout=30).stdout.strip()

    def reached(case, cluster, tasks):  # the outside addresses a client got in through
        found[case] = {t: [a for a in addresses if port_accepts(cluster.port(t), a)]
                       for t in tasks}
        found[case + " isolated"] = cluster.isolated

    with LocalTFCluster(module, workers=2, ps=1, env=env) as cluster:
        cluster.start(["ps-0"])  # parameter servers first, as the book's program is run
        reached("partial start", cluster, ["ps-0"])
        cluster.start(["worker-0", "worker-1"])
        reached("later start", cluster, cluster.task_names())
        cluster.restart("ps-0")
        reached("restart", cluster, ["ps-0"])
    with LocalTFCluster(module, workers=1, chief=1, env=env, this_process="chief-0") as cluster:
        cluster.start()  # the chief is this process: it reaches the worker, and the worker it
        reached("this process plays the chief", cluster, ["worker-0"])
        found["worker-0 answers here on 127.0.0.1"] = answer(cluster.port("worker-0"))
        with socket.create_server(("127.0.0.1", cluster.port("chief-0"))) as chief:
            inside = subprocess.Popen([*cluster._enter, sys.executable, "-c", (
                "import socket; socket.create_connection(('127.0.0.1', "
                f"{cluster.port('chief-0')}), 5).sendall(b'from inside')")])
            chief.settimeout(20)
            found["the chief hears from inside"] = chief.accept()[0].recv(64).decode()
            inside.wait(30)
        found["states"] = cluster.table().column("state")
    with LocalTFCluster(module, workers=1, env=env, isolate=False) as cluster:
        cluster.start()  # the control: outside a namespace, every address reaches it
        reached("control", cluster, ["worker-0"])
    print(json.dumps(found))
""")


@NEEDS_NETNS
@pytest.mark.skipif(shutil.which("ip") is None, reason="no `ip` command to give a test "
                    "namespace an address")
def test_a_cluster_started_in_parts_is_as_unreachable_as_a_whole_one(fake_module):
    module, env = fake_module
    result = subprocess.run(
        [*unshare_command(), "sh", "-c", IN_TEST_NAMESPACE, sys.executable, SCENARIOS, module,
         json.dumps(TEST_ADDRESSES)], capture_output=True, text=True, timeout=120,
        env={**os.environ, **env})
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.splitlines()[-1])
    addresses = found["control"]["worker-0"]  # those this namespace has: IPv4, maybe IPv6
    assert TEST_ADDRESSES[0] in addresses and found["control isolated"] is False, found
    for case in ("partial start", "later start", "restart", "this process plays the chief"):
        assert found[f"{case} isolated"] is True, (case, found)
        assert all(outside == [] for outside in found[case].values()), (case, found)
    assert found["worker-0 answers here on 127.0.0.1"] == "worker-0", found
    assert found["the chief hears from inside"] == "from inside", found
    assert found["states"] == ["this process", "running"], found


def test_this_process_is_a_task_of_the_cluster_never_started(fake_module):
    module, env = fake_module
    with pytest.raises(ValueError, match=r"this_process must be one of 'chief-0', 'worker-0'"):
        LocalTFCluster(module, workers=1, chief=1, this_process="chief")
    cluster = LocalTFCluster(module, workers=1, chief=1, env=env, this_process="chief-0")
    with cluster, pytest.raises(ValueError, match="chief-0 is played by this process"):
        cluster.start(["chief-0"])
    assert cluster.group.processes == {}


@pytest.fixture(params=["unshare", "nsenter"])
def refused(request, tmp_path, monkeypatch):
    """``unshare`` (making a namespace) or ``nsenter`` (entering one) failing as where they
    are forbidden (a container's seccomp profile, a policy); what it says."""
    said = f"{request.param}: {request.param} failed: Operation not permitted"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / request.param).write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
    (tmp_path / "bin" / request.param).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    isolation_problem.cache_clear()
    yield said
    isolation_problem.cache_clear()


def test_where_namespaces_are_refused_the_cluster_runs_without_and_says_why(fake_module,
                                                                            refused):
    module, env = fake_module
    with LocalTFCluster(module, workers=1, env=env) as cluster:
        cluster.start()
        assert (cluster.isolated, cluster.why_not_isolated) == (False, refused)
        assert cluster.group.processes["worker-0"].args == cluster.command_of("worker-0")
        assert cluster.table().column("listening on") == [cluster.address("worker-0")]
        assert cluster.netns.processes == {}
    with pytest.raises(RuntimeError, match="isolate=True, but the tasks cannot get a network "
                                           f"namespace of their own here: {refused}"):
        LocalTFCluster(module, workers=1, env=env, isolate=True).start()
    assert not [p for p in leftover_processes() if "fcntl.ioctl" in p]  # the probe's holder


@pytest.mark.parametrize("value", ["yes", 1, 0])
def test_isolate_is_none_true_or_false(value):
    with pytest.raises(ValueError, match="isolate must be one of None, False, True"):
        LocalTFCluster("json.tool", workers=1, isolate=value)


# -- the real TensorFlow server ------------------------------------------------------------

def test_tf_server_task_serves_until_stopped():
    with LocalTFCluster("helpers.workers.tf_server", workers=1, ps=1,
                        ready_timeout=120) as cluster:
        cluster.start()
        cluster.wait_for_log("ps-0", "serving at grpc://", timeout=60)
        assert f"ps:0 serving at grpc://{cluster.address('ps-0')}" in cluster.logs()["ps-0"]
        # TensorFlow listens on every address whatever TF_CONFIG says: the table shows it
        listening_on = cluster.table().column("listening on")
        where = "every address of its own network namespace" if cluster.isolated else (
            "every address")
        for task, listening in zip(cluster.task_names(), listening_on, strict=True):
            everywhere = {f"0.0.0.0:{cluster.port(task)} ({where})",
                          f"[::]:{cluster.port(task)} ({where})"}
            assert set(listening.split(", ")) & everywhere, listening
            assert "127.0.0.1" not in listening
        # and there, no one outside its namespace can connect
        reached = [_reached(cluster.port(task)) for task in cluster.task_names()]
        assert reached == [[], []] or not cluster.isolated, reached
        pids = _pids(cluster)
    assert not any(_alive(p) for p in pids)
    assert cluster.table().column("listening on") == ["", ""]


def test_mwms_worker_whose_peer_never_comes_gives_up_naming_it():
    flags = ["--steps", "2", "--connect-timeout", "3"]
    with LocalTFCluster("helpers.workers.mwms_train", workers=2, ready_timeout=120,
                        task_args=lambda *_: flags) as cluster:
        cluster.start(["worker-0"])  # worker-1 is never started
        began = time.monotonic()
        with pytest.raises(RuntimeError, match="worker-0 failed with exit code -9"):
            cluster.wait(["worker-0"], timeout=60)
        assert time.monotonic() - began < 30
        log = cluster.logs()["worker-0"]
    assert (f"[worker-0] gave up after 3 s waiting for the other tasks of the cluster to "
            f"connect; not answering: worker-1 at {cluster.address('worker-1')}") in log
    assert "--connect-timeout" in log


def test_tf_server_refuses_to_run_without_tf_config():
    import subprocess  # noqa: PLC0415

    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    result = subprocess.run([sys.executable, "-m", "helpers.workers.tf_server"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "TF_CONFIG is not set" in result.stderr
