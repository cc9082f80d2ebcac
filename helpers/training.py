"""The data, the small model and the custom training step that every training lesson shares.

The multi-worker lessons compare *strategies*, so the model, the data and the step are the same
under each: a small Keras 3 CNN on handwritten digits and a ``tf.GradientTape`` step. A custom
loop, because Keras 3's ``fit`` runs neither under ``MultiWorkerMirroredStrategy`` with two or
more workers nor under ``ParameterServerStrategy``. Data order is a pure function of
``(seed, step)``, so a run resumed from a checkpoint sees the batches an uninterrupted run sees.
The digits are MNIST when Keras has cached it, else the UCI digits bundled in
``helpers/datasets/`` (1,797 real 8x8 scans): CI machines and many classrooms have no internet."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from helpers.frameworks import import_tensorflow

MNIST_CACHE = Path.home() / ".keras" / "datasets" / "mnist.npz"
#: The bundled UCI digits: one row per image, 64 pixel values (0-16) and then the label.
DIGITS_FILE = Path(__file__).with_name("datasets") / "uci_digits.csv.gz"


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


def read_uci_digits(path: Path = DIGITS_FILE) -> tuple[np.ndarray, np.ndarray]:
    """(images N x 8 x 8 with values 0-16, labels N) from the bundled file."""
    if not path.is_file():
        raise FileNotFoundError(f"the digits file {path} is missing; restore it with "
                                "`git checkout helpers/datasets` (it ships with the series)")
    table = np.loadtxt(path, delimiter=",")
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)


def load_digits(prefer_mnist: bool = True, test_fraction: float = 0.2, seed: int = 0) -> Digits:
    """MNIST from the Keras cache when present (and preferred), else the bundled UCI digits,
    split at random (``seed``) into training and test images."""
    if prefer_mnist and MNIST_CACHE.exists():
        with np.load(MNIST_CACHE) as data:
            x, y, xt, yt = (data[k] for k in ("x_train", "y_train", "x_test", "y_test"))
        return Digits("MNIST (Keras cache)", x[..., None] / np.float32(255), y.astype(np.int64),
                      xt[..., None] / np.float32(255), yt.astype(np.int64))
    pixels, labels = read_uci_digits()
    images = (pixels / 16.0).astype(np.float32)[..., None]
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = np.split(order, [int(round(len(images) * test_fraction))])
    return Digits("UCI handwritten digits (bundled)", images[train], labels[train],
                  images[test], labels[test])


def training_arrays(examples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """The first ``examples`` training images of :func:`load_digits` (repeated if there are
    fewer) as (N, H, W, 1) float32, their int32 labels, and the data's source."""
    digits = load_digits(seed=seed)
    index = np.arange(examples) % len(digits.x_train)
    return digits.x_train[index], digits.y_train[index].astype(np.int32), digits.source


def build_model(input_shape: tuple[int, ...], classes: int = 10, seed: int = 0) -> Any:
    """A small Keras 3 CNN whose initial weights depend on ``seed`` only: each layer gets its
    own seeded initializer, since a global seed would also fix every worker's data shuffle.
    Build it inside ``strategy.scope()``, so the strategy creates its variables."""
    import_tensorflow()
    import keras  # noqa: PLC0415  (after TensorFlow's quiet import)

    def init(i: int) -> Any:
        return keras.initializers.GlorotUniform(seed=seed * 100 + i)

    return keras.Sequential([
        keras.Input(shape=tuple(input_shape)),
        keras.layers.Conv2D(8, 3, padding="same", activation="relu", kernel_initializer=init(0)),
        keras.layers.MaxPooling2D(2), keras.layers.Flatten(),
        keras.layers.Dense(32, activation="relu", kernel_initializer=init(1)),
        keras.layers.Dense(classes, kernel_initializer=init(2))])


def make_optimizer(learning_rate: float = 0.01) -> Any:
    """Adam, a Keras 3 optimizer (its slots are created, and mirrored, on first use)."""
    import keras  # noqa: PLC0415

    return keras.optimizers.Adam(learning_rate)


def make_dataset(x: np.ndarray, y: np.ndarray, batch: int, seed: int | None = 0,
                 start_step: int = 0) -> Any:
    """Shuffled, repeated batches of ``batch`` examples, starting at batch ``start_step``.
    ``batch`` is the *global* batch under MultiWorkerMirroredStrategy and one worker's batch
    under ParameterServerStrategy. Sharding is by data (no input files needed); ``seed=None``
    shuffles differently in every process, as long as no global seed is set."""
    tf = import_tensorflow()
    dataset = (tf.data.Dataset.from_tensor_slices((x, y))
               .shuffle(len(x), seed=seed, reshuffle_each_iteration=True).repeat()
               .batch(batch, drop_remainder=True).skip(start_step))
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    options.deterministic = True
    return dataset.with_options(options)


def make_update_counter() -> Any:
    """A step counter that every update increments once (create it in ``strategy.scope()``),
    the step number a checkpoint stores. ``ONLY_FIRST_REPLICA``: one increment per synchronous
    step under mirrored strategies; on a parameter server, one atomic increment per update."""
    tf = import_tensorflow()
    return tf.Variable(0, dtype=tf.int64, trainable=False, name="updates",
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


def make_step_fn(model: Any, optimizer: Any, global_batch: int,
                 counter: Any) -> Callable[[Any, Any], Any]:
    """The per-replica step: forward, loss averaged over the *global* batch, backward, update.

    Dividing by the global batch (``tf.nn.compute_average_loss``) rather than by the replica's own
    batch is what makes the summed gradients of all replicas equal the gradient of one big batch.
    Keras 3's optimizer all-reduces the gradients itself when it runs in a replica context.

    Returns ``(loss, staleness)``: the updates *other* workers applied between this step's read of
    ``counter`` (before the weights) and its increment (once its update landed). A mirrored strategy
    reads and increments it within one synchronous step, so there it is 0 by construction; only an
    asynchronous strategy (notebook 07) can make it larger."""
    tf = import_tensorflow()
    import keras  # noqa: PLC0415

    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    variables = model.trainable_variables

    def step_fn(x: Any, y: Any) -> Any:
        version_read = counter.read_value()
        # Ops on different variables keep no order of their own (auto_control_deps.py): the
        # forward pass's weight reads wait for the counter read only inside this block.
        with tf.control_dependencies([version_read]), tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=global_batch)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(list(zip(grads, variables, strict=True)))
        # Reading a variable is ordered after the update of that variable, and the
        # counter moves only after those reads: after this step's update has landed.
        landed = [tf.identity(getattr(v, "value", v)) for v in variables]
        with tf.control_dependencies(landed):
            version_after = counter.assign_add(1)
        return loss, version_after - 1 - version_read

    return step_fn


def make_train_step(strategy: Any, model: Any, optimizer: Any, global_batch: int,
                    counter: Any) -> Callable[[Any], Any]:
    """One distributed training step as a ``tf.function`` taking a (distributed) iterator.
    ``strategy.run`` runs the step on every replica with its part of the batch;
    ``strategy.reduce(SUM)`` adds the replicas' losses (each already divided by the
    global batch) into the loss of the whole batch. Returns ``(loss, staleness)``."""
    tf = import_tensorflow()
    step_fn = make_step_fn(model, optimizer, global_batch, counter)

    @tf.function
    def train_step(iterator: Any) -> Any:
        x, y = next(iterator)
        loss, staleness = strategy.run(step_fn, args=(x, y))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
        staleness = strategy.reduce(  # the same on every replica: the mean is that value
            tf.distribute.ReduceOp.MEAN, tf.cast(staleness, tf.float32), axis=None)
        return loss, tf.cast(tf.round(staleness), tf.int64)

    return train_step


def weights_checksum(model_or_weights: Any) -> str:
    """SHA-256 of all weights' bytes (first 16 hex digits): equal only if bit-identical."""
    weights = getattr(model_or_weights, "get_weights", lambda: model_or_weights)()
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(w).tobytes() for w in weights))
    return digest.hexdigest()[:16]
