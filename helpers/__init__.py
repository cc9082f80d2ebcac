"""Helpers for the notebooks of the series on parallel and distributed deep learning.

Notebooks import every name they use from here (``from helpers import get_profile,
requirements_banner``); the folders show where each one lives and follow the course:

* the machine and the series: versions, profiles, tables, results, data;
* :mod:`helpers.devices`: devices and placement (notebooks 01-05);
* :mod:`helpers.measure`: timing, BLAS, bandwidth, the seed's matrix power (03-05, 10-13);
* :mod:`helpers.cluster`: clusters of real processes (06-11);
* :mod:`helpers.cost`: models of cost (10-13);
* :mod:`helpers.workers`: the programs cluster processes run (``python -m helpers.workers.NAME``).

Importing this package imports neither TensorFlow nor MXNet nor matplotlib: each loads
when a function first needs it, so the worker processes of a cluster start quickly.
"""

from helpers import training
from helpers.capture import capture_fds, capture_log
from helpers.checks import require_int, require_number
from helpers.cluster.exposure import ExposureError, network_banner
from helpers.cluster.mx_cluster import LocalMXCluster, dmlc_env, shell_commands, train_on_cluster
from helpers.cluster.processes import ProcessGroup, describe_exit, leftover_processes
from helpers.cluster.tf_cluster import LocalTFCluster, cluster_spec, gpu_task_env, tf_config
from helpers.cost.communication import (
    AlphaBeta,
    amdahl_speedup,
    compute_seconds,
    fit_alpha_beta,
    karp_flatt,
    parameter_server_seconds,
    ring_allreduce_seconds,
    step_seconds,
)
from helpers.cost.data_parallel import (
    accumulation_seconds,
    critical_batch,
    critical_batch_from_rates,
    overlap_bounds,
)
from helpers.cost.layers import LayerCost, costs_table, layer_costs, training_flops_per_example
from helpers.cost.memory import (
    OPTIMIZER_STATES,
    PUBLISHED_MODELS,
    TrainingMemory,
    zero_bytes_per_replica,
)
from helpers.cost.pipeline import bubble_fraction, gpipe_schedule
from helpers.cost.roofline import OpPoint, Roofline, elementwise_cost, matmul_cost
from helpers.cost.traffic import (
    Traffic,
    naive_allreduce_bytes,
    ring_allreduce_bytes,
    tensor_nbytes,
    traffic_table,
)
from helpers.data import load_digits
from helpers.devices.inventory import (
    GPUCard,
    cpu_cores,
    gpu_cards,
    list_devices,
    nvidia_smi,
    physical_gpu_count,
    try_all_gpus,
    try_gpu,
)
from helpers.devices.logical import (
    DevicePlan,
    plan_devices,
    requirements_banner,
    use_logical_cpus,
    use_virtual_gpus,
)
from helpers.devices.mxnet_contexts import ContextPair, context_pair
from helpers.devices.names import DeviceName, mxnet_context, parse_device
from helpers.devices.placement import Placement, capture_placement, parse_placement
from helpers.devices.strategies import mirrored_over, replica_devices
from helpers.environment import broken_pins, diagnose, pin_report, read_pins
from helpers.frameworks import (
    apply_numpy_fix,
    import_mxnet,
    import_tensorflow,
    mxnet_import_settings,
    mxnet_route,
)
from helpers.measure.bandwidth import CopyRoute, copy_sweep
from helpers.measure.blas import (
    GENERIC_KERNELS,
    blas_libraries,
    busy_threads,
    kernels_of,
    probe_mxnet_dot,
    suggested_coretype,
)
from helpers.measure.collectives import comparison_table, plot_comparison, round_trips, slowest
from helpers.measure.matpow import (
    FLOAT32_RTOL,
    TF32_RTOL,
    check_matpow_sum,
    device_memory_mb,
    entry_log10,
    largest_safe_n,
    matpow,
    matpow_flops,
    overflows,
    relative_error,
    require_fits_in_memory,
    true_power,
)
from helpers.measure.memory import MemorySteps, rss_bytes
from helpers.measure.pipeline import Span, Timeline, run_gpipe
from helpers.measure.timing import Timer, TimingResult, benchmark
from helpers.plots import bar_timings, line_bandwidth, line_speedup, save_figure
from helpers.profiles import Profile, detect_profile_name, get_profile
from helpers.results import load_results, save_results
from helpers.ring_diagram import Contributions, RingSnapshots, contributions, draw_ring_steps
from helpers.source import show_source, source_of
from helpers.table import Table
from helpers.workers.mx_worker import median_step_seconds, parse_results, training_table
from helpers.workers.tf_worker import TIMING_DONE

__all__ = [
    # the machine and the series
    "Profile", "Table", "apply_numpy_fix", "broken_pins", "capture_fds", "capture_log",
    "detect_profile_name", "diagnose",
    "get_profile", "import_mxnet", "import_tensorflow", "load_digits", "load_results",
    "mxnet_import_settings", "mxnet_route", "pin_report", "read_pins", "require_int",
    "require_number", "save_results", "show_source", "source_of", "training",
    # devices and placement
    "ContextPair", "DeviceName", "DevicePlan", "GPUCard", "Placement", "capture_placement",
    "context_pair", "cpu_cores", "gpu_cards", "list_devices", "mirrored_over",
    "mxnet_context", "nvidia_smi", "parse_device", "parse_placement", "physical_gpu_count",
    "plan_devices", "replica_devices", "requirements_banner", "try_all_gpus", "try_gpu",
    "use_logical_cpus", "use_virtual_gpus",
    # measuring
    "CopyRoute", "FLOAT32_RTOL", "GENERIC_KERNELS", "TF32_RTOL", "Timer", "TimingResult",
    "bar_timings", "benchmark", "blas_libraries", "busy_threads", "check_matpow_sum",
    "copy_sweep", "device_memory_mb", "entry_log10", "kernels_of", "largest_safe_n",
    "line_bandwidth", "line_speedup", "matpow", "matpow_flops", "overflows",
    "probe_mxnet_dot", "relative_error", "require_fits_in_memory", "save_figure",
    "suggested_coretype", "true_power",
    "MemorySteps", "Span", "Timeline", "comparison_table", "plot_comparison", "round_trips",
    "rss_bytes", "run_gpipe", "slowest",
    # clusters
    "ExposureError", "LocalMXCluster", "LocalTFCluster", "ProcessGroup", "TIMING_DONE",
    "cluster_spec", "describe_exit", "dmlc_env", "gpu_task_env", "leftover_processes",
    "median_step_seconds", "network_banner", "parse_results", "shell_commands", "tf_config",
    "train_on_cluster", "training_table",
    # models of cost
    "AlphaBeta", "amdahl_speedup", "compute_seconds", "fit_alpha_beta", "karp_flatt",
    "parameter_server_seconds", "ring_allreduce_seconds", "step_seconds",
    "Contributions", "LayerCost", "OPTIMIZER_STATES", "OpPoint", "PUBLISHED_MODELS",
    "RingSnapshots", "Roofline", "Traffic", "TrainingMemory", "accumulation_seconds",
    "bubble_fraction", "contributions", "costs_table", "critical_batch",
    "critical_batch_from_rates", "draw_ring_steps", "elementwise_cost", "gpipe_schedule",
    "layer_costs", "matmul_cost", "naive_allreduce_bytes", "overlap_bounds",
    "ring_allreduce_bytes", "tensor_nbytes", "traffic_table", "training_flops_per_example",
    "zero_bytes_per_replica",
]
