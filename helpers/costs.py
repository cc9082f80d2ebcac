"""Models of cost that later notebooks reuse; each formula is first written in the notebook
that teaches it (10-13), and each part here says which.

* the latency-bandwidth (alpha-beta) model and the two gradient exchanges, parameter
  server and ring all-reduce (derived in notebook 10, reused in 11 and 12);
* the byte counter of a hand-written all-reduce (:class:`Traffic`, notebook 11);
* what each layer of a Keras model costs, and where the memory of training goes
  (notebook 13, which writes ZeRO's arithmetic in a cell).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from helpers.machine import require_int, require_number
from helpers.output import Table

# -- The latency-bandwidth model and the two gradient exchanges, as notebook 10 derives them.

def _check_workers(n: int, what: str = "workers") -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"the number of {what} must be an int >= 1, not {n!r}")


def _check_nonneg(value: float, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{what} must be a number, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be finite and >= 0, not {value!r}")


@dataclass(frozen=True)
class AlphaBeta:
    """A cost that is a straight line in the size: ``seconds = alpha + beta * size``.

    For a network link, size is bytes: ``alpha`` is the latency of one message (s) and
    ``beta`` the seconds per byte (1 / bandwidth). For a training step, size is examples:
    ``alpha`` the fixed cost per step, ``beta`` the cost of each example.
    """

    alpha: float
    beta: float
    name: str = ""

    def __post_init__(self) -> None:
        _check_nonneg(self.alpha, "alpha")
        _check_nonneg(self.beta, "beta")

    def time(self, size: float) -> float:
        """Seconds for one message (or step) of ``size``."""
        _check_nonneg(size, "size")
        return self.alpha + self.beta * size

    @property
    def bandwidth(self) -> float:
        """Units (bytes, examples) per second once the fixed cost is paid."""
        return math.inf if self.beta == 0 else 1.0 / self.beta

    @property
    def half_size(self) -> float:
        """The size at which fixed and per-unit costs are equal (``alpha / beta``):
        smaller messages are latency-bound, larger ones bandwidth-bound."""
        return math.inf if self.beta == 0 else self.alpha / self.beta

    @classmethod
    def network(cls, name: str, latency_s: float, gbit_per_s: float) -> AlphaBeta:
        """A link from its datasheet numbers: latency in seconds, speed in Gbit/s."""
        _check_nonneg(latency_s, "latency_s")
        _check_nonneg(gbit_per_s, "gbit_per_s")
        if gbit_per_s == 0:
            raise ValueError("a link needs a speed > 0 Gbit/s")
        return cls(latency_s, 8.0 / (gbit_per_s * 1e9), name)


def fit_alpha_beta(
    sizes: Sequence[float], seconds: Sequence[float], transfers: int = 1, name: str = "fitted",
) -> AlphaBeta:
    """Fit ``seconds = transfers * (alpha + beta * size)`` to measurements.

    ``transfers`` is how many one-way messages each measurement contains (a push followed
    by a pull is 2). The fit minimises *relative* errors, so the small sizes (which
    decide alpha) count as much as the large ones (which decide beta) even though their
    times are orders of magnitude apart; alpha and beta are kept >= 0.
    """
    x = np.asarray(sizes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if x.ndim != 1 or x.shape != t.shape:
        raise ValueError(f"sizes and seconds must be two lists of equal length, "
                         f"not {x.shape} and {t.shape}")
    if len(np.unique(x)) < 2:
        raise ValueError("fitting a line needs measurements at two or more different sizes")
    if np.any(x < 0) or np.any(t <= 0) or not np.all(np.isfinite(t)):
        raise ValueError("sizes must be >= 0 and times finite and > 0")
    _check_workers(transfers, "transfers")
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
    n = workers
    return 2 * (n - 1) * link.alpha + 2 * (n - 1) / n * nbytes * link.beta


def parameter_server_seconds(
    workers: int, nbytes: float, link: AlphaBeta, servers: int = 1,
) -> float:
    """Push ``nbytes`` of gradients from every worker to ``servers``, pull the weights back:
    the busier endpoint sets the time (derived in notebook 10)."""
    messages = max(workers, servers)
    load = max(workers / servers, 1.0)
    return 2 * (messages * link.alpha + load * nbytes * link.beta)


# -- Count the bytes every device sends and receives in a collective.

def tensor_nbytes(x: Any) -> int:
    """Bytes of a NumPy array, TensorFlow tensor or MXNet NDArray (elements x item size)."""
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    if shape is None or dtype is None:
        raise ValueError(f"tensor_nbytes needs an array with .shape and .dtype, not {x!r}")
    count = 1
    for dim in tuple(shape):
        count *= int(dim)
    import numpy as np  # noqa: PLC0415

    size = getattr(dtype, "size", None)  # TensorFlow DType
    itemsize = int(size) if isinstance(size, int) else np.dtype(dtype).itemsize
    return count * itemsize


@dataclass
class Traffic:
    """Every transfer of a collective: who sent how many bytes to whom, in order."""

    devices: Sequence[Hashable]
    transfers: list[tuple[Hashable, Hashable, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.devices = list(self.devices)
        if not self.devices or len(set(map(str, self.devices))) != len(self.devices):
            raise ValueError(f"Traffic needs distinct devices, not {self.devices!r}")

    def record(self, src: Hashable, dst: Hashable, nbytes: int) -> None:
        """Note one transfer of ``nbytes`` from ``src`` to ``dst`` (a copy to itself is free)."""
        for device in (src, dst):
            if device not in self.devices:
                raise ValueError(f"unknown device {device!r}; the devices are {self.devices}")
        require_int("nbytes", nbytes, 0)
        if src != dst:
            self.transfers.append((src, dst, nbytes))

    def watch(self, ops: Any, nbytes: Callable[[Any], int] = tensor_nbytes) -> Any:
        """``ops`` (an object with ``move(x, src, dst)`` and other operations) whose
        ``move`` also records its transfer; every other attribute is ``ops``'s own."""
        return _Watched(ops, self, nbytes)

    def sent(self, device: Hashable) -> int:
        return sum(b for s, _, b in self.transfers if s == device)

    def received(self, device: Hashable) -> int:
        return sum(b for _, d, b in self.transfers if d == device)

    def per_device(self) -> dict[str, tuple[int, int]]:
        """``{device: (bytes sent, bytes received)}``."""
        return {str(d): (self.sent(d), self.received(d)) for d in self.devices}

    def reset(self) -> None:
        self.transfers.clear()


class _Watched:
    """Stands in for a set of operations and counts what its ``move`` carries."""

    def __init__(self, ops: Any, traffic: Traffic, nbytes: Callable[[Any], int]) -> None:
        self._ops, self._traffic, self._nbytes = ops, traffic, nbytes

    def move(self, x: Any, src: Any, dst: Any) -> Any:
        self._traffic.record(src, dst, self._nbytes(x))
        return self._ops.move(x, src, dst)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ops, name)


def traffic_table(counts: dict[str, Sequence[tuple[int, int]]],
                  devices: Sequence[Hashable]) -> Table:
    """One row per device, a sent and a received column per scheme."""
    columns = ["device"]
    for scheme in counts:
        columns += [f"{scheme} sent", f"{scheme} received"]
    table = Table(columns)
    for i, device in enumerate(devices):
        row: list[Any] = [str(device)]
        for per_device in counts.values():
            row += list(per_device[i])
        table.append(row)
    return table


# -- What each layer of a Keras model costs: parameters, FLOPs and activations per example.

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


# -- Where the memory of training goes, and what sharding it across replicas saves.

#: Optimizer states per parameter.
OPTIMIZER_STATES = {"sgd": 0, "momentum": 1, "adam": 2}

#: Published model sizes (parameters) and where they were published.
PUBLISHED_MODELS: tuple[tuple[str, float, str], ...] = (
    ("ResNet-50", 25.6e6, "He et al., 2016"),
    ("BERT-large", 340e6, "Devlin et al., 2019"),
    ("GPT-2 XL", 1.5e9, "Radford et al., 2019"),
    ("Llama 2 7B", 6.7e9, "Touvron et al., 2023"),
    ("GPT-3", 175e9, "Brown et al., 2020"),
)

@dataclass(frozen=True)
class TrainingMemory:
    """Bytes of weights, gradients, optimizer states and activations for one replica."""

    params: float
    activations_per_example: float = 0.0
    batch: int = 1
    weight_bytes: int = 4
    grad_bytes: int = 4
    optimizer: str = "adam"
    state_bytes: int = 4
    activation_bytes: int = 4

    def __post_init__(self) -> None:
        require_number("params", self.params, minimum=0)
        require_number("activations_per_example", self.activations_per_example, minimum=0)
        require_int("batch", self.batch, 1)
        for name in ("weight_bytes", "grad_bytes", "state_bytes", "activation_bytes"):
            require_int(name, getattr(self, name), 1)
        if self.optimizer not in OPTIMIZER_STATES:
            raise ValueError(f"optimizer must be one of {sorted(OPTIMIZER_STATES)}, "
                             f"not {self.optimizer!r}")

    @property
    def weights(self) -> float:
        return self.params * self.weight_bytes

    @property
    def gradients(self) -> float:
        return self.params * self.grad_bytes

    @property
    def optimizer_states(self) -> float:
        return self.params * OPTIMIZER_STATES[self.optimizer] * self.state_bytes

    @property
    def activations(self) -> float:
        return self.activations_per_example * self.batch * self.activation_bytes

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer_states + self.activations

    def parts(self) -> dict[str, float]:
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer states": self.optimizer_states, "activations": self.activations}

    def table(self) -> Table:
        """One row per part, in MB and as a share of the total."""
        table = Table(["part", "MB", "share"])
        total = self.total or 1.0
        for name, value in self.parts().items():
            table.append([name, value / 1e6, f"{value / total:.0%}"])
        table.append(["total", self.total / 1e6, "100%"])
        return table
