"""MXNet on GPUs beside TensorFlow: an opt-in side directory, used only after a probe passed.

README's "GPU instances" has the evidence; in short, MXNet 1.9.1's only CUDA wheel
(``mxnet-cu117``) lacks the CUDA 11 libraries it links against, NVIDIA's ``nvidia-*-cu11``
wheels that provide them overwrite files of TensorFlow's CUDA 12 wheels, and its kernels stop
at compute capability 8.6 without PTX (an H100 imports it, then fails at the first kernel).
So the GPU route lives in a side directory off ``sys.path`` (``pip install --no-deps
--target .mxnet-gpu``), and :func:`route` decides per process:

1. no side directory (or ``SERIES_MXNET_GPU=0``): the CPU wheel, no probe;
2. a side directory that lacks a library: the CPU wheel, and a message naming it;
3. otherwise a probe in a *subprocess* (``python -m helpers.environment``), with a timeout:
   a crash or "no kernel image" costs a child process, never the notebook's kernel.

The verdict is cached in a temporary file keyed by the side directory, its modification time,
the interpreter and ``CUDA_VISIBLE_DEVICES`` (a file, because notebook kernels inherit
nothing from each other). After a passed probe, :func:`load_cuda_libraries` loads each CUDA
11 library by full path before ``import mxnet`` (``LD_LIBRARY_PATH`` is read only at process
start); a name TensorFlow already loaded, or provides in a newer copy, serves both frameworks,
since a library keeps its binary interface as long as it keeps its name.
"""

from __future__ import annotations

import contextlib
import ctypes
import fnmatch
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Where the MXNet GPU route is installed, unless ``SERIES_MXNET_GPU_DIR`` names another.
DEFAULT_SIDE_DIR = ROOT / ".mxnet-gpu"
SIDE_DIR_ENV = "SERIES_MXNET_GPU_DIR"
#: ``SERIES_MXNET_GPU=0`` keeps MXNet on its CPU wheel even where the side directory exists.
SWITCH_ENV = "SERIES_MXNET_GPU"
INSTALL_COMMAND = "pip install --no-deps --target .mxnet-gpu -r requirements-mxnet-gpu.txt"
PROBE_TIMEOUT_S = 120.0

#: CUDA architectures (compute capabilities) the ``mxnet-cu117`` 1.9.1 wheel has kernels for.
MXNET_CUDA_ARCHES: tuple[tuple[int, int], ...] = ((5, 0), (6, 0), (7, 0), (8, 0), (8, 6))
#: Common cards and their compute capability, for messages that say which GPUs work.
KNOWN_GPUS = {"T4": (7, 5), "V100": (7, 0), "A10G": (8, 6), "L4": (8, 9), "A100": (8, 0),
              "H100": (9, 0)}

#: The libraries ``libmxnet.so`` (cu117) needs besides the driver's ``libcuda.so.1``, in
#: an order in which each one's own dependencies come first, and the wheel bringing each.
CUDA_LIBRARIES: tuple[tuple[str, str], ...] = (
    ("libcudart.so.11.0", "nvidia-cuda-runtime-cu11"),
    ("libnvrtc.so.11.2", "nvidia-cuda-nvrtc-cu11"),
    ("libnvrtc-builtins.so.11.*", "nvidia-cuda-nvrtc-cu11"),
    ("libcublasLt.so.11", "nvidia-cublas-cu11"),
    ("libcublas.so.11", "nvidia-cublas-cu11"),
    *((f"libcudnn_{part}.so.8", "nvidia-cudnn-cu11") for part in (
        "ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train")),
    ("libcudnn.so.8", "nvidia-cudnn-cu11"),
    ("libcufft.so.10", "nvidia-cufft-cu11"),
    ("libcurand.so.10", "nvidia-curand-cu11"),
    ("libcusparse.so.11", "nvidia-cusparse-cu11"),
    ("libcusolver.so.11", "nvidia-cusolver-cu11"),
    ("libnccl.so.2", "nvidia-nccl-cu11"),
    ("libnvToolsExt.so.1", "nvidia-nvtx-cu11"),
)

_REASONS = {"incomplete": "libraries are missing from it",
            "missing-libraries": "a library it needs is missing",
            "no-driver": "no NVIDIA driver", "no-kernel-image": "no kernels for this GPU",
            "driver-too-old": "the NVIDIA driver is too old", "timeout": "its probe timed out",
            "failed": "its probe failed"}
_MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+?\.so[\d.]*): cannot open shared object file")


@dataclass(frozen=True)
class MXNetRoute:
    """Which MXNet build this process uses and why.

    ``verdict`` is one of ``not-installed``, ``disabled``, ``ok``, ``incomplete`` (the side
    directory lacks a library), ``no-driver``, ``missing-libraries``, ``no-kernel-image``,
    ``driver-too-old``, ``timeout`` or ``failed``.
    """

    build: str  # "gpu" (the CUDA build from the side directory) or "cpu" (the CPU wheel)
    verdict: str
    side_dir: str | None = None
    gpus: int | None = None  # GPUs the CUDA build saw in the probe
    missing: tuple[str, ...] = ()  # libraries that were not found
    detail: str = ""  # the probe's error, first line
    cards: tuple[tuple[str, tuple[int, int] | None], ...] = ()  # (name, capability) seen

    @property
    def on_gpu(self) -> bool:
        return self.build == "gpu"

    def summary(self) -> str:
        """One line for a banner or a diagnosis."""
        if self.build == "gpu":
            return (f"MXNet: CUDA build from {shown(self.side_dir)} (probe passed), "
                    f"{self.gpus} GPU(s)")
        if self.verdict == "not-installed":
            return ("MXNet: CPU wheel (the default of requirements-gpu.txt), so MXNet computes "
                    "on the CPU; MXNet on GPU is an opt-in install (README, GPU instances)")
        if self.verdict == "disabled":
            return f"MXNet: CPU wheel ({SWITCH_ENV}=0 switches the MXNet GPU route off)"
        return (f"MXNet: CPU wheel, because the MXNet GPU route is unusable here: "
                f"{_REASONS.get(self.verdict, self.verdict)}")

    def message(self) -> str:
        """The paragraph that says why MXNet fell back to the CPU and what to do ('' if not)."""
        return fallback_message(self)


def shown(path: str | Path | None) -> str:
    """A path as a reader should see it: relative to the series' checkout when inside it."""
    if path is None:
        return "-"
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return p.name


def side_dir() -> Path:
    """The side directory of the MXNet GPU route (it may not exist)."""
    return Path(os.environ.get(SIDE_DIR_ENV) or DEFAULT_SIDE_DIR)


def runs_mxnet_kernels(capability: tuple[int, int] | None) -> bool | None:
    """Whether the cu117 wheel has kernels for a GPU of this compute capability.

    A kernel binary built for ``X.Y`` runs on ``X.Z`` with ``Z >= Y`` (the same major
    version), and the wheel has no PTX that could be compiled for anything newer. None
    when the capability is unknown.
    """
    if capability is None:
        return None
    major, minor = capability
    return any(m == major and n <= minor for m, n in MXNET_CUDA_ARCHES)


def supported_gpus_text() -> str:
    """'T4 (7.5), V100 (7.0), ...' for the cards that run the wheel, from :data:`KNOWN_GPUS`."""
    return ", ".join(f"{name} ({a}.{b})" for name, (a, b) in KNOWN_GPUS.items()
                     if runs_mxnet_kernels((a, b)))


def _arches_text() -> str:
    return ", ".join(f"{a}.{b}" for a, b in MXNET_CUDA_ARCHES)


# -- the libraries ---------------------------------------------------------------------------
def _library_dirs(root: Path) -> list[Path]:
    return sorted(root.glob("nvidia/*/lib"))


def _tensorflow_library_dirs() -> list[Path]:
    """``site-packages/nvidia/*/lib`` of this environment (TensorFlow's CUDA 12 wheels)."""
    spec = importlib.util.find_spec("nvidia")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    return sorted(lib for r in roots for lib in r.glob("*/lib"))


def _find(pattern: str, dirs: list[Path]) -> Path | None:
    for folder in dirs:
        for candidate in sorted(folder.iterdir()) if folder.is_dir() else []:
            if fnmatch.fnmatch(candidate.name, pattern):
                return candidate
    return None


def missing_libraries(root: Path) -> list[str]:
    """The libraries of :data:`CUDA_LIBRARIES` (and MXNet itself) a side directory lacks."""
    missing = [] if (root / "mxnet" / "libmxnet.so").is_file() else ["libmxnet.so"]
    dirs = _library_dirs(root)
    return missing + [name for name, _ in CUDA_LIBRARIES if _find(name, dirs) is None]


def package_of(library: str) -> str | None:
    """The pip package that brings a library MXNet needs (None for others)."""
    if library == "libmxnet.so":
        return "mxnet-cu117"
    return next((pkg for name, pkg in CUDA_LIBRARIES if fnmatch.fnmatch(library, name)), None)


def library_plan(root: Path, shared: list[Path] | None = None,
                 loaded: Any = None) -> list[Path]:
    """The files :func:`load_cuda_libraries` loads, in order (see the module docstring).

    ``shared`` are TensorFlow's library folders (looked up when None); ``loaded(name)``
    says whether a library of that name is in the process already.
    """
    shared = _tensorflow_library_dirs() if shared is None else shared
    loaded = _is_loaded if loaded is None else loaded
    own = _library_dirs(root)
    plan = []
    for name, _package in CUDA_LIBRARIES:
        mine = _find(name, own)
        if mine is None:
            raise FileNotFoundError(f"{name} is not in {shown(root)}: {INSTALL_COMMAND}")
        if loaded(mine.name):
            continue
        theirs = _find(mine.name, shared)
        plan.extend([theirs, mine] if theirs is not None else [mine])
    return plan


def _is_loaded(name: str) -> bool:
    try:
        ctypes.CDLL(name, mode=os.RTLD_NOLOAD)
    except OSError:
        return False
    return True


def load_cuda_libraries(root: Path) -> list[str]:
    """Load the side directory's CUDA 11 libraries into this process; return their names.

    Where the plan offers TensorFlow's copy of a name first, the side directory's copy is
    the fallback when TensorFlow's cannot load. OSError names a library none could load.
    """
    done: list[str] = []
    failures: dict[str, str] = {}
    for path in library_plan(root):
        if path.name in done:
            continue
        try:
            ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            failures[path.name] = str(exc)
            continue
        done.append(path.name)
    lost = [name for name in failures if name not in done]
    if lost:
        raise OSError(failures[lost[0]])
    return done


@contextlib.contextmanager
def importable_from(root: Path) -> Any:
    """``import mxnet`` inside the block finds the side directory's MXNet first.

    The folder is on ``sys.path`` only for the block: later imports of MXNet's submodules
    follow the package's own path, and nothing else in the side directory (its ``nvidia``
    package, for one) can shadow this environment's.
    """
    entry = str(root)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


# -- the probe ---------------------------------------------------------------------------------
def classify(returncode: int | None, stdout: str, stderr: str, root: Path) -> MXNetRoute:
    """Turn what the probe process printed into a route. ``returncode`` None: it timed out."""
    report: dict[str, Any] = {}
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                report = json.loads(line)
                break
    cards = tuple((str(c[0]), tuple(c[1]) if c[1] else None) for c in report.get("cards", []))
    common = {"side_dir": str(root), "cards": cards}
    if returncode is None:
        return MXNetRoute("cpu", "timeout", detail=f"no answer in {PROBE_TIMEOUT_S:g} s", **common)
    if returncode == 0 and report.get("stage") == "ok":
        return MXNetRoute("gpu", "ok", gpus=int(report.get("gpus", 0)), **common)
    error = report.get("error") or _last_line(stderr) or f"exit code {returncode}"
    error = error.replace(str(root), shown(root))  # the reader's machine is not ours
    everything = "\n".join([error, report.get("error_text", ""), stderr])
    lowered = everything.lower()
    if "no kernel image" in lowered:
        return MXNetRoute("cpu", "no-kernel-image", detail=error, **common)
    missing = tuple(dict.fromkeys(_MISSING_LIBRARY.findall(everything)))
    if "libcuda.so.1" in missing:
        return MXNetRoute("cpu", "no-driver", missing=("libcuda.so.1",), detail=error, **common)
    if missing:
        return MXNetRoute("cpu", "missing-libraries", missing=missing, detail=error, **common)
    if "driver version is insufficient" in lowered:
        return MXNetRoute("cpu", "driver-too-old", detail=error, **common)
    return MXNetRoute("cpu", "failed", detail=f"at {report.get('stage', 'start')}: {error}",
                      **common)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def run_probe(root: Path, timeout: float = PROBE_TIMEOUT_S) -> MXNetRoute:
    """Probe the side directory in a fresh Python process (``python -m helpers.environment``)."""
    command = [sys.executable, "-m", "helpers.environment", str(root)]
    env = {**os.environ, "TF_FORCE_GPU_ALLOW_GROWTH": "true", "TF_CPP_MIN_LOG_LEVEL": "2"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=str(ROOT), check=False)
    except subprocess.TimeoutExpired:
        return classify(None, "", "", root)
    return classify(done.returncode, done.stdout, done.stderr, root)


# -- the verdict, cached for the session ---------------------------------------------------------
_decided: dict[str, MXNetRoute] = {}
_used: list[MXNetRoute] = []
_announced: list[str] = []


def cache_file(root: Path) -> Path:
    """The file that holds the verdict for this side directory, interpreter and GPUs."""
    key = "|".join([str(root.resolve()), str(root.stat().st_mtime_ns), sys.executable,
                    repr(os.environ.get("CUDA_VISIBLE_DEVICES"))])
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"series-mxnet-gpu-{digest}.json"


def _read(path: Path) -> MXNetRoute | None:
    try:
        data = json.loads(path.read_text())
        data["missing"] = tuple(data.get("missing", ()))
        data["cards"] = tuple((n, tuple(c) if c else None) for n, c in data.get("cards", ()))
        return MXNetRoute(**data)
    except (OSError, ValueError, TypeError):
        return None


def _write(path: Path, route: MXNetRoute) -> None:
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(asdict(route)))
    os.replace(partial, path)


def route(probe: Any = run_probe) -> MXNetRoute:
    """The MXNet build this process should import, deciding once per session (see above).

    ``probe(root)`` returns the verdict of a fresh probe; tests pass a fake.
    """
    root = side_dir()
    key = str(root)
    if key in _decided:
        return _decided[key]
    if os.environ.get(SWITCH_ENV) == "0":
        decided = MXNetRoute("cpu", "disabled", side_dir=key)
    elif not root.is_dir():
        decided = MXNetRoute("cpu", "not-installed")
    elif missing := missing_libraries(root):
        decided = MXNetRoute("cpu", "incomplete", side_dir=key, missing=tuple(missing))
    else:
        decided = _cached_probe(root, probe)
    _decided[key] = decided
    return decided


def _cached_probe(root: Path, probe: Any) -> MXNetRoute:
    path = cache_file(root)
    cached = _read(path)
    if cached is not None:
        return cached
    import fcntl  # noqa: PLC0415  (Linux and macOS; the side directory is a Linux route)

    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several processes starting at once probe once
        cached = _read(path)
        if cached is None:
            cached = probe(root)
            _write(path, cached)
    return cached


def record(used: MXNetRoute) -> None:
    """Remember the route this process imported MXNet with (see :func:`used_route`)."""
    _used[:] = [used]


def used_route() -> MXNetRoute | None:
    """The route MXNet was imported with in this process, None before ``import_mxnet``."""
    return _used[0] if _used else None


def forget() -> None:
    """Drop this process's decisions (tests; a new side directory in a running kernel)."""
    _decided.clear()
    _used.clear()
    _announced.clear()


def fallback_message(r: MXNetRoute) -> str:
    """One paragraph: MXNet runs on the CPU, the reason, and the fix ('' when nothing failed)."""
    if r.build == "gpu" or r.verdict in ("not-installed", "disabled"):
        return ""
    where = shown(r.side_dir)
    head = f"MXNet runs on the CPU wheel here: the MXNet GPU route in {where} "
    tail = " TensorFlow keeps the GPUs; MXNet's results are the same, only slower."
    if r.verdict in ("incomplete", "missing-libraries"):
        names = ", ".join(f"{lib} ({package_of(lib) or 'a system package'})" for lib in r.missing)
        return (head + f"cannot load {names}. Install the route's pinned wheels: "
                f"{INSTALL_COMMAND}." + tail)
    if r.verdict == "no-driver":
        return (head + "needs the NVIDIA driver's libcuda.so.1, which this machine lacks "
                "(nvidia-smi lists the GPUs once a driver is installed).")
    if r.verdict == "no-kernel-image":
        seen = ", ".join(f"{n} ({c[0]}.{c[1]})" if c else n for n, c in r.cards) or "this GPU"
        return (head + f"has no kernels for {seen}: MXNet 1.9.1's CUDA build carries "
                f"kernels for compute capability {_arches_text()} only and no PTX, so its "
                'first kernel fails with "no kernel image is available". It runs on '
                f"{supported_gpus_text()}; not on H100 or newer." + tail)
    if r.verdict == "driver-too-old":
        return (head + "needs a newer NVIDIA driver (CUDA 11.7 runtime): "
                f"{r.detail}." + tail)
    if r.verdict == "timeout":
        return head + f"gave its probe {r.detail}; the GPUs may be busy or hung." + tail
    return head + f"failed its probe {r.detail}." + tail


def announce(r: MXNetRoute) -> None:
    """Print the fallback paragraph once per process (to stderr), if there is one."""
    text = fallback_message(r)
    if text and text not in _announced:
        print(text, file=sys.stderr, flush=True)
        _announced.append(text)
