"""Measuring: synchronised timing, copy bandwidth, collective timings, process memory and
the timeline of a pipelined batch (notebooks 03-05 and 10-13).

Every timed region ends with the framework's synchronisation (MXNet's engine is
asynchronous on the CPU too); warm-up first, then repeats, reported as median and spread.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from helpers.machine import require_int
from helpers.output import Table

# -- Time code on devices correctly: warm up, repeat, and wait for the device to finish.

SYNCS = ("mxnet", "tensorflow", "none")


def sync_mxnet(_result: Any = None) -> None:
    """Block until MXNet's engine has finished every queued operation."""
    from helpers.frameworks import import_mxnet  # noqa: PLC0415

    import_mxnet().nd.waitall()


def sync_tensorflow(result: Any = None) -> None:
    """Block until TensorFlow's devices are idle and ``result`` (if any) is computed."""
    from helpers.frameworks import import_tensorflow  # noqa: PLC0415

    tf = import_tensorflow()
    tf.test.experimental.sync_devices()
    if result is not None:
        tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, result)


def _no_sync(_result: Any = None) -> None:
    """For work that is done when the call returns (NumPy), or to show a wrong timing."""


def resolve_sync(sync: str | Callable[[Any], None]) -> Callable[[Any], None]:
    """Accept a framework name or a callable that receives the timed function's result."""
    if callable(sync):
        return sync
    table = {"mxnet": sync_mxnet, "tensorflow": sync_tensorflow, "none": _no_sync}
    if sync not in table:
        raise ValueError(f"sync must be one of {SYNCS} or a callable, not {sync!r}")
    return table[sync]


def _check_positive(name: str, value: float | None, allow_zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, not {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, not {value!r}")


@dataclass
class TimingResult:
    """Repeated timings of one piece of work, with optional work counts for rates."""

    label: str
    samples: list[float] = field(default_factory=list)
    flops: float | None = None
    nbytes: float | None = None

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("a TimingResult needs at least one sample")
        _check_positive("flops", self.flops)
        _check_positive("nbytes", self.nbytes)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        return min(self.samples)

    @property
    def spread(self) -> float:
        """Max minus min of the samples, in seconds."""
        return max(self.samples) - min(self.samples)

    @property
    def gflops(self) -> float | None:
        """Billions of floating-point operations per second, from the median time."""
        return None if self.flops is None else self.flops / self.median / 1e9

    @property
    def gbps(self) -> float | None:
        """Gigabytes (1e9 bytes) moved per second, from the median time."""
        return None if self.nbytes is None else self.nbytes / self.median / 1e9

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(median=self.median, spread=self.spread, gflops=self.gflops, gbps=self.gbps)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimingResult:
        return cls(data["label"], list(data["samples"]), data.get("flops"), data.get("nbytes"))

    def __str__(self) -> str:
        text = f"{self.label}: median {self.median * 1e3:.3f} ms"
        text += f" (spread {self.spread * 1e3:.3f} ms over {len(self.samples)} runs)"
        if self.gflops is not None:
            text += f", {self.gflops:.2f} GFLOP/s"
        if self.gbps is not None:
            text += f", {self.gbps:.2f} GB/s"
        return text


def benchmark(
    fn: Callable[[], Any],
    *,
    sync: str | Callable[[Any], None],
    warmup: int = 1,
    repeat: int = 5,
    flops: float | None = None,
    nbytes: float | None = None,
    label: str = "",
) -> TimingResult:
    """Run ``fn`` ``warmup`` times untimed, then ``repeat`` times timed, each ending in ``sync``.

    ``sync`` is ``"mxnet"``, ``"tensorflow"``, ``"none"`` or a callable given ``fn``'s result.
    """
    if not callable(fn):
        raise ValueError(f"benchmark needs a function to call, not {fn!r}")
    wait = resolve_sync(sync)
    require_int("warmup", warmup, 0)
    require_int("repeat", repeat, 1)
    _check_positive("flops", flops)
    _check_positive("nbytes", nbytes)
    for _ in range(warmup):
        wait(fn())
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        wait(fn())
        samples.append(time.perf_counter() - start)
    return TimingResult(label or getattr(fn, "__name__", "work"), samples, flops, nbytes)


# -- Measure what a copy costs as the copy grows: time and bandwidth against size.

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure

MB = 1e6  # bandwidths are in GB/s = 1e9 bytes/s, so sizes are decimal too
FLOAT32_BYTES = 4

#: From this size on a copy is timed fewer times: one copy of 256 MB already averages
#: over millions of cache lines, and repeating it costs seconds on a small machine.
BIG_BYTES = 64 * MB


def elements_for(size_mb: float, itemsize: int = FLOAT32_BYTES) -> int:
    """How many elements of ``itemsize`` bytes make ``size_mb`` megabytes (at least one)."""
    if isinstance(size_mb, bool) or not isinstance(size_mb, (int, float)) or not size_mb > 0:
        raise ValueError(f"a copy size is a number of megabytes > 0, not {size_mb!r}")
    if isinstance(itemsize, bool) or not isinstance(itemsize, int) or itemsize < 1:
        raise ValueError(f"itemsize must be an int >= 1 (bytes per element), not {itemsize!r}")
    return max(1, round(size_mb * MB / itemsize))


def repeats_for(nbytes: float, repeat: int, big_repeat: int = 2,
                big_bytes: float = BIG_BYTES) -> int:
    """``repeat`` timed copies for small sizes, ``big_repeat`` (if fewer) from ``big_bytes`` on."""
    require_int("repeat", repeat, 1)
    require_int("big_repeat", big_repeat, 1)
    return min(repeat, big_repeat) if nbytes >= big_bytes else repeat


@dataclass(frozen=True)
class CopyRoute:
    """One way of copying: how to allocate, how to copy, how to wait for the copy."""

    name: str
    make: Callable[[int], tuple[Any, Any]]
    copy: Callable[[Any, Any], Any]
    sync: str | Callable[[Any], None] = "none"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a copy route needs a non-empty name")
        for attr in ("make", "copy"):
            if not callable(getattr(self, attr)):
                raise ValueError(f"CopyRoute {self.name!r}: {attr} must be a function")
        resolve_sync(self.sync)  # rejects unknown sync names now, not mid-sweep


@dataclass
class Sweep:
    """Timings of every route at every size, as tables, rates and a plot."""

    sizes_bytes: list[float]
    results: dict[str, list[TimingResult]] = field(default_factory=dict)

    def seconds(self) -> dict[str, list[float]]:
        """Median seconds per copy, per route, in size order."""
        return {name: [r.median for r in rs] for name, rs in self.results.items()}

    def gbps(self) -> dict[str, list[float]]:
        """GB/s (1e9 bytes per second, from the median time), per route, in size order."""
        return {name: [r.gbps for r in rs] for name, rs in self.results.items()}

    def largest(self) -> dict[str, float]:
        """GB/s of each route at the largest size: the bandwidth regime."""
        return {name: rates[-1] for name, rates in self.gbps().items()}

    def table(self) -> Table:
        table = Table(["size", "route", "median", "spread", "GB/s"])
        for name, rs in self.results.items():
            for size, r in zip(self.sizes_bytes, rs, strict=True):
                table.append([_human_bytes(size), name, _human_seconds(r.median),
                              _human_seconds(r.spread), round(r.gbps, 3)])
        return table

    def plot(self, title: str = "") -> Figure:
        """Two panels against size (log-log): time per copy, and bandwidth."""
        import matplotlib.pyplot as plt  # noqa: PLC0415

        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
        for name, rs in self.results.items():
            left.plot(self.sizes_bytes, [r.median * 1e3 for r in rs], marker="o", label=name)
            right.plot(self.sizes_bytes, [r.gbps for r in rs], marker="o", label=name)
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xlabel("copy size (bytes)")
            ax.grid(True, which="major", alpha=0.3)
        left.set_yscale("log")
        left.set_ylabel("time per copy (ms, median)")
        right.set_yscale("log")
        right.set_ylabel("bandwidth (GB/s)")
        right.legend(fontsize="small")
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        return fig

    def to_dict(self) -> dict[str, Any]:
        return {"sizes_bytes": self.sizes_bytes,
                "routes": {n: [r.to_dict() for r in rs] for n, rs in self.results.items()}}


def _human_bytes(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes:g} B"


def _human_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def copy_sweep(
    routes: Sequence[CopyRoute],
    sizes_mb: Sequence[float],
    *,
    warmup: int = 1,
    repeat: int = 5,
    big_repeat: int = 2,
) -> Sweep:
    """Time one copy per sample for every route and size; arrays are freed after each size.

    Allocation happens in ``route.make`` and is never timed; the warm-up copies touch
    the destination's pages so the first timed copy does not pay for page faults.
    """
    if not routes:
        raise ValueError("copy_sweep needs at least one CopyRoute")
    names = [r.name for r in routes]
    if len(set(names)) != len(names):
        raise ValueError(f"route names must be distinct, got {names}")
    if not sizes_mb:
        raise ValueError("copy_sweep needs at least one size in megabytes")
    counts = [elements_for(s) for s in sizes_mb]
    sweep = Sweep([float(c * FLOAT32_BYTES) for c in counts], {n: [] for n in names})
    for count, nbytes in zip(counts, sweep.sizes_bytes, strict=True):
        for route in routes:
            src, dst = route.make(count)
            result = benchmark(lambda s=src, d=dst, r=route: r.copy(s, d), sync=route.sync,
                               warmup=warmup, repeat=repeats_for(nbytes, repeat, big_repeat),
                               nbytes=nbytes, label=route.name)
            sweep.results[route.name].append(result)
            del src, dst
            gc.collect()
    return sweep


# -- Read the timings of collectives back from worker processes, and put ring and PS side by
# side.

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure

Times = dict[tuple[int, int], float]


def slowest(records: Iterable[dict[str, Any]], kind: str, field: str = "seconds") -> Times:
    """``{(workers, bytes): seconds}`` of the records of ``kind``, slowest member per group.

    ``field`` picks which time of each record: ``"seconds"`` (the median of the repeats)
    or ``"best"`` (the fastest repeat, which a burst of load from other programs cannot
    inflate unless it hits every repeat).
    """
    times: Times = {}
    for r in records:
        if r.get("kind") == kind:
            key = (int(r["workers"]), int(r["bytes"]))
            times[key] = max(times.get(key, 0.0), float(r[field]))
    if not times:
        raise ValueError(f"no {kind!r} records: did the workers print their RESULT lines?")
    return times


def round_trips(records: Iterable[dict[str, Any]], field: str = "median_s") -> Times:
    """``{(workers, bytes): seconds}`` of push + pull round trips, slowest worker per group
    (``field``: ``"median_s"`` or ``"best_s"``, as for :func:`slowest`)."""
    times: Times = {}
    for r in records:
        for row in r.get("push_pull", []):
            key = (int(r["workers"]), int(row["bytes"]))
            times[key] = max(times.get(key, 0.0), float(row[field]))
    if not times:
        raise ValueError("no push_pull records: did the workers print their RESULT lines?")
    return times


def comparison_table(ring: Times, ps: Times) -> Table:
    """One row per (workers, bytes) measured both ways, in ms, with their ratio."""
    table = Table(["workers", "bytes", "ring all-reduce ms", "parameter server ms",
                   "PS / ring"])
    for key in sorted(set(ring) & set(ps)):
        table.append([key[0], key[1], 1e3 * ring[key], 1e3 * ps[key], ps[key] / ring[key]])
    return table


def plot_comparison(ring: Times, ps: Times, workers: Sequence[int], title: str = "") -> Figure:
    """Time against message size, one colour per worker count: ring solid, PS dashed."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    colors = plt.get_cmap("tab10")
    for i, n in enumerate(workers):
        for times, style, name in ((ring, "-o", "ring"), (ps, "--s", "PS")):
            sizes = sorted(b for w, b in times if w == n)
            if sizes:
                ax.plot(sizes, [1e3 * times[(n, b)] for b in sizes], style, color=colors(i),
                        label=f"{name}, {n} worker(s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes per worker")
    ax.set_ylabel("time (ms, slowest worker's median)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


# -- Measure how much memory this process holds, to check the memory arithmetic of training.

def rss_bytes() -> int:
    """Resident set size of this process now, in bytes."""
    import psutil  # noqa: PLC0415

    return int(psutil.Process().memory_info().rss)


@dataclass
class MemorySteps:
    """Memory growth step by step: ``step(name, fn)`` runs ``fn`` and notes what it added.

    ``reader`` returns the bytes in use: this process's RSS (the default, for a CPU), or a
    GPU's allocated memory (``lambda: tf.config.experimental.get_memory_info("GPU:0")
    ["current"]``). Memory a process frees is usually kept for reuse rather than given
    back, so only growth into memory the process never used before is measured reliably:
    measure first thing in a process, and keep each step's result alive.
    """

    reader: Callable[[], int] = rss_bytes
    steps: list[tuple[str, int]] = field(default_factory=list)
    baseline: int = 0
    _last: int = 0

    def __post_init__(self) -> None:
        if not callable(self.reader):
            raise ValueError(f"reader must be a function returning bytes, not {self.reader!r}")
        self.baseline = self._last = int(self.reader())

    def step(self, name: str, fn: Callable[[], Any] = lambda: None) -> Any:
        """Run ``fn`` (its result is returned and must be kept alive by the caller) and
        record the RSS growth since the previous step."""
        result = fn()
        gc.collect()
        now = int(self.reader())
        self.steps.append((name, now - self._last))
        self._last = now
        return result

    def growth(self, name: str) -> int:
        """Bytes the step called ``name`` added."""
        for step, grown in self.steps:
            if step == name:
                return grown
        raise KeyError(f"no step {name!r}; steps are {[s for s, _ in self.steps]}")

    def table(self, expected: dict[str, float] | None = None) -> Table:
        """Measured growth per step in MB, beside the expected bytes where given."""
        expected = expected or {}
        table = Table(["step", "measured MB", "expected MB", "measured / expected"])
        for name, grown in self.steps:
            want = expected.get(name)
            table.append([name, grown / 1e6, None if want is None else want / 1e6,
                          None if not want else grown / want])
        return table


# -- The timeline of a pipelined batch: what ran when, its measured bubble, a Gantt chart.

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not on import
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Span:
    """One forward (``"F"``) or backward (``"B"``) call of a stage on a micro-batch."""

    stage: int
    microbatch: int
    phase: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Timeline:
    """Every span of one pipelined batch, with times relative to the first start."""

    stages: int
    microbatches: int
    spans: list[Span] = field(default_factory=list)

    @property
    def makespan(self) -> float:
        """Seconds from the first start to the last end."""
        return max(s.end for s in self.spans) - min(s.start for s in self.spans)

    def busy(self, stage: int) -> float:
        """Seconds ``stage`` spent computing."""
        return sum(s.seconds for s in self.spans if s.stage == stage)

    def bubble(self) -> float:
        """Measured idle share: ``1 - total busy / (stages x makespan)``."""
        busy = sum(self.busy(s) for s in range(self.stages))
        return 1.0 - busy / (self.stages * self.makespan)

    def plot(self, ax: Any = None, title: str = "") -> Figure:
        """A Gantt chart: one row per stage, one bar per span (forward solid, backward
        hatched), coloured by micro-batch."""
        import matplotlib.pyplot as plt  # noqa: PLC0415

        if ax is None:
            fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * self.stages))
        else:
            fig = ax.figure
        colors = plt.get_cmap("tab10")
        origin = min(s.start for s in self.spans)
        for s in self.spans:
            ax.barh(s.stage, (s.end - s.start) * 1e3, left=(s.start - origin) * 1e3,
                    color=colors(s.microbatch % 10), edgecolor="black", linewidth=0.5,
                    hatch="//" if s.phase == "B" else None)
        ax.set_yticks(range(self.stages), [f"stage {i}" for i in range(self.stages)])
        ax.invert_yaxis()
        ax.set_xlabel("time (ms)")
        ax.set_title(title or f"{self.microbatches} micro-batch(es): bubble {self.bubble():.0%}")
        fig.tight_layout()
        return fig


def bar_timings(results: Sequence[TimingResult], title: str = "", unit: str = "ms") -> Figure:
    """Median time per result as bars, with the min-max spread as error bars."""
    if not results:
        raise ValueError("bar_timings: no results to plot")
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6}
    if unit not in scale:
        raise ValueError(f"unit must be one of {list(scale)}, not {unit!r}")
    k = scale[unit]
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6, 3.5))
    medians = [r.median * k for r in results]
    lower = [(r.median - r.best) * k for r in results]
    upper = [(max(r.samples) - r.median) * k for r in results]
    ax.bar([r.label for r in results], medians, yerr=[lower, upper], capsize=4, color="tab:blue")
    ax.set_ylabel(f"time ({unit}, median; bars: min-max)")
    ax.set_title(title)
    fig.tight_layout()
    return fig
