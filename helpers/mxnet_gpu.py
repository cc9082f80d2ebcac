"""MXNet on GPUs beside TensorFlow: an opt-in side directory, used only after a probe passed.

MXNet 1.9.1's CUDA wheel lacks the CUDA 11 libraries it links against (their wheels overwrite
TensorFlow's CUDA 12 files), and its kernels stop at compute capability 8.6 without PTX. So
MXNet gets its CPU wheel, and the GPU build is a side directory off ``sys.path``, used only
after a probe in a child process passed (a crash costs the child, never the kernel); the
verdict is cached in a temporary file, one answer per session. ``LD_LIBRARY_PATH`` is read
when a process starts, so :func:`load_cuda_libraries` loads each library by its full path,
TensorFlow's newer copy where it ships the same name (same name, same binary interface)."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import fnmatch
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDE_DIR_ENV = "SERIES_MXNET_GPU_DIR"  # the side directory, if not ROOT/.mxnet-gpu
SWITCH_ENV = "SERIES_MXNET_GPU"  # "0" keeps MXNet on its CPU wheel
INSTALL_COMMAND = "pip install --no-deps --target .mxnet-gpu -r requirements-mxnet-gpu.txt"
PROBE_TIMEOUT_S = 120.0
#: Compute capabilities the ``mxnet-cu117`` 1.9.1 wheel has kernels for.
MXNET_CUDA_ARCHES = ((5, 0), (6, 0), (7, 0), (8, 0), (8, 6))
KNOWN_GPUS = {"T4": (7, 5), "V100": (7, 0), "A10G": (8, 6), "L4": (8, 9), "A100": (8, 0),
              "H100": (9, 0)}
#: What ``libmxnet.so`` needs besides the driver's ``libcuda.so.1``, each library's own
#: dependencies first, and the wheel bringing it.
CUDA_LIBRARIES: tuple[tuple[str, str], ...] = (
    ("libcudart.so.11.0", "nvidia-cuda-runtime-cu11"),
    ("libnvrtc.so.11.2", "nvidia-cuda-nvrtc-cu11"),
    ("libnvrtc-builtins.so.11.*", "nvidia-cuda-nvrtc-cu11"),
    ("libcublasLt.so.11", "nvidia-cublas-cu11"), ("libcublas.so.11", "nvidia-cublas-cu11"),
    *((f"libcudnn_{part}.so.8", "nvidia-cudnn-cu11") for part in (
        "ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train")),
    ("libcudnn.so.8", "nvidia-cudnn-cu11"), ("libcufft.so.10", "nvidia-cufft-cu11"),
    ("libcurand.so.10", "nvidia-curand-cu11"), ("libcusparse.so.11", "nvidia-cusparse-cu11"),
    ("libcusolver.so.11", "nvidia-cusolver-cu11"), ("libnccl.so.2", "nvidia-nccl-cu11"),
    ("libnvToolsExt.so.1", "nvidia-nvtx-cu11"))
_REASONS = {"incomplete": "libraries are missing from it", "failed": "its probe failed",
            "missing-libraries": "a library it needs is missing", "no-driver": "no NVIDIA driver",
            "no-kernel-image": "no kernels for this GPU", "timeout": "its probe timed out",
            "driver-too-old": "the NVIDIA driver is too old"}
_MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+?\.so[\d.]*): cannot open shared object file")


def shown(path: str | Path | None) -> str:
    """A path as a reader should see it: relative to the series' checkout when inside it."""
    if path is None:
        return "-"
    with contextlib.suppress(ValueError):
        return str(Path(path).resolve().relative_to(ROOT))
    return Path(path).name


def runs_mxnet_kernels(capability: tuple[int, int] | None) -> bool | None:
    """Whether the cu117 wheel runs on this compute capability (SASS for X.y runs on X.z,
    z >= y; no PTX for newer); None when unknown."""
    return None if capability is None else any(
        m == capability[0] and n <= capability[1] for m, n in MXNET_CUDA_ARCHES)


@dataclass(frozen=True)
class MXNetRoute:
    """Which MXNet build this process uses (``gpu``: the side directory's, or ``cpu``) and why:
    ``verdict`` is ``ok``, ``not-installed``, ``disabled`` or a key of ``_REASONS``."""
    build: str
    verdict: str
    side_dir: str | None = None
    gpus: int | None = None  # GPUs the CUDA build saw in the probe
    missing: tuple[str, ...] = ()  # libraries that were not found
    detail: str = ""  # the probe's error, first line
    cards: tuple[tuple[str, tuple[int, int] | None], ...] = ()  # (name, capability) seen

    on_gpu = property(lambda self: self.build == "gpu")

    def summary(self) -> str:
        """One line for a banner or a diagnosis."""
        if self.on_gpu:
            return (f"MXNet: CUDA build from {shown(self.side_dir)} (probe passed), "
                    f"{self.gpus} GPU(s)")
        if self.verdict == "not-installed":
            return ("MXNet: CPU wheel (the default of requirements-gpu.txt), so MXNet computes "
                    "on the CPU; MXNet on GPU is an opt-in install (README, GPU instances)")
        if self.verdict == "disabled":
            return f"MXNet: CPU wheel ({SWITCH_ENV}=0 switches the MXNet GPU route off)"
        return ("MXNet: CPU wheel, because the MXNet GPU route is unusable here: "
                f"{_REASONS.get(self.verdict, self.verdict)}")

    def message(self) -> str:
        """Why MXNet fell back to the CPU and what to do, one paragraph ('' if nothing failed)."""
        if self.on_gpu or self.verdict in ("not-installed", "disabled"):
            return ""
        head = f"MXNet runs on the CPU wheel here: the MXNet GPU route in {shown(self.side_dir)} "
        tail = " TensorFlow keeps the GPUs; MXNet's results are the same, only slower."
        if self.verdict in ("incomplete", "missing-libraries"):
            owner = {"libmxnet.so": "mxnet-cu117", **dict(CUDA_LIBRARIES)}
            names = ", ".join(lib + " (" + next((p for n, p in owner.items() if fnmatch.fnmatch(
                lib, n)), "a system package") + ")" for lib in self.missing)
            return (head + f"cannot load {names}. Install the route's pinned wheels: "
                    f"{INSTALL_COMMAND}." + tail)
        if self.verdict == "no-driver":
            return (head + "needs the NVIDIA driver's libcuda.so.1, which this machine lacks "
                    "(nvidia-smi lists the GPUs once a driver is installed).")
        if self.verdict == "no-kernel-image":
            seen = ", ".join(f"{n} ({c[0]}.{c[1]})" if c else n for n, c in self.cards)
            arches = ", ".join(f"{a}.{b}" for a, b in MXNET_CUDA_ARCHES)
            runs = ", ".join(f"{n} ({a}.{b})" for n, (a, b) in KNOWN_GPUS.items()
                             if runs_mxnet_kernels((a, b)))
            return (head + f"has no kernels for {seen or 'this GPU'}: MXNet 1.9.1's CUDA build "
                    f"carries kernels for compute capability {arches} only and no PTX, so its "
                    f'first kernel fails with "no kernel image is available". It runs on {runs}; '
                    "not on H100 or newer." + tail)
        if self.verdict == "driver-too-old":
            return head + f"needs a newer NVIDIA driver (CUDA 11.7 runtime): {self.detail}." + tail
        if self.verdict == "timeout":
            return head + f"gave its probe {self.detail}; the GPUs may be busy or hung." + tail
        return head + f"failed its probe {self.detail}." + tail


# -- the libraries ---------------------------------------------------------------------------
def _find(pattern: str, dirs: list[Path]) -> Path | None:
    return next((f for d in dirs if d.is_dir() for f in sorted(d.iterdir())
                 if fnmatch.fnmatch(f.name, pattern)), None)


def missing_libraries(root: Path) -> list[str]:
    """What of :data:`CUDA_LIBRARIES` (and MXNet itself) a side directory lacks."""
    dirs = sorted(root.glob("nvidia/*/lib"))
    return ([] if (root / "mxnet" / "libmxnet.so").is_file() else ["libmxnet.so"]) + [
        name for name, _ in CUDA_LIBRARIES if _find(name, dirs) is None]


def _is_loaded(name: str) -> bool:
    with contextlib.suppress(OSError):
        return bool(ctypes.CDLL(name, mode=os.RTLD_NOLOAD))
    return False


def library_plan(root: Path, shared: list[Path] | None = None,
                 loaded: Callable[[str], bool] = _is_loaded) -> list[Path]:
    """The files :func:`load_cuda_libraries` loads, in order: for each name not ``loaded`` yet,
    TensorFlow's copy from ``shared`` (its ``nvidia/*/lib``) if any, then the side directory's."""
    if shared is None:
        spec = importlib.util.find_spec("nvidia")
        roots = (spec.submodule_search_locations or []) if spec else []
        shared = sorted(lib for r in roots for lib in Path(r).glob("*/lib"))
    own, plan = sorted(root.glob("nvidia/*/lib")), []
    for name, _package in CUDA_LIBRARIES:
        if (mine := _find(name, own)) is None:
            raise FileNotFoundError(f"{name} is not in {shown(root)}: {INSTALL_COMMAND}")
        if not loaded(mine.name):
            plan.extend(p for p in (_find(mine.name, shared), mine) if p is not None)
    return plan


def load_cuda_libraries(root: Path) -> list[str]:
    """Load the side directory's CUDA 11 libraries into this process (the side directory's
    copy where TensorFlow's does not load); OSError names one that none could load."""
    done: list[str] = []
    failures: dict[str, str] = {}
    for path in (p for p in library_plan(root) if p.name not in done):
        try:
            ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            done.append(path.name)
        except OSError as exc:
            failures[path.name] = str(exc)
    if lost := [name for name in failures if name not in done]:
        raise OSError(failures[lost[0]])
    return done


@contextlib.contextmanager
def importable_from(root: Path) -> Iterator[None]:
    """``import mxnet`` in the block finds the side directory's first; only for the block,
    so nothing else there (its ``nvidia`` package) shadows this environment's."""
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(root))


# -- the probe ---------------------------------------------------------------------------------
def _last_line(text: str) -> str:
    return next((line.strip()[:300] for line in reversed(text.splitlines()) if line.strip()), "")


def classify(returncode: int | None, stdout: str, stderr: str, root: Path) -> MXNetRoute:
    """Turn what the probe process printed into a route. ``returncode`` None: it timed out."""
    report: dict = {}
    for line in reversed(stdout.splitlines()):
        with contextlib.suppress(ValueError):
            report = report or (json.loads(line) if line.startswith("{") else {})
    cards = tuple((str(c[0]), tuple(c[1]) if c[1] else None) for c in report.get("cards", []))
    common = {"side_dir": str(root), "cards": cards}
    if returncode is None:
        return MXNetRoute("cpu", "timeout", detail=f"no answer in {PROBE_TIMEOUT_S:g} s", **common)
    if returncode == 0 and report.get("stage") == "ok":
        return MXNetRoute("gpu", "ok", gpus=int(report.get("gpus", 0)), **common)
    error = report.get("error") or _last_line(stderr) or f"exit code {returncode}"
    error = error.replace(str(root), shown(root))  # the reader's machine is not ours
    everything = "\n".join([error, report.get("error_text", ""), stderr])
    missing = tuple(dict.fromkeys(_MISSING_LIBRARY.findall(everything)))
    if "no kernel image" in everything.lower():
        return MXNetRoute("cpu", "no-kernel-image", detail=error, **common)
    if "libcuda.so.1" in missing:
        return MXNetRoute("cpu", "no-driver", missing=("libcuda.so.1",), detail=error, **common)
    if missing:
        return MXNetRoute("cpu", "missing-libraries", missing=missing, detail=error, **common)
    if "driver version is insufficient" in everything.lower():
        return MXNetRoute("cpu", "driver-too-old", detail=error, **common)
    return MXNetRoute("cpu", "failed", detail=f"at {report.get('stage', 'start')}: {error}",
                      **common)


def run_probe(root: Path, timeout: float = PROBE_TIMEOUT_S) -> MXNetRoute:
    """Probe the side directory in a fresh Python process (:mod:`helpers.environment`)."""
    env = {**os.environ, "TF_FORCE_GPU_ALLOW_GROWTH": "true", "TF_CPP_MIN_LOG_LEVEL": "2"}
    try:
        done = subprocess.run([sys.executable, "-m", "helpers.environment", str(root)],
                              capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=str(ROOT), check=False)
    except subprocess.TimeoutExpired:
        return classify(None, "", "", root)
    return classify(done.returncode, done.stdout, done.stderr, root)


# -- the verdict, once per session ---------------------------------------------------------------
_decided: dict[str, MXNetRoute] = {}  # side directory -> the route this process takes
_announced: set[str] = set()


def side_dir() -> Path:
    return Path(os.environ.get(SIDE_DIR_ENV) or ROOT / ".mxnet-gpu")


def cache_file(root: Path) -> Path:
    """The file that holds the verdict for this side directory, interpreter and GPUs."""
    key = "|".join([str(root.resolve()), str(root.stat().st_mtime_ns), sys.executable,
                    repr(os.environ.get("CUDA_VISIBLE_DEVICES"))])
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"series-mxnet-gpu-{digest}.json"


def _read(path: Path) -> MXNetRoute | None:
    with contextlib.suppress(OSError, ValueError, TypeError):
        data = json.loads(path.read_text())
        data["missing"] = tuple(data.get("missing", ()))
        data["cards"] = tuple((n, tuple(c) if c else None) for n, c in data.get("cards", ()))
        return MXNetRoute(**data)
    return None


def _write(path: Path, route: MXNetRoute) -> None:
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(asdict(route)))
    os.replace(partial, path)


def route(probe: Callable[[Path], MXNetRoute] = run_probe) -> MXNetRoute:
    """The MXNet build this process imports (or imported), deciding once per session;
    ``probe(root)`` returns a fresh probe's verdict (tests pass a fake)."""
    root = side_dir()
    if str(root) in _decided:
        return _decided[str(root)]
    if os.environ.get(SWITCH_ENV) == "0":
        decided = MXNetRoute("cpu", "disabled", side_dir=str(root))
    elif not root.is_dir():
        decided = MXNetRoute("cpu", "not-installed")
    elif missing := missing_libraries(root):
        decided = MXNetRoute("cpu", "incomplete", side_dir=str(root), missing=tuple(missing))
    elif (decided := _read(cache_file(root))) is None:  # type: ignore[assignment]
        with open(cache_file(root).with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # processes starting at once probe once
            if (decided := _read(cache_file(root))) is None:  # type: ignore[assignment]
                decided = probe(root)
                _write(cache_file(root), decided)
    return record(decided)


def record(used: MXNetRoute) -> MXNetRoute:
    """Remember the route this process takes (``import_mxnet`` records a fallback)."""
    _decided[str(side_dir())] = used
    return used


def forget() -> None:
    """Drop this process's decisions (tests; a new side directory in a running kernel)."""
    _decided.clear()
    _announced.clear()


def announce(r: MXNetRoute) -> None:
    """Print the fallback paragraph once per process (to stderr), if there is one."""
    if (text := r.message()) and text not in _announced:
        print(text, file=sys.stderr, flush=True)
        _announced.add(text)
