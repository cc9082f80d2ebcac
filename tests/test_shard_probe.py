"""Tests of the auto-sharding probe (helpers.workers.shard_probe), without a cluster.

Notebook 06 runs the probe on a real two-worker cluster; here its pieces are checked in
this process: the flags it refuses, the input files it lists, and the examples one
process reads under the default strategy (one worker: every policy reads everything).
"""

from __future__ import annotations

import pytest

from helpers.frameworks import import_tensorflow
from helpers.tf_cluster import tf_config
from helpers.workers import shard_probe

VALID_TF_CONFIG = tf_config({"worker": ["127.0.0.1:20000", "127.0.0.1:20001"]}, "worker", 0)


@pytest.fixture
def inputs(tmp_path):
    for k in range(4):
        (tmp_path / f"part-{k}.txt").write_text("".join(f"{4 * k + i}\n" for i in range(4)))
    (tmp_path / "notes.md").write_text("not an input")
    return tmp_path


def test_input_files_are_the_sorted_text_files(inputs, tmp_path):
    assert [f.rsplit("/", 1)[1] for f in shard_probe.input_files(str(inputs))] == [
        "part-0.txt", "part-1.txt", "part-2.txt", "part-3.txt"]
    assert shard_probe.input_files(str(tmp_path / "missing")) == []


@pytest.mark.parametrize("config", [None, "{}", "not json"])
def test_probe_needs_a_valid_tf_config(monkeypatch, capsys, inputs, config):
    if config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", config)
    with pytest.raises(SystemExit):
        shard_probe.parse_args(["--input-dir", str(inputs)])
    assert "TF_CONFIG" in capsys.readouterr().err


def test_probe_needs_input_files(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("TF_CONFIG", VALID_TF_CONFIG)
    with pytest.raises(SystemExit):
        shard_probe.parse_args(["--input-dir", str(tmp_path)])
    assert "holds no .txt files" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--global-batch", "0"], "--global-batch must be an int >= 1"),
    (["--connect-timeout", "0"], "--connect-timeout must be"),
    (["--policies", "SOME"], "invalid choice"),
])
def test_probe_rejects_bad_flags(monkeypatch, capsys, inputs, argv, message):
    monkeypatch.setenv("TF_CONFIG", VALID_TF_CONFIG)
    with pytest.raises(SystemExit):
        shard_probe.parse_args(["--input-dir", str(inputs), *argv])
    assert message in capsys.readouterr().err


def test_probe_defaults_to_the_three_policies_of_the_lesson(monkeypatch, inputs):
    monkeypatch.setenv("TF_CONFIG", VALID_TF_CONFIG)
    args = shard_probe.parse_args(["--input-dir", str(inputs)])
    assert args.policies == ["FILE", "DATA", "OFF"] and args.global_batch == 4


@pytest.mark.parametrize("policy", shard_probe.POLICIES)
def test_one_worker_reads_every_example_in_file_order(inputs, policy):
    tf = import_tensorflow()
    files = shard_probe.input_files(str(inputs))
    seen = shard_probe.examples_seen(tf, tf.distribute.get_strategy(), files, policy, 4)
    assert seen == list(range(16))
