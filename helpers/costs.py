"""Cost models that more than one notebook uses, each first written in the notebook that teaches it:
the latency-bandwidth (alpha-beta) model and the two gradient exchanges (notebook 10; reused in 11
and 12), the byte counter of a hand-written collective (11, 13), what each layer of a Keras model
costs (13, and 12's step-timing worker), ZeRO's bytes per replica (13, reused in 14)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from helpers.machine import require_number


@dataclass(frozen=True)
class AlphaBeta:
    """A cost that is a straight line in the size: ``seconds = alpha + beta * size``. For a
    link, size is bytes: ``alpha`` the latency of one message (s), ``beta`` seconds per byte
    (1 / bandwidth). For a training step, size is examples: ``alpha`` the fixed cost per step."""
    alpha: float
    beta: float
    name: str = ""

    def __post_init__(self) -> None:
        require_number("alpha", self.alpha, minimum=0)
        require_number("beta", self.beta, minimum=0)

    def time(self, size: float) -> float:
        return self.alpha + self.beta * size

    #: Units (bytes, examples) per second once the fixed cost is paid.
    bandwidth = property(lambda self: math.inf if self.beta == 0 else 1.0 / self.beta)
    #: ``alpha / beta``, where both costs are equal: smaller messages are latency-bound.
    half_size = property(lambda self: math.inf if self.beta == 0 else self.alpha / self.beta)

    @classmethod
    def network(cls, name: str, latency_s: float, gbit_per_s: float) -> AlphaBeta:
        """A link from its datasheet numbers: latency in seconds, speed in Gbit/s."""
        require_number("gbit_per_s (the link's speed)", gbit_per_s, above=0)
        return cls(latency_s, 8.0 / (gbit_per_s * 1e9), name)


def fit_alpha_beta(sizes: Sequence[float], seconds: Sequence[float], transfers: int = 1,
                   name: str = "fitted") -> AlphaBeta:
    """Fit ``seconds = transfers * (alpha + beta * size)``, ``transfers`` one-way messages per
    measurement (a push and a pull: 2). It minimises *relative* errors, so the small sizes (which
    decide alpha) count as much as the large ones (which decide beta); both are kept >= 0."""
    x, t = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    if len(np.unique(x)) < 2:
        raise ValueError("fitting a line needs measurements at two or more different sizes")
    w = 1.0 / t
    design = np.stack([np.ones_like(x), x], axis=1) * w[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if beta < 0:  # sizes do not matter in this range: a constant
        alpha, beta = float(np.sum(w) / np.sum(w * w)), 0.0
    elif alpha < 0:  # no visible fixed cost: a line through the origin
        alpha, beta = 0.0, float(np.sum(w * x) / np.sum(w * w * x * x))
    return AlphaBeta(float(alpha) / transfers, float(beta) / transfers, name)


def ring_allreduce_seconds(workers: int, nbytes: float, link: AlphaBeta) -> float:
    """Ring all-reduce of ``nbytes`` per worker: 2 (n - 1) steps of ``nbytes / n`` each
    (reduce-scatter then all-gather), derived in notebook 10."""
    return 2 * (workers - 1) * link.alpha + 2 * (workers - 1) / workers * nbytes * link.beta


def parameter_server_seconds(workers: int, nbytes: float, link: AlphaBeta,
                             servers: int = 1) -> float:
    """Push ``nbytes`` of gradients from every worker to ``servers``, pull the weights back:
    the busier endpoint sets the time (derived in notebook 10)."""
    messages, load = max(workers, servers), max(workers / servers, 1.0)
    return 2 * (messages * link.alpha + load * nbytes * link.beta)


def tensor_nbytes(x: Any) -> int:
    """Bytes of a NumPy array, TensorFlow tensor or MXNet NDArray (elements x item size)."""
    size = getattr(x.dtype, "size", None)  # a TensorFlow DType has .size
    itemsize = size if isinstance(size, int) else np.dtype(x.dtype).itemsize
    return math.prod(int(d) for d in x.shape) * itemsize


@dataclass
class Traffic:
    """Every transfer of a collective: who sent how many bytes to whom, in order."""
    devices: Sequence[Hashable]
    transfers: list[tuple[Hashable, Hashable, int]] = field(default_factory=list)

    def record(self, src: Hashable, dst: Hashable, nbytes: int) -> None:
        """Note one transfer of ``nbytes`` from ``src`` to ``dst`` (a copy to itself is free)."""
        if src != dst:
            self.transfers.append((src, dst, nbytes))

    def watch(self, ops: Any, nbytes: Callable[[Any], int] = tensor_nbytes) -> Any:
        """``ops`` (with ``move(x, src, dst)`` among its operations), its ``move`` recorded."""
        traffic = self

        class Watched:
            def move(self, x: Any, src: Any, dst: Any) -> Any:
                traffic.record(src, dst, nbytes(x))
                return ops.move(x, src, dst)

            def __getattr__(self, name: str) -> Any:
                return getattr(ops, name)

        return Watched()

    def per_device(self) -> dict[str, tuple[int, int]]:
        """``{device: (bytes sent, bytes received)}``."""
        return {str(d): (sum(b for s, _, b in self.transfers if s == d),
                         sum(b for _, r, b in self.transfers if r == d)) for d in self.devices}


@dataclass(frozen=True)
class LayerCost:
    """One layer: parameters, forward FLOPs per example, output values per example."""
    name: str
    kind: str
    params: int
    flops: float
    outputs: int


def layer_cost(layer: Any) -> LayerCost:
    """The cost of one built layer: a dense kernel ``(in, out)`` is applied at every position
    of the leading axes, a 2-D convolution's ``(kh, kw, in, out)`` once per output position;
    either way each output value is a product over all but the kernel's last axis."""
    out = [1 if d is None else int(d) for d in layer.output.shape[1:]]  # without the batch
    outputs = math.prod(out)
    kernel = getattr(layer, "kernel", None)
    k = [int(d) for d in kernel.shape] if kernel is not None else []
    flops = 2.0 * math.prod(k[:-1]) * outputs if len(k) in (2, 4) else 0.0
    return LayerCost(layer.name, type(layer).__name__, int(layer.count_params()), flops, outputs)


def layer_costs(model_or_layers: Any) -> list[LayerCost]:
    return [layer_cost(layer) for layer in getattr(model_or_layers, "layers", model_or_layers)]


def zero_bytes_per_replica(params: float, replicas: int, stage: int, weight_bytes: float = 2,
                           grad_bytes: float = 2, optimizer_bytes: float = 12) -> float:
    """Model-state bytes per replica under ZeRO ``stage`` (0: plain data parallelism): stage 1
    shards the optimizer's states over the ``replicas``, stage 2 the gradients too, stage 3 the
    weights too. The defaults are the ZeRO paper's mixed precision with Adam: 16-bit weights and
    gradients, 12 bytes of float32 master weights and Adam's two states."""
    weights = params * weight_bytes / (replicas if stage >= 3 else 1)
    grads = params * grad_bytes / (replicas if stage >= 2 else 1)
    states = params * optimizer_bytes / (replicas if stage >= 1 else 1)
    return weights + grads + states
