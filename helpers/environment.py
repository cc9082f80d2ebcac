"""Check that the installed packages are the ones the series is pinned to.

A plain ``pip install tensorflow mxnet`` quietly installs mxnet 1.0.0.post1 (MXNet 1.9.1
needs numpy < 2, TensorFlow 2.21 prefers numpy 2, and pip backtracks to an ancient
MXNet). Everything then fails later with confusing errors, so the series compares what
is installed with ``requirements.txt`` up front and says how to repair it.

On Colab and Kaggle the setup cell installs only what the notebooks run on (the
``runtime`` extra of the series' package), not the maintainers' tools that
``requirements.txt`` also pins (JupyterLab, nbval, pytest, ruff ...): a tool that is
missing there is reported as not needed, not as a broken pin.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from helpers.table import Table

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;#]+)")
# A CUDA build of MXNet satisfies the `mxnet` pin.
_ALTERNATIVES = {"mxnet": ("mxnet", "mxnet-cu117", "mxnet-cu112")}
DISTRIBUTION = "pdl-helpers"
NOT_NEEDED = "not needed to run the notebooks"


def read_pins(path: Path | str = REQUIREMENTS) -> dict[str, str]:
    """``{package: version}`` for every ``name==version`` line of a requirements file."""
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"no requirements file at {file}")
    pins = {}
    for line in file.read_text().splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[match.group(1).lower()] = match.group(2)
    if not pins:
        raise ValueError(f"{file} has no `name==version` lines")
    return pins


def installed_version(package: str) -> str | None:
    """The installed version of a distribution (or of its CUDA twin), None if absent."""
    for name in _ALTERNATIVES.get(package, (package,)):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def runtime_packages() -> set[str]:
    """The packages the notebooks run on: the ``runtime`` extra of the installed series.

    Empty when the series' own package is not installed, so that every pin counts.
    """
    try:
        requirements = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return set()
    names = set()
    for requirement in requirements:
        name, _, marker = requirement.partition(";")
        if re.search(r"""extra\s*==\s*["']runtime["']""", marker):
            names.add(re.split(r"[\s\[=<>!~]", name.strip(), maxsplit=1)[0].lower())
    return names


def pin_report(path: Path | str = REQUIREMENTS) -> Table:
    """A table of each pin, the installed version and whether they agree (a maintainers'
    tool that is not installed where only the runtime is, is marked as not needed)."""
    runtime = runtime_packages()
    table = Table(["package", "pinned", "installed", "ok"])
    for package, pinned in read_pins(path).items():
        installed = installed_version(package)
        ok: bool | str = installed == pinned
        if installed is None and runtime and package not in runtime:
            ok = NOT_NEEDED
        table.append([package, pinned, installed or "missing", ok])
    return table


def broken_pins(path: Path | str = REQUIREMENTS) -> list[str]:
    """Human-readable problems, empty when every pin holds."""
    return [
        f"{package}: pinned {pinned}, installed {installed}"
        for package, pinned, installed, ok in pin_report(path).rows
        if ok is False
    ]


def diagnose() -> Table:
    """Each known way the stack breaks, checked on this machine, with the fix.

    The four classic failures: the wrong MXNet (pip's silent fallback to 1.0.0.post1),
    numpy 2 (MXNet 1.9.1 cannot import it), a GPU machine whose driver is missing, and a
    GPU machine where TensorFlow or MXNet were installed as CPU-only builds.
    """
    from helpers.devices.inventory import nvidia_smi  # noqa: PLC0415

    table = Table(["check", "status", "what to do"])
    mxnet_version = installed_version("mxnet")
    if mxnet_version == "1.9.1":
        table.append(["MXNet version", "ok", "-"])
    else:
        table.append(["MXNet version", f"problem: {mxnet_version or 'missing'}",
                      "pip install mxnet==1.9.1 numpy==1.26.4 (or re-run `make test`)"])
    numpy_version = installed_version("numpy") or "missing"
    if numpy_version.startswith("1.26"):
        table.append(["numpy version", "ok", "-"])
    else:
        table.append(["numpy version", f"problem: {numpy_version}",
                      "MXNet 1.9.1 needs numpy < 2 and TensorFlow 2.21 >= 1.26: "
                      "pip install numpy==1.26.4"])
    broken = broken_pins()
    table.append(["all pins of requirements.txt", "ok" if not broken else "problem: "
                  + "; ".join(broken), "-" if not broken else "pip install -r requirements.txt"])
    smi = nvidia_smi()
    if smi is None:
        table.append(["NVIDIA driver", "none found (CPU only)",
                      "fine for the series (ci/laptop profile); on a GPU instance install the "
                      "NVIDIA driver, then requirements-gpu.txt"])
        return table
    table.append(["NVIDIA driver", f"ok: {len(smi)} GPU(s)", "-"])
    from helpers.devices.inventory import physical_gpu_count  # noqa: PLC0415
    from helpers.frameworks import import_mxnet  # noqa: PLC0415

    if physical_gpu_count() == 0:
        table.append(["TensorFlow sees the GPUs", "problem: 0 GPUs",
                      "install the CUDA build: pip install -r requirements-gpu.txt"])
    else:
        table.append(["TensorFlow sees the GPUs", "ok", "-"])
    if import_mxnet().context.num_gpus() == 0:
        table.append(["MXNet sees the GPUs", "problem: 0 GPUs (CPU build)",
                      "pip uninstall -y mxnet && pip install mxnet-cu117==1.9.1"])
    else:
        table.append(["MXNet sees the GPUs", "ok", "-"])
    return table
