"""What each layer of a Keras model costs: parameters, FLOPs and activations per example.

The cost models of notebooks 12 and 13 need three numbers per layer, read from the
model itself rather than typed in: how many parameters it holds (they set the gradient
bytes to all-reduce and the memory of weights, gradients and optimizer states), how
many floating-point operations its forward pass does per example (compute time), and
how many values it outputs per example (the activations kept for the backward pass).

Only dense and 2-D convolution layers do arithmetic worth counting; pooling, flattening
and activations are counted as zero FLOPs (a few comparisons or additions per value,
small next to the products). A multiply-add is two FLOPs. The layers are read by their
attributes (``kernel``, ``output``), so any object that has them works, which keeps the
tests free of Keras.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LayerCost:
    """One layer: parameters, forward FLOPs per example, output values per example."""

    name: str
    kind: str
    params: int
    flops: float
    outputs: int


def _shape(tensor: Any) -> tuple[int, ...]:
    dims = tuple(getattr(tensor, "shape", ()))
    return tuple(1 if d is None else int(d) for d in dims)


def layer_cost(layer: Any) -> LayerCost:
    """The cost of one built layer (see the module's docstring for what is counted)."""
    out = _shape(layer.output)[1:]  # without the batch axis
    outputs = math.prod(out) if out else 1
    kind = type(layer).__name__
    kernel = getattr(layer, "kernel", None)
    flops = 0.0
    if kernel is not None:
        k = _shape(kernel)
        if len(k) == 2:  # dense: (in, out), applied at every position of the leading axes
            flops = 2.0 * k[0] * k[1] * (outputs // k[1])
        elif len(k) == 4:  # conv 2-D: (kh, kw, in, out), one window per output position
            flops = 2.0 * k[0] * k[1] * k[2] * outputs
    return LayerCost(layer.name, kind, int(layer.count_params()), flops, int(outputs))


def layer_costs(model_or_layers: Any) -> list[LayerCost]:
    """:func:`layer_cost` for every layer of a built model (or a list of layers)."""
    layers: Iterable[Any] = getattr(model_or_layers, "layers", model_or_layers)
    return [layer_cost(layer) for layer in layers]


def training_flops_per_example(costs: list[LayerCost]) -> float:
    """Forward plus backward FLOPs per example: about three forward passes.

    The backward pass computes two products per layer (the gradient with respect to
    the input and to the weights), each as large as the forward product.
    """
    return 3.0 * sum(c.flops for c in costs)
