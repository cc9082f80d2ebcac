"""Helpers for the notebooks of the series on parallel and distributed deep learning.

Each module holds one concept; the notebooks import what they need from here. Nothing
here imports TensorFlow or MXNet until a function needs it, so worker processes and
tests stay quick to start.
"""

from helpers.device_names import DeviceName, mxnet_context, parse_device
from helpers.devices import cpu_cores, list_devices, nvidia_smi, try_all_gpus, try_gpu
from helpers.frameworks import apply_numpy_fix, import_mxnet, import_tensorflow
from helpers.logical_devices import (
    DevicePlan,
    plan_devices,
    requirements_banner,
    use_logical_cpus,
    use_virtual_gpus,
)
from helpers.placement import Placement, capture_placement, parse_placement
from helpers.profiles import Profile, get_profile
from helpers.results import load_results, save_results
from helpers.table import Table
from helpers.timing import Timer, TimingResult, benchmark

__all__ = [
    "DeviceName", "DevicePlan", "Placement", "Profile", "Table", "Timer", "TimingResult",
    "apply_numpy_fix", "benchmark", "capture_placement", "cpu_cores", "get_profile",
    "import_mxnet", "import_tensorflow", "list_devices", "load_results", "mxnet_context",
    "nvidia_smi", "parse_device", "parse_placement", "plan_devices", "requirements_banner",
    "save_results", "try_all_gpus", "try_gpu", "use_logical_cpus", "use_virtual_gpus",
]
