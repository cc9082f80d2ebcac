"""Tests of helpers.training (model, data order, custom step) and the MWMS worker's flags."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.frameworks import import_tensorflow
from helpers.training import (
    build_model,
    make_dataset,
    make_optimizer,
    make_train_step,
    make_update_counter,
    training_arrays,
    weights_checksum,
)
from helpers.workers import mwms_train


@pytest.fixture(scope="module")
def arrays():
    return training_arrays(256)


def test_training_arrays_shapes(arrays):
    x, y, source = arrays
    assert x.shape[0] == y.shape[0] == 256 and x.ndim == 4 and x.shape[-1] == 1
    assert x.dtype == np.float32 and y.dtype == np.int32
    assert 0.0 <= x.min() and x.max() <= 1.0 and set(np.unique(y)) <= set(range(10))
    assert "digits" in source or "MNIST" in source


def test_training_arrays_repeat_when_asked_for_more(arrays):
    x, y, _ = training_arrays(5000)
    assert len(x) == 5000 and np.array_equal(x[:256], arrays[0])


def _batches(dataset, n):
    return [(x.numpy(), y.numpy()) for x, y in dataset.take(n)]


def test_data_order_depends_only_on_seed_and_step(arrays):
    x, y, _ = arrays
    first = _batches(make_dataset(x, y, 32, seed=3), 12)  # 12 batches > one epoch of 8
    again = _batches(make_dataset(x, y, 32, seed=3), 12)
    resumed = _batches(make_dataset(x, y, 32, seed=3, start_step=10), 2)
    other = _batches(make_dataset(x, y, 32, seed=4), 1)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(first, again, strict=True))
    assert np.array_equal(resumed[0][1], first[10][1])
    assert np.array_equal(resumed[1][0], first[11][0])
    assert not np.array_equal(other[0][0], first[0][0])
    assert first[0][0].shape == (32, *x.shape[1:])


def test_initial_weights_depend_on_the_seed_only(arrays):
    shape = arrays[0].shape[1:]
    assert weights_checksum(build_model(shape, seed=0)) == weights_checksum(build_model(shape))
    assert weights_checksum(build_model(shape, seed=1)) != weights_checksum(build_model(shape))


def test_weights_checksum_sees_a_single_changed_value():
    weights = [np.zeros((3, 3), np.float32), np.ones(4, np.float32)]
    before = weights_checksum(weights)
    weights[1][2] = np.nextafter(np.float32(1), np.float32(2))
    assert weights_checksum(weights) != before and len(before) == 16


def test_custom_step_trains_and_counts_updates(arrays):
    tf = import_tensorflow()
    x, y, _ = arrays
    strategy = tf.distribute.get_strategy()  # the default strategy: one replica
    with strategy.scope():
        model = build_model(x.shape[1:])
        optimizer = make_optimizer(0.01)
        counter = make_update_counter()
    step = make_train_step(strategy, model, optimizer, 32, counter)
    iterator = iter(strategy.experimental_distribute_dataset(make_dataset(x, y, 32)))
    results = [step(iterator) for _ in range(15)]
    losses = [float(loss) for loss, _ in results]
    assert int(counter.numpy()) == 15
    assert all(int(stale) == 0 for _, stale in results)
    assert np.mean(losses[-3:]) < losses[0]
    assert losses[0] == pytest.approx(np.log(10), rel=0.2)


def test_mwms_worker_needs_tf_config(monkeypatch, capsys):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(SystemExit) as info:
        mwms_train.parse_args([])
    assert info.value.code == 2 and "TF_CONFIG is not set" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--steps", "--batch-per-replica", "--checkpoint-every"])
def test_mwms_worker_rejects_non_positive_counts(monkeypatch, capsys, flag):
    monkeypatch.setenv("TF_CONFIG", ONE_WORKER)
    with pytest.raises(SystemExit):
        mwms_train.parse_args([flag, "0"])
    assert "must be an int >= 1" in capsys.readouterr().err


ONE_WORKER = '{"cluster": {"worker": ["127.0.0.1:20000"]}, "task": {"type": "worker", "index": 0}}'


def test_mwms_worker_accepts_its_defaults(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", ONE_WORKER)
    args = mwms_train.parse_args(["--steps", "7", "--try-fit"])
    assert args.steps == 7 and args.try_fit and args.resolver == "tf_config"


def _fake_tf(gpus: int):
    """A stand-in for the tensorflow module that reports ``gpus`` physical GPUs."""
    from unittest import mock  # noqa: PLC0415

    tf = mock.MagicMock()
    tf.config.list_physical_devices.return_value = [f"GPU:{i}" for i in range(gpus)]
    return tf


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_mwms_worker_on_gpus_turns_on_determinism_and_memory_growth(gpus):
    tf = _fake_tf(gpus)
    mwms_train.make_strategy(tf, resolver=object(), timeout=5.0)
    tf.config.experimental.enable_op_determinism.assert_called_once_with()
    grown = [c.args for c in tf.config.experimental.set_memory_growth.call_args_list]
    assert grown == [(f"GPU:{i}", True) for i in range(gpus)]
    tf.distribute.experimental.CommunicationImplementation.__getitem__.assert_called_with("NCCL")


def test_mwms_worker_on_cpu_keeps_the_default_kernels_and_uses_ring():
    tf = _fake_tf(0)
    mwms_train.make_strategy(tf, resolver=object(), timeout=5.0)
    tf.config.experimental.enable_op_determinism.assert_not_called()
    tf.distribute.experimental.CommunicationImplementation.__getitem__.assert_called_with("RING")


def _run_alone(*flags: str):
    """The MWMS worker as a program, alone in its cluster, on the CPU."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from helpers.processes import free_port  # noqa: PLC0415
    from helpers.tf_cluster import tf_config  # noqa: PLC0415

    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "",
           "TF_CONFIG": tf_config({"worker": [f"127.0.0.1:{free_port()}"]}, "worker", 0)}
    return subprocess.run([sys.executable, "-m", "helpers.workers.mwms_train", *flags], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_mwms_worker_alone_writes_its_results_and_exits_cleanly(tmp_path):
    """One worker: exit code 0 (through os._exit) and a complete JSON."""
    import json  # noqa: PLC0415

    done = _run_alone("--steps", "3", "--examples", "64", "--batch-per-replica", "16",
                      "--out-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((tmp_path / "worker-0.json").read_text())
    assert sorted(result["losses"]) == sorted(result["step_ended_seconds"]) == ["1", "2", "3"]
    ended = [result["step_ended_seconds"][s] for s in ("1", "2", "3")]
    assert ended == sorted(ended) and ended[-1] <= result["seconds"]
    assert "done: steps 1..3" in done.stdout


def test_mwms_worker_refuses_a_global_batch_larger_than_the_data(tmp_path):
    """Every step would hold all the examples: the worker says so and trains nothing."""
    done = _run_alone("--steps", "3", "--examples", "8", "--batch-per-replica", "16",
                      "--out-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert ("the global batch, --batch-per-replica 16 x 1 replicas = 16, is larger than "
            "--examples 8" in done.stderr and "--examples 16 or more" in done.stderr)
    assert "step 1/" not in done.stdout and not (tmp_path / "worker-0.json").exists()
