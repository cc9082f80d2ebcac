"""Helpers for the notebooks of the series on parallel and distributed deep learning.

This face exports what more than one notebook uses (``from helpers import get_profile,
requirements_banner``); a name one notebook alone needs is imported from its module, so
the import line says which file to open. The folders follow the course:

* the machine and the series: versions, profiles, tables, results, data;
* :mod:`helpers.devices`, :mod:`helpers.placement`: devices and where ops ran (notebooks 01-05);
* :mod:`helpers.measure`: timing, BLAS and threads, bandwidth, collectives (03-05, 10-13);
* :mod:`helpers.processes`, :mod:`helpers.tf_cluster`, :mod:`helpers.mx_cluster`,
  :mod:`helpers.exposure`: clusters of real processes (06-12);
* :mod:`helpers.costs`: what later notebooks reuse of the cost models 10-13 derive;
* :mod:`helpers.workers`: the programs cluster processes run (``python -m helpers.workers.NAME``).

Importing this package imports neither TensorFlow nor MXNet nor matplotlib: each loads
when a function first needs it, so the worker processes of a cluster start quickly.
"""

from helpers import training
from helpers.costs import AlphaBeta, Traffic, fit_alpha_beta, ring_allreduce_seconds
from helpers.devices import (
                             context_pair,
                             list_devices,
                             nvidia_smi,
                             parse_device,
                             physical_gpu_count,
                             requirements_banner,
)
from helpers.exposure import network_banner
from helpers.frameworks import import_mxnet, import_tensorflow, mxnet_import_settings
from helpers.machine import cpu_cores
from helpers.measure import bar_timings, benchmark, busy_threads
from helpers.mx_cluster import LocalMXCluster, train_on_cluster
from helpers.output import Table, line_speedup, save_figure, save_results, show_source
from helpers.placement import capture_fds, capture_placement
from helpers.processes import leftover_processes
from helpers.profiles import get_profile
from helpers.tf_cluster import LocalTFCluster, gpu_task_env
from helpers.training import load_digits
from helpers.workers.common import TIMING_DONE, parse_results

__all__ = [
    "TIMING_DONE", "AlphaBeta", "LocalMXCluster", "LocalTFCluster", "Table", "Traffic",
    "bar_timings", "benchmark", "busy_threads", "capture_fds", "capture_placement", "context_pair",
    "cpu_cores", "fit_alpha_beta", "get_profile", "gpu_task_env", "import_mxnet",
    "import_tensorflow", "leftover_processes", "line_speedup", "list_devices", "load_digits",
    "mxnet_import_settings", "network_banner", "nvidia_smi", "parse_device", "parse_results",
    "physical_gpu_count", "requirements_banner", "ring_allreduce_seconds", "save_figure",
    "save_results", "show_source", "train_on_cluster", "training",
]
