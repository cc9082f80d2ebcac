"""Results files, figures and the offline digits data."""

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers.measure import TimingResult, bar_timings  # noqa: E402
from helpers.output import Table, line_speedup, save_figure, save_results  # noqa: E402
from helpers.training import load_digits, read_uci_digits  # noqa: E402


def test_results_round_trip_with_machine_info_and_plain_values(tmp_path, capsys):
    timing = TimingResult("dot", [0.1, 0.2], flops=1e9)
    path = save_results("04_test", {"timing": timing, "n": np.int64(3), "arr": np.ones(2),
                                    "table": Table(["a"], [[1]]),
                                    "headline": {"z first": 1, "a second": 2}}, tmp_path)
    assert capsys.readouterr().out == "saved 04_test.json\n"  # its name, not this machine's path
    data = json.loads(path.read_text())
    assert list(data["results"]["headline"]) == ["z first", "a second"]  # as the notebook wrote
    assert data["results"]["n"] == 3 and data["results"]["arr"] == [1.0, 1.0]
    assert data["results"]["timing"]["median"] == pytest.approx(0.15)
    assert data["results"]["table"] == [{"a": 1}]
    assert data["machine"]["logical_cpus"] >= 1
    assert data["machine"]["versions"]["numpy"] == np.__version__


def test_a_results_name_stays_in_the_results_folder(tmp_path):
    with pytest.raises(ValueError, match="letters, digits"):
        save_results("../escape", {}, tmp_path)


def test_plots_have_labelled_axes_and_save_as_png(tmp_path):
    fig = bar_timings([TimingResult("a", [0.1, 0.2]), TimingResult("b", [0.3])], unit="ms")
    assert "ms" in fig.axes[0].get_ylabel()
    fig2 = line_speedup([1, 2, 4], {"measured": [1, 1.5, 1.8]}, xlabel="workers")
    assert fig2.axes[0].get_xlabel() == "workers" and len(fig2.axes[0].lines) == 2
    assert save_figure(fig2, "speedup", tmp_path).stat().st_size > 1000


def test_a_time_unit_is_one_the_bars_know():
    with pytest.raises(ValueError, match="unit must be"):
        bar_timings([TimingResult("a", [1.0])], unit="hours")


def test_bundled_digits_are_the_uci_test_set():
    images, labels = read_uci_digits()
    assert images.shape == (1797, 8, 8) and labels.shape == (1797,)
    assert np.array_equal(images, np.round(images)) and images.min() == 0 and images.max() == 16
    # images per digit in the UCI test set (optdigits.tes)
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_missing_digits_file_says_how_to_restore_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="git checkout helpers/datasets"):
        read_uci_digits(tmp_path / "gone.csv.gz")


def test_digits_are_real_scaled_and_split(monkeypatch, tmp_path):
    monkeypatch.setattr("helpers.training.MNIST_CACHE", tmp_path / "absent.npz")
    digits = load_digits()
    assert digits.source == "UCI handwritten digits (bundled)"
    assert digits.x_train.shape[1:] == (8, 8, 1) and digits.x_train.dtype == np.float32
    assert 0.0 <= digits.x_train.min() and digits.x_train.max() <= 1.0
    assert len(digits.x_train) + len(digits.x_test) == 1797
    assert set(np.unique(digits.y_train)) == set(range(10))


def test_mnist_cache_is_used_when_present(monkeypatch, tmp_path):
    cache = tmp_path / "mnist.npz"
    rng = np.random.default_rng(0)
    np.savez(cache, x_train=rng.integers(0, 255, (5, 28, 28), dtype=np.uint8),
             y_train=np.arange(5), x_test=np.zeros((2, 28, 28), np.uint8), y_test=np.arange(2))
    monkeypatch.setattr("helpers.training.MNIST_CACHE", cache)
    digits = load_digits()
    assert digits.source.startswith("MNIST") and digits.x_train.shape == (5, 28, 28, 1)
    assert digits.x_train.dtype == np.float32 and digits.x_train.max() <= 1.0
    assert "5 training" in digits.describe()
