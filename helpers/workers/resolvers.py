"""Where a TensorFlow worker program learns its cluster from: TF_CONFIG, SLURM or Kubernetes.

Worker-side code: the programs in this folder call :func:`cluster_resolver` once at
start-up, and the same program then runs unchanged under the series' local clusters
(which set ``TF_CONFIG``), under ``srun`` or in a Kubernetes pod.
"""

from __future__ import annotations

from typing import Any

RESOLVERS = ("tf_config", "slurm", "kubernetes")


def cluster_resolver(kind: str = "tf_config") -> Any:
    """TensorFlow's cluster resolver of ``kind``: where a program learns its cluster from.

    ``tf_config`` reads ``TF_CONFIG`` (this module's local clusters, and any launcher
    that sets it); ``slurm`` reads SLURM's job variables inside ``srun``; ``kubernetes``
    asks the Kubernetes API (needs the ``kubernetes`` package). The program that uses
    the resolver is the same in all three cases.
    """
    if kind not in RESOLVERS:
        raise ValueError(f"unknown cluster resolver {kind!r}; use one of {', '.join(RESOLVERS)}")
    from helpers.frameworks import import_tensorflow  # noqa: PLC0415  (TF only when needed)

    resolvers = import_tensorflow().distribute.cluster_resolver
    if kind == "slurm":
        return resolvers.SlurmClusterResolver()
    if kind == "kubernetes":
        return resolvers.KubernetesClusterResolver()
    return resolvers.TFConfigClusterResolver()
