"""Reading collective timings back from worker processes; the timing workers' flags."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from fresh_python import run_python as run_fresh  # noqa: E402
from lesson_cells import lesson  # noqa: E402

from helpers.tf_cluster import tf_config  # noqa: E402
from helpers.workers import tf_allreduce  # noqa: E402
from helpers.workers.common import TIMING_DONE, parse_results, report  # noqa: E402
from helpers.workers.mx_worker import message_key, time_push_pull  # noqa: E402

NB11 = lesson("11", "slowest", "round_trips")
slowest, round_trips = NB11.slowest, NB11.round_trips


def test_slowest_member_sets_a_collectives_time():
    records = [{"kind": "op", "workers": 2, "bytes": 8, "seconds": 0.1, "best": 0.05},
               {"kind": "op", "workers": 2, "bytes": 8, "seconds": 0.3, "best": 0.04},
               {"kind": "strategy", "workers": 4, "bytes": 8, "seconds": 9.0}]
    assert slowest(records, "op") == {(2, 8): 0.3}
    assert slowest(records, "op", field="best") == {(2, 8): 0.05}


def test_round_trips_slowest_worker_per_group():
    ps_records = [{"workers": 1, "push_pull": [{"bytes": 8, "median_s": 0.2, "best_s": 0.1}]},
                  {"workers": 2, "push_pull": [{"bytes": 8, "median_s": 0.4, "best_s": 0.3}]},
                  {"workers": 2, "push_pull": [{"bytes": 8, "median_s": 0.5, "best_s": 0.2}]}]
    ps = round_trips(ps_records)
    assert ps == {(1, 8): 0.2, (2, 8): 0.5}
    assert round_trips(ps_records, "best_s") == {(1, 8): 0.1, (2, 8): 0.3}


def test_tf_worker_reports_parse_back(capsys):
    report(kind="op", workers=2, seconds=0.5)
    print("[worker-0] a progress line")
    assert parse_results(capsys.readouterr().out) == [{"kind": "op", "workers": 2, "seconds": 0.5}]
    assert "\n" not in TIMING_DONE


def test_worker_flags_are_checked(monkeypatch, capsys):
    monkeypatch.setenv("TF_CONFIG", tf_config({"worker": ["127.0.0.1:1"]}, "worker", 0))
    args = tf_allreduce.parse_args(["--sizes-kb", "4", "64", "--groups", "1", "2",
                                    "--tensors", "3"])
    assert args.sizes_kb == [4, 64] and args.groups == [1, 2] and args.tensors == 3
    assert args.batches == []  # notebook 11's timings, not 12's
    args = tf_allreduce.parse_args(["--batches", "8", "16", "--micro-batches", "2"])
    assert args.batches == [8, 16] and args.micro_batches == 2
    for bad, message in ((["--groups", "0"], "--groups must be an int >= 1, not 0"),
                         (["--packs", "0"], "--packs must be an int >= 1"),
                         (["--warmup", "-1"], "--warmup must be an int >= 0")):
        with pytest.raises(SystemExit):
            tf_allreduce.parse_args(bad)
        assert message in capsys.readouterr().err
    monkeypatch.delenv("TF_CONFIG")
    with pytest.raises(SystemExit):
        tf_allreduce.parse_args([])
    assert "TF_CONFIG is not set" in capsys.readouterr().err


def test_one_replicas_sums_through_the_workers_own_functions():
    """``summed`` and ``all_reduce_one`` on a one-device strategy: the sum of one replica is
    its own value, read back as the workers read theirs (a list in, one element out)."""
    out = run_fresh("""
        from helpers import import_tensorflow
        from helpers.workers import tf_allreduce as w
        tf = import_tensorflow(keras=False)
        strategy = tf.distribute.MirroredStrategy(["/CPU:0"])
        one = w.all_reduce_one(tf, strategy)
        by_hand = w.summed(tf, strategy, lambda *v: tf.split(w.all_reduce(tf, tf.concat(v, 0)), 2))
        print(w.fetched(one([tf.constant([3.0, 4.0])])),
              w.fetched(by_hand([tf.constant([1.0]), tf.constant([5.0])])))
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["3.0", "5.0"]


class RecordingKV:
    """Enough of a kvstore for time_push_pull: counts what it is asked to do."""

    def __init__(self):
        self.calls = []

    def init(self, key, value):
        self.calls.append(("init", key))

    def push(self, key, value):
        self.calls.append(("push", key))

    def pull(self, key, out):
        self.calls.append(("pull", key))


def test_time_push_pull_can_use_keys_initialised_before():
    kv = RecordingKV()
    rows = time_push_pull(kv, [16, 32], repeat=2, warmup=1, first_key="m", init=False)
    assert [r["bytes"] for r in rows] == [16, 32]
    assert not any(call == "init" for call, _ in kv.calls)
    assert {key for _, key in kv.calls} == {message_key("m", 0), message_key("m", 1)}
    assert message_key(7, 2) == 9 and message_key("m", 2) == "m2"
    kv = RecordingKV()
    time_push_pull(kv, [16], repeat=1, warmup=0, first_key=100)
    assert kv.calls[0] == ("init", 100)


def test_ps_workers_wait_for_their_start_signal(tmp_path):
    from helpers.workers.mx_pushpull import wait_for_file

    signal = tmp_path / "start"
    signal.touch()
    wait_for_file(str(signal), timeout=1.0)  # returns at once when the file is there


def test_launched_ps_groups_measure_once_signalled(tmp_path):
    from helpers.mx_cluster import LocalMXCluster

    start = tmp_path / "start"
    with LocalMXCluster("helpers.workers.mx_pushpull", workers=2, servers=1,
                        args=["--sizes-kb", "4", "--groups", "1", "2", "--repeat", "2",
                              "--warmup", "0", "--start-file", str(start),
                              "--kvstore", "dist_async"]) as cluster:
        cluster.launch()  # returns at once
        assert len(cluster.alive()) == 4  # scheduler, server, 2 workers: all waiting
        with pytest.raises(RuntimeError, match="started already"):
            cluster.launch()
        start.touch()
        codes = cluster.wait(timeout=120)
    assert codes == {name: 0 for name in cluster.task_names()}
    records = cluster.results()
    assert sorted((r["rank"], r["workers"]) for r in records) == [(0, 1), (0, 2), (1, 2)]
    assert all(row["bytes"] == 4096 and row["median_s"] > 0
               for r in records for row in r["push_pull"])
    assert {r["kvstore"] for r in records} == {"dist_async"}
    assert {r["sum_correct"] for r in records} == {None}  # async: no sum to check


def test_sync_ps_group_is_the_whole_cluster_and_pulls_the_sum():
    from helpers.mx_cluster import LocalMXCluster

    with LocalMXCluster("helpers.workers.mx_pushpull", workers=2, servers=1,
                        args=["--sizes-kb", "4", "8", "--groups", "2", "--repeat", "2",
                              "--warmup", "0", "--kvstore", "dist_sync"]) as cluster:
        cluster.launch()
        codes = cluster.wait(timeout=120)
    assert codes == {name: 0 for name in cluster.task_names()}
    records = cluster.results()
    assert sorted((r["rank"], r["workers"], r["kvstore"]) for r in records) == [
        (0, 2, "dist_sync"), (1, 2, "dist_sync")]
    # each worker pushed ones: a synchronous server's pull returns their sum, 2
    assert [r["sum_correct"] for r in records] == [True, True]
    assert [row["bytes"] for row in records[0]["push_pull"]] == [4096, 8192]
