import os
import re
import socket
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers.mx_cluster import (
    SERVER_MODULE,
    LocalMXCluster,
    dmlc_env,
    shell_commands,
    train_on_cluster,
)
from helpers.processes import ProcessGroup, free_port

PUSHPULL = "helpers.workers.mx_pushpull"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie (exited, not yet reaped by anyone) counts as gone.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(")")[1].split()[0] == "Z"


@pytest.fixture
def worker_module(tmp_path, monkeypatch):
    """Write a throwaway worker program importable as `python -m NAME` here and in children."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(name: str, body: str) -> tuple[str, dict[str, str]]:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
        return name, {"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

    return write


# -- bad input, nothing started -----------------------------------------------------------
@pytest.mark.parametrize("workers, servers", [(0, 1), (2, 0), (-1, 1), (True, 1), (2, 1.5)])
def test_counts_must_be_positive_ints(workers, servers):
    with pytest.raises(ValueError, match=r"the number of (workers|servers) must be an int >= 1"):
        LocalMXCluster(PUSHPULL, workers=workers, servers=servers)


def test_missing_worker_program_is_rejected():
    with pytest.raises(ValueError, match="no Python module"):
        LocalMXCluster("helpers.workers.no_such_program")


def test_port_in_use_is_rejected():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ValueError, match="already in use"):
            LocalMXCluster(PUSHPULL, port=port)


def test_other_bad_arguments():
    with pytest.raises(ValueError, match="ready_timeout"):
        LocalMXCluster(PUSHPULL, ready_timeout=0)
    with pytest.raises(ValueError, match="thread"):
        LocalMXCluster(PUSHPULL, threads=0)
    with pytest.raises(ValueError, match=r"args is a list of str .*not '--rounds 2'"):
        LocalMXCluster(PUSHPULL, args="--rounds 2")
    with pytest.raises(ValueError, match="between 1 and 65535"):
        LocalMXCluster(PUSHPULL, port=70000)
    with pytest.raises(RuntimeError, match="start"):
        LocalMXCluster(PUSHPULL).wait()


def test_task_names_and_description_before_start():
    cluster = LocalMXCluster(PUSHPULL, workers=3, servers=2)
    assert cluster.task_names() == ["scheduler", "server-0", "server-1",
                                    "worker-0", "worker-1", "worker-2"]
    table = cluster.table()
    assert table.column("DMLC_ROLE") == ["scheduler", "server", "server",
                                         "worker", "worker", "worker"]
    assert table.column("program")[0] == SERVER_MODULE
    assert table.column("program")[-1] == PUSHPULL
    assert set(table.column("state")) == {"not started"}


def test_dmlc_env_has_every_variable():
    env = dmlc_env("worker", "10.0.0.1", 9091, servers=2, workers=4, node_host="10.0.0.7")
    assert env == {"DMLC_ROLE": "worker", "DMLC_PS_ROOT_URI": "10.0.0.1",
                   "DMLC_PS_ROOT_PORT": "9091", "DMLC_NUM_SERVER": "2",
                   "DMLC_NUM_WORKER": "4", "DMLC_NODE_HOST": "10.0.0.7"}
    assert dmlc_env("server", "h", 1, 1, 1, verbose=1)["PS_VERBOSE"] == "1"
    assert dmlc_env("scheduler", "h", 1, 1, 1)["DMLC_NODE_HOST"] == "h"


def test_shell_commands_for_several_machines():
    lines = shell_commands(PUSHPULL, "10.0.0.1", 9091, ["10.0.0.1"], ["10.0.0.2", "10.0.0.3"],
                           args=["--rounds", "3"])
    assert len(lines) == 4
    assert lines[0].startswith("# on 10.0.0.1 (scheduler)")
    assert f"-m {SERVER_MODULE}" in lines[1]
    assert "DMLC_NODE_HOST=10.0.0.3" in lines[3]
    assert lines[3].endswith(f"python -m {PUSHPULL} --rounds 3")
    assert all("DMLC_NUM_WORKER=2" in line for line in lines)
    with pytest.raises(ValueError, match=r"server_hosts is a non-empty list of host names"):
        shell_commands(PUSHPULL, "h", 9091, [], ["w"])


# -- failures with real processes ---------------------------------------------------------
def test_worker_that_crashes_at_start_is_reported_and_everything_ends(worker_module):
    name, env = worker_module("crash_at_start", """
        raise SystemExit("cannot read the training data")
    """)
    with LocalMXCluster(name, workers=2, env=env, ready_timeout=60) as cluster:
        # Both workers crash; whichever exits first is the one reported.
        with pytest.raises(RuntimeError, match=r"worker-\d.*before the cluster formed") as err:
            cluster.start()
        assert "cannot read the training data" in str(err.value)
        pids = [p.pid for p in cluster.group.processes.values()]
    assert cluster.alive() == []
    assert all(_gone(pid) for pid in pids)


def test_ready_timeout_raises_and_ends_everything():
    with LocalMXCluster(PUSHPULL, workers=2, ready_timeout=0.3) as cluster:
        with pytest.raises(TimeoutError, match="did not reach"):
            cluster.start()
        pids = [p.pid for p in cluster.group.processes.values()]
    assert all(_gone(pid) for pid in pids)


def test_port_taken_between_init_and_start_is_rejected():
    port = free_port()
    cluster = LocalMXCluster(PUSHPULL, port=port)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        with cluster, pytest.raises(ValueError, match="already in use"):
            cluster.start()
    assert cluster.group.processes == {}


def test_worker_failing_after_the_cluster_formed(worker_module):
    name, env = worker_module("fail_after_connect", """
        from helpers.frameworks import import_mxnet
        mx = import_mxnet()
        from helpers.workers.mx_worker import connect
        kv = connect("dist_sync")
        kv.init(3, mx.nd.zeros((2,)))
        if kv.rank == 0:
            raise RuntimeError("out of memory in step 3")
        kv.push(3, mx.nd.ones((2,)))  # waits for rank 0's push forever
        out = mx.nd.zeros((2,))
        kv.pull(3, out=out)
        out.wait_to_read()
    """)
    with LocalMXCluster(name, workers=2, env=env) as cluster:
        cluster.start()
        with pytest.raises(RuntimeError, match=r"worker-. \(worker\) exit 1 \(failed\)") as err:
            cluster.wait(timeout=60)
        assert "out of memory in step 3" in str(err.value)
        assert "every process of the cluster has been ended" in str(err.value)
        assert cluster.alive() == []  # the scheduler, the server and the other worker too
        assert cluster.state("scheduler").startswith("killed by")


def test_a_killed_server_is_named_and_everything_ends():
    with LocalMXCluster(PUSHPULL, workers=2, args=["--rounds", "10000"]) as cluster:
        cluster.start()
        cluster.kill("server-0")
        began = time.monotonic()
        with pytest.raises(RuntimeError, match=r"server-0 \(server\) killed by SIGKILL while "
                                               r"worker-0, worker-1 still ran") as err:
            cluster.wait(timeout=60)
        assert time.monotonic() - began < 10  # not the 60 s timeout
        assert "every process of the cluster has been ended" in str(err.value)
        assert cluster.alive() == []


def test_two_clusters_given_the_same_port_fail_naming_the_cause():
    port = free_port()
    first = LocalMXCluster(PUSHPULL, workers=1, port=port)
    second = LocalMXCluster(PUSHPULL, workers=1, port=port)  # neither listens yet: both fine
    with first, second:
        first.start(wait_for_workers=False)
        with pytest.raises(ValueError, match=rf"port {port} is already used by another cluster "
                                             r"of this process \(mxnet-cluster, still running"):
            second.start()
        assert second.group.processes == {}
    first_again = LocalMXCluster(PUSHPULL, workers=1, port=port)  # free once the first ended
    assert first_again.port == port


def test_a_port_taken_after_the_check_is_named(monkeypatch):
    # The race two clusters (or two notebooks) run into: the port was free when checked,
    # and someone else listened on it before the scheduler's `import mxnet` had finished.
    port = free_port()
    cluster = LocalMXCluster(PUSHPULL, workers=1, port=port, ready_timeout=60)
    monkeypatch.setattr("helpers.processes.ensure_port_free", lambda *args: None)
    with socket.socket() as squatter, cluster:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        with pytest.raises(RuntimeError, match=rf"scheduler .*Its port {port} is taken \(held "
                                               rf"by pid {os.getpid()} ") as err:
            cluster.start()
        assert "another cluster on the same port?" in str(err.value)
        assert cluster.alive() == []
        assert list(cluster.group.processes) == ["scheduler"]  # nobody joined the squatter


def test_two_clusters_racing_for_one_port_never_mix(monkeypatch):
    # Two processes given one port both pass the free-port check while their schedulers
    # import MXNet (the in-process claim cannot see the other process): switched off here.
    # ps-lite's scheduler does not move to another port, and a server or worker registers
    # with whichever scheduler holds the port: only the cluster whose own scheduler holds
    # it may start them.
    port = free_port()
    monkeypatch.setattr("helpers.processes.ensure_port_free", lambda port, host: port)
    monkeypatch.setattr(ProcessGroup, "claim_ports", lambda self, ports, what: None)

    def run(cluster):
        with cluster:
            cluster.start()
            return cluster.wait(timeout=60)

    clusters = [LocalMXCluster(PUSHPULL, workers=2, port=port, args=["--rounds", "2"],
                               ready_timeout=60) for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(run, c) for c in clusters]
        done = [c for c, r in zip(clusters, runs, strict=True) if r.exception() is None]
        failed = [r.exception() for r in runs if r.exception() is not None]
    assert len(done) == 1 and len(failed) == 1, (done, failed)
    assert re.search(rf"scheduler \(scheduler\) .*Its port {port} is taken \(held by pid \d+ "
                     r"\(.*helpers\.workers\.mx_worker\)\)", str(failed[0])), failed[0]
    loser = next(c for c in clusters if c not in done)
    assert list(loser.group.processes) == ["scheduler"]
    (winner,) = done
    assert [r["pulled"][1] for r in winner.results()] == [[[6.0] * 3] * 2] * 2
    assert winner.logs()["scheduler"].count("assign rank") == 3  # its own server and workers
    assert loser.alive() == winner.alive() == []


# -- the real thing -------------------------------------------------------------------------
def test_dist_sync_push_pull_across_two_workers_and_two_servers(tmp_path):
    with LocalMXCluster(PUSHPULL, workers=2, servers=2, log_dir=tmp_path,
                        args=["--rounds", "2"]) as cluster:
        ready = cluster.start()
        codes = cluster.wait(timeout=120)
        results = cluster.results()
        scheduler_log = cluster.logs()["scheduler"]
    assert ready > 0
    assert codes == {name: 0 for name in cluster.task_names()}
    assert cluster.alive() == []
    assert sorted(r["rank"] for r in results) == [0, 1]
    for record in results:
        # round r: worker k pushes (k + 1) * r everywhere; the servers return the sum
        assert record["pulled"] == [[[3.0] * 3] * 2, [[6.0] * 3] * 2]
        assert record["per_key"] == [2.0, 20.0, 200.0, 2000.0]
    assert "connected to 2 workers and 2 servers" in scheduler_log
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{n}.log" for n in cluster.task_names())


def test_train_on_cluster_runs_the_training_program_end_to_end():
    cluster = train_on_cluster(1, ["--steps", "4", "--warmup-steps", "1", "--global-batch", "16",
                                   "--compute-batches", "8", "--sizes-kb", "1"], timeout=120)
    assert cluster.alive() == []
    (record,) = cluster.results()
    assert record["rank"] == 0 and record["kvstore"] == "dist_sync"
    assert len(record["compute_s"]) == len(record["comm_s"]) == 3
    assert len(record["losses"]) == 4
    assert record["digest_last"] == record["digest_synced"]
    assert set(record["compute_by_batch"]) == {"8"}
    assert record["push_pull"][0]["bytes"] == 1024
    assert 0 <= record["test_accuracy"] <= 1


def test_both_cluster_classes_answer_the_same_questions():
    """One vocabulary: what a lesson asks of a TensorFlow cluster it can ask of MXNet's."""
    from helpers.processes import LocalCluster
    from helpers.tf_cluster import LocalTFCluster

    shared = ("task_names", "table", "state", "start", "wait", "wait_for_log", "kill",
              "restart", "stop", "exit_codes", "alive", "logs", "show_logs")
    for cls in (LocalTFCluster, LocalMXCluster):
        assert issubclass(cls, LocalCluster)
        assert all(callable(getattr(cls, name)) for name in shared), cls


def test_a_ps_lite_cluster_refuses_restart_and_says_why():
    cluster = LocalMXCluster(PUSHPULL, workers=1)
    with pytest.raises(RuntimeError, match="cannot take .* back once it has formed"):
        cluster.restart("worker-0")
