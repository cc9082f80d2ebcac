import numpy as np
import pytest

from helpers.mx_cluster import train_on_cluster
from helpers.workers.common import parse_results
from helpers.workers.mx_train import digest
from helpers.workers.mx_worker import (
    READY,
    dmlc_env_problem,
    median_step_seconds,
    report,
    training_table,
)

FULL_ENV = {"DMLC_ROLE": "worker", "DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": "9091",
            "DMLC_NUM_SERVER": "1", "DMLC_NUM_WORKER": "2"}


class FakeKV:
    rank, num_workers = 1, 2


def test_report_lines_parse_back(capsys):
    report(FakeKV(), loss=0.25, digest="abc")
    print("[worker 1] some progress line")
    report(FakeKV(), step=2)
    records = parse_results(capsys.readouterr().out)
    assert records == [{"rank": 1, "num_workers": 2, "loss": 0.25, "digest": "abc"},
                       {"rank": 1, "num_workers": 2, "step": 2}]


def test_ready_marker_is_a_plain_line():
    assert "\n" not in READY and READY.strip() == READY


def test_dmlc_env_problem_names_what_is_missing():
    assert dmlc_env_problem(FULL_ENV) is None
    partial = {k: v for k, v in FULL_ENV.items() if k != "DMLC_PS_ROOT_PORT"}
    assert "DMLC_PS_ROOT_PORT" in dmlc_env_problem(partial)
    server = dmlc_env_problem({**FULL_ENV, "DMLC_ROLE": "server"})
    assert "python -m helpers.workers.mx_worker" in server


def test_digest_sees_every_bit():
    a = np.arange(6, dtype=np.float32)
    b = a.copy()
    assert digest([a, b]) == digest([a.copy(), b.copy()])
    b[3] = np.nextafter(b[3], np.float32(10))
    assert digest([a, b]) != digest([a, a])


def _record(rank, compute, comm):
    return {"rank": rank, "task": f"worker-{rank}", "kvstore": "dist_sync", "local_batch": 8,
            "compute_s": compute, "comm_s": comm, "loop_seconds": sum(compute) + sum(comm),
            "train_loss": 0.5, "test_accuracy": 0.9, "digest_last": "ab", "digest_synced": "ab"}


def test_median_step_seconds_is_the_slowest_workers_median():
    fast = _record(0, [0.001, 0.001, 0.5], [0.001, 0.001, 0.001])
    slow = _record(1, [0.004, 0.004, 0.004], [0.001, 0.001, 0.001])
    assert median_step_seconds([fast, slow]) == pytest.approx(0.005)
    assert median_step_seconds([fast]) == pytest.approx(0.002)  # the outlier step is ignored


def test_training_table_has_a_row_per_worker_in_milliseconds():
    table = training_table([_record(0, [0.002], [0.003]), _record(1, [0.004], [0.001])])
    assert table.column("rank") == [0, 1]
    assert table.column("compute ms") == pytest.approx([2.0, 4.0])
    assert table.column("comm ms") == pytest.approx([3.0, 1.0])


def test_mx_train_reports_one_array_per_parameter():
    """Notebook 10's model charges one round trip per array: the count must be the Trainer's."""
    cluster = train_on_cluster(1, ["--steps", "3", "--warmup-steps", "1", "--global-batch", "8",
                                   "--hidden", "16"], timeout=120)
    (record,) = cluster.results()
    assert record["param_arrays"] == 6  # three Dense layers, a weight and a bias each
    features = 64  # the 8 x 8 digits
    assert record["param_bytes"] == 4 * (features * 16 + 16 + 16 * 16 + 16 + 16 * 10 + 10)


def test_mx_train_step_digests_and_saved_weights(tmp_path):
    """Notebooks 09 and 10 read a hash per step and rank 0's weights around the first and last
    steps: one digest per step, and four snapshots of every parameter, all different."""
    import numpy as np  # noqa: PLC0415

    saved = tmp_path / "weights.npz"
    cluster = train_on_cluster(1, ["--steps", "3", "--warmup-steps", "1", "--global-batch", "8",
                                   "--hidden", "16", "--step-digests", "--save-weights",
                                   str(saved)], timeout=120)
    (record,) = cluster.results()
    assert len(record["step_digests"]) == 3 and len(set(record["step_digests"])) == 3
    with np.load(saved) as snapshots:
        assert len(snapshots.files) >= 4, snapshots.files
        first, *rest = (snapshots[k] for k in sorted(snapshots.files))
        assert all(not np.array_equal(first, r) for r in rest if r.shape == first.shape)
