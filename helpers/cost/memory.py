"""Where the memory of training goes, and what sharding it across replicas saves.

Training holds four things in device memory:

* **weights**: one value per parameter;
* **gradients**: one per parameter, computed by the backward pass;
* **optimizer states**: SGD none, momentum one, Adam two (first and second moments)
  per parameter;
* **activations**: the outputs the forward pass keeps for the backward pass, which grow
  with the batch.

The first three grow with the model, not the batch; with plain data parallelism every
replica holds all of them. ZeRO (Rajbhandari et al., 2019) shards them over the ``N``
data-parallel replicas instead: stage 1 the optimizer states, stage 2 the gradients as
well, stage 3 the weights as well, each replica keeping ``1 / N`` of what is sharded and
fetching the rest when it needs it (more communication, for much less memory).
Notebook 13 writes that arithmetic (``zero_bytes_per_replica``) in a cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.checks import require_int, require_number
from helpers.table import Table

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
