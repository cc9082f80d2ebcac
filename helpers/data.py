"""Real handwritten digits for the training lessons, with no network needed.

The seeds train on MNIST. Keras downloads it on first use and caches it in
``~/.keras/datasets/mnist.npz``; CI machines and many classrooms have no internet, so
when that cache is missing the series uses the UCI handwritten digits bundled in
``helpers/datasets/`` (1,797 real 8x8 scans, the set scikit-learn calls ``load_digits``;
see the README there). Both come back in the same shape and the notebook prints which
one it used. Reading the small bundled file needs only NumPy, which keeps worker
processes quick to start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

MNIST_CACHE = Path.home() / ".keras" / "datasets" / "mnist.npz"


@dataclass(frozen=True)
class Digits:
    """Images scaled to [0, 1] with a channel axis (N, H, W, 1), integer labels 0-9."""

    source: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    def describe(self) -> str:
        h, w = self.x_train.shape[1:3]
        return (f"{self.source}: {len(self.x_train)} training and {len(self.x_test)} test "
                f"images of {h}x{w} pixels, 10 classes")


def _load_mnist(path: Path) -> Digits:
    with np.load(path) as data:
        x_train, y_train = data["x_train"], data["y_train"]
        x_test, y_test = data["x_test"], data["y_test"]
    scale = np.float32(255.0)
    return Digits("MNIST (Keras cache)", (x_train[..., None] / scale).astype(np.float32),
                  y_train.astype(np.int64), (x_test[..., None] / scale).astype(np.float32),
                  y_test.astype(np.int64))


#: The bundled UCI digits: one row per image, 64 pixel values (0-16) and then the label.
DIGITS_FILE = Path(__file__).with_name("datasets") / "uci_digits.csv.gz"


def read_uci_digits(path: Path = DIGITS_FILE) -> tuple[np.ndarray, np.ndarray]:
    """(images N x 8 x 8 with values 0-16, labels N) from the bundled file."""
    if not path.is_file():
        raise FileNotFoundError(f"the digits file {path} is missing; restore it with "
                                "`git checkout helpers/datasets` (it ships with the series)")
    table = np.loadtxt(path, delimiter=",")
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)


def _load_uci_digits(test_fraction: float, seed: int) -> Digits:
    pixels, labels = read_uci_digits()
    images = (pixels / 16.0).astype(np.float32)[..., None]
    order = np.random.default_rng(seed).permutation(len(images))
    n_test = int(round(len(images) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return Digits("UCI handwritten digits (bundled)", images[train], labels[train],
                  images[test], labels[test])


def load_digits(prefer_mnist: bool = True, test_fraction: float = 0.2, seed: int = 0) -> Digits:
    """MNIST from the Keras cache when present (and preferred), else the bundled UCI digits."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be between 0 and 1, not {test_fraction!r}")
    if prefer_mnist and MNIST_CACHE.exists():
        return _load_mnist(MNIST_CACHE)
    return _load_uci_digits(test_fraction, seed)
