"""Layer costs, and the memory of training and its measurement as notebook 13 writes them."""

import gc
from dataclasses import dataclass

import psutil
from lesson_cells import lesson

from helpers.costs import layer_cost, layer_costs
from helpers.output import Table

NB13 = lesson("13", "TrainingMemory", "MemorySteps", dataclass=dataclass, gc=gc, psutil=psutil,
              Table=Table)
TrainingMemory, MemorySteps = NB13.TrainingMemory, NB13.MemorySteps


class Tensor:
    def __init__(self, *shape):
        self.shape = shape


class Layer:
    """Just the attributes layer_cost reads, as a Keras layer has them once built."""

    def __init__(self, name, output, kernel=None, params=0):
        self.name, self.output, self._params = name, Tensor(*output), params
        if kernel is not None:
            self.kernel = Tensor(*kernel)

    def count_params(self):
        return self._params


def test_dense_conv_and_pooling_costs():
    conv = layer_cost(Layer("conv", (None, 8, 8, 8), kernel=(3, 3, 1, 8), params=80))
    assert (conv.params, conv.outputs) == (80, 512)
    assert conv.flops == 2 * 3 * 3 * 1 * 8 * 64  # one 3x3x1 window per output value
    pool = layer_cost(Layer("pool", (None, 4, 4, 8)))
    assert pool.flops == 0 and pool.outputs == 128 and pool.kind == "Layer"
    dense = layer_cost(Layer("dense", (None, 32), kernel=(128, 32), params=4128))
    assert dense.flops == 2 * 128 * 32
    sequence = layer_cost(Layer("dense3d", (None, 10, 32), kernel=(128, 32)))
    assert sequence.flops == 10 * 2 * 128 * 32  # applied at each of 10 positions


def test_costs_of_a_model():
    class Model:
        layers = [Layer("a", (None, 4), kernel=(2, 4), params=12),
                  Layer("b", (None, 3), kernel=(4, 3), params=15)]

    costs = layer_costs(Model())
    assert [c.name for c in costs] == ["a", "b"]
    assert [c.flops for c in costs] == [16, 24]


def test_training_memory_parts():
    m = TrainingMemory(params=1000, activations_per_example=50, batch=4, optimizer="adam")
    assert m.parts() == {"weights": 4000, "gradients": 4000, "optimizer states": 8000,
                         "activations": 800}
    assert m.total == 16800
    assert TrainingMemory(params=10, optimizer="sgd").parts()["optimizer states"] == 0
    assert TrainingMemory(params=10, optimizer="momentum").parts()["optimizer states"] == 40


def test_memory_steps_record_growth_from_any_reader():
    readings = iter([100, 150, 150, 400])
    steps = MemorySteps(lambda: next(readings))
    assert steps.step("a", lambda: "kept") == "kept"
    steps.step("b")
    steps.step("c")
    assert steps.steps == [("a", 50), ("b", 0), ("c", 250)]
    table = steps.table({"a": 100, "b": 1, "c": 250})
    assert table.rows[0] == ["a", 50 / 1e6, 100 / 1e6, 0.5]


def test_memory_steps_read_this_process_by_default():
    steps = MemorySteps()
    kept = steps.step("64 MB", lambda: bytearray(64 * 2**20))
    assert steps.last > 10e6 and steps.steps[0][1] > 32 * 2**20 and len(kept) == 64 * 2**20


def test_notebook_14_dynamic_loss_scale_is_keras_rule():
    """Notebook 14's `dynamic_scale` against Keras's own `LossScaleOptimizer`: halve on an
    overflowing float16 gradient, double after `dynamic_growth_steps` clean steps."""
    import numpy as np

    from helpers import import_tensorflow

    tf = import_tensorflow()
    import keras

    nb = lesson("14", "dynamic_scale", np=np, F16=np.finfo(np.float16))
    largest = [1.0, 1.0, 1e4, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 1.0]  # 1e4 x 16 overflows float16
    ours = nb.dynamic_scale(largest, scale=16.0, growth_steps=3)
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.0), initial_scale=16.0,
                                                    dynamic_growth_steps=3)
    variable = keras.Variable(np.zeros(1, np.float32))
    optimizer.build([variable])
    theirs = []
    for g in largest:
        theirs.append(float(optimizer.dynamic_scale.numpy()))
        with np.errstate(over="ignore"):  # the float16 gradient of the scaled loss: inf or not
            scaled = float(np.float16(g * theirs[-1]))
        optimizer.apply([tf.constant([scaled], tf.float32)], [variable])
    assert ours == theirs == [16, 16, 16, 8, 8, 8, 16, 16, 16, 32]
