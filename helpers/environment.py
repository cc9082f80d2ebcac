"""Check that the installed packages are the ones the series is pinned to, and diagnose the stack.

A plain ``pip install tensorflow mxnet`` backtracks to mxnet 1.0.0.post1 (MXNet 1.9.1 declares
numpy < 2; the series runs numpy 2) and everything fails later, confusingly: so the series
compares what is installed with ``requirements.txt`` and ``requirements-mxnet.txt`` up front.
On Colab and Kaggle only the ``runtime`` extra is installed (plus MXNet): a maintainers' tool
missing there is not needed, and a platform's numpy inside the extra's range is accepted."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from helpers.devices import gpu_cards, nvidia_smi
from helpers.frameworks import import_mxnet, import_mxnet_from, import_tensorflow, mxnet_route
from helpers.machine import package_version, query_nvidia_smi
from helpers.mxnet_gpu import INSTALL_COMMAND, _last_line, load_cuda_libraries, runs_mxnet_kernels
from helpers.output import Table

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
#: MXNet's pin, installed with ``pip install --no-deps -r`` (README: Why MXNet installs apart).
MXNET_REQUIREMENTS = REQUIREMENTS.with_name("requirements-mxnet.txt")
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;#]+)")
NOT_NEEDED = "not needed to run the notebooks"
GPU_INSTALL = ("make lab REQUIREMENTS=requirements-gpu.txt (TensorFlow's CUDA build, in an "
               "environment of its own)")


def read_pins(path: Path | str = REQUIREMENTS) -> dict[str, str]:
    """``{package: version}`` for every ``name==version`` line of a requirements file."""
    return {m[1].lower(): m[2] for line in Path(path).read_text().splitlines()
            if (m := _PIN.match(line.strip()))}


def runtime_packages() -> dict[str, str]:
    """The packages the notebooks run on, with the range the series accepts (the installed
    series' ``runtime`` extra, and MXNet); empty without the series' package: every pin counts."""
    try:
        requirements = metadata.requires("pdl-helpers") or []
    except metadata.PackageNotFoundError:
        return {}
    wanted = [r for r in map(Requirement, requirements)
              if r.marker and r.marker.evaluate({"extra": "runtime"})]
    return {"mxnet": ""} | {r.name.lower(): str(r.specifier) for r in wanted}


def _within(version: str, allowed: str) -> bool:
    return bool(allowed) and not allowed.startswith("==") and version in SpecifierSet(allowed)


def pin_report(path: Path | str = REQUIREMENTS) -> Table:
    """Each pin (``requirements.txt`` with MXNet's), the installed version, whether they agree."""
    runtime, pins = runtime_packages(), read_pins(path)
    if Path(path) == REQUIREMENTS:
        pins |= read_pins(MXNET_REQUIREMENTS)
    table = Table(["package", "pinned", "installed", "ok"])
    for package, pinned in pins.items():
        installed = package_version(package)
        ok: bool | str = installed == pinned
        if installed is None and runtime and package not in runtime:
            ok = NOT_NEEDED
        elif not ok and installed and _within(installed, runtime.get(package, "")):
            ok = f"accepted: {runtime[package]}"
        table.append([package, pinned, installed or "missing", ok])
    return table


def broken_pins(path: Path | str = REQUIREMENTS) -> list[str]:
    return [f"{package}: pinned {pinned}, installed {installed}"
            for package, pinned, installed, ok in pin_report(path).rows if ok is False]


def diagnose() -> Table:
    """Each known way the stack breaks, checked on this machine, with the fix; never raises.

    The wrong MXNet (pip's silent fallback), a numpy 1.x (the series runs numpy 2), TensorFlow
    missing (a fresh cloud GPU instance), a GPU machine without its driver or with TensorFlow's CPU
    build, and how MXNet runs on GPUs (from the driver's compute capability, without TensorFlow)."""
    table = Table(["check", "status", "what to do"])

    def check(name: str, problem: str | None, fix: str, ok: str = "ok") -> None:
        table.append([name, ok, "-"] if problem is None else [name, f"problem: {problem}", fix])

    smi, mxnet_version = nvidia_smi(), package_version("mxnet")
    check("MXNet version", None if mxnet_version == "1.9.1" else mxnet_version or "missing",
          "pip install --no-deps -r requirements-mxnet.txt (or re-run `make test`)")
    numpy_version = package_version("numpy") or "missing"
    check("numpy version", None if _within(numpy_version, ">=2.1") else numpy_version,
          "the series runs on numpy 2.1 or newer on every Python: "
          "pip install -r requirements.txt -c constraints/py3.X.txt (your Python)")
    check("all pins of requirements*.txt", "; ".join(broken_pins()) or None,
          "pip install -r requirements.txt")
    tensorflow = importlib.util.find_spec("tensorflow") is not None
    check("TensorFlow", None if tensorflow else "TensorFlow not installed",
          "pip install -r requirements.txt" if smi is None else GPU_INSTALL)
    if smi is None:
        table.append(["NVIDIA driver", "none found (CPU only)",
                      "fine for the series (ci/laptop profile); on a GPU instance install the "
                      "NVIDIA driver, then requirements-gpu.txt"])
        return table
    table.append(["NVIDIA driver", f"ok: {len(smi)} GPU(s)", "-"])
    if tensorflow:
        try:
            cards, problem = len(gpu_cards()), "0 GPUs"
        except Exception as exc:  # noqa: BLE001  (installed, but fails as it loads: a row)
            cards, problem = 0, f"TensorFlow does not import: {_last_line(str(exc))}"
        check("TensorFlow sees the GPUs", problem if not cards else None, GPU_INSTALL,
              f"ok: {cards}")
    for name, cap in dict(query_nvidia_smi("name,compute_cap") or []).items():
        major, _, minor = cap.partition(".")
        fits = runs_mxnet_kernels((int(major), int(minor)) if (major + minor).isdigit() else None)
        table.append([f"MXNet's CUDA build on {name}", {
            True: "has kernels for it", False: "has NO kernels for it",
            None: "unknown (no compute capability)"}[fits],
            "-" if fits else "MXNet runs on the CPU on this GPU (see README, GPU instances)"])
    if (route := mxnet_route()).on_gpu:
        table.append(["MXNet build", f"ok: CUDA build, probe passed, "
                      f"{import_mxnet().context.num_gpus()} GPU(s)", "-"])
    elif route.verdict in ("not-installed", "disabled"):
        table.append(["MXNet build", "CPU wheel: MXNet computes on the CPU",
                      f"optional, for MXNet on GPU: {INSTALL_COMMAND} (README, GPU instances)"])
    else:
        check("MXNet build", f"CPU wheel, the GPU route failed ({route.verdict})", route.message())
    return table


# -- The MXNet GPU probe: ``python -m helpers.environment SIDE_DIR`` (see :mod:`helpers.mxnet_gpu`).
# Run in a child process, so that a crash or "no kernel image" costs that process, never the
# notebook's kernel; it prints its outcome as one JSON line (exit status 1 on failure).

def probe(root: Path, report: dict[str, Any]) -> None:
    report.update(stage="tensorflow", cards=[])
    if importlib.util.find_spec("tensorflow") is not None:
        try:  # TensorFlow loads its CUDA 12 libraries first, as in the notebooks
            tf = import_tensorflow(keras=False)
            report["cards"] = [[card.name, card.capability] for card in gpu_cards()]
            if report["cards"]:
                with tf.device("/GPU:0"):
                    float(tf.reduce_sum(tf.ones((2, 2))))
        except Exception as exc:  # noqa: BLE001  (recorded; MXNet is what is probed)
            report["tensorflow_error"] = _last_line(str(exc))
    report["stage"] = "cuda-libraries"
    load_cuda_libraries(root)
    report["stage"] = "import"
    mx = import_mxnet_from(root)
    report["gpus"] = mx.context.num_gpus()
    if report["gpus"]:
        report["stage"] = "kernels"
        ctx = mx.gpu(0)
        x = mx.nd.ones((4, 4), ctx=ctx) * 2  # an elementwise kernel of MXNet's own
        product = mx.nd.dot(x, x)  # cuBLAS
        conv = mx.nd.Convolution(mx.nd.ones((1, 1, 4, 4), ctx=ctx), mx.nd.ones((1, 1, 3, 3),
                                 ctx=ctx), kernel=(3, 3), num_filter=1, no_bias=True)  # cuDNN
        if float(product.sum().asscalar()) != 256.0 or float(conv.sum().asscalar()) != 36.0:
            raise RuntimeError("MXNet's GPU results are wrong")
    report["stage"] = "ok"


if __name__ == "__main__":
    outcome: dict[str, Any] = {}
    try:
        probe(Path(sys.argv[1]), outcome)
    except BaseException as exc:  # noqa: BLE001  (report any failure as JSON, then exit 1)
        text = f"{type(exc).__name__}: {exc}"
        outcome.update(error=_last_line(text.splitlines()[0]), error_text=text[-4000:])
    print(json.dumps(outcome), flush=True)
    sys.exit(1 if "error" in outcome else 0)
