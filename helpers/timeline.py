"""What a profiler trace says about overlap (notebook 12, section 3): a timing says whether a step
got faster, a trace says what ran when. ``tf.profiler.experimental`` writes one ``*.xplane.pb`` per
session (an ``XSpace``); on its host plane each executed op is an event ``node:OpType`` on the
thread that ran it. This module turns them into :class:`Span` objects placed on their graph devices,
and measures per device how long the all-reduce was in flight inside the replica's backward pass."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.frameworks import import_tensorflow
from helpers.placement import capture_fds

#: Op types that exchange data between replicas: the all-reduce of tf.distribute's
#: collective implementations (CPU ring and GPU NCCL) and the older ops.
COLLECTIVE_TYPES = frozenset({"NcclAllReduce", "NcclReduce"} | {"Collective" + kind for kind in (
    "Reduce ReduceV2 ReduceV3 Gather GatherV2 AllToAllV2 AllToAllV3 BcastSend BcastRecv "
    "BcastSendV2 BcastRecvV2").split()})
BACKWARD_SCOPE = "gradient_tape/"  # the name scope tf.GradientTape.gradient gives its ops
#: The colour of each kind of op in :func:`draw_trace`.
COLOURS = {"backward": "tab:blue", "collective": "tab:orange", "other": "silver"}


@dataclass(frozen=True)
class Span:
    """One op's execution: node, type, device, thread, start and end (the profiler's seconds)."""
    name: str
    op_type: str
    device: str
    lane: str
    start: float
    end: float

    @property
    def kind(self) -> str:
        """``collective``, ``backward`` or ``other``: what the overlap question sorts by."""
        if self.op_type in COLLECTIVE_TYPES or "nccl" in self.op_type.lower():
            return "collective"
        if self.name.startswith(BACKWARD_SCOPE) or f"/{BACKWARD_SCOPE}" in self.name:
            return "backward"
        return "other"


def latest_xspace(logdir: str | Path) -> Path:
    """The newest ``*.xplane.pb`` under ``logdir``: the profiler writes one per session into
    ``plugins/profile/<time>/``, named after the host."""
    found = sorted(Path(logdir).rglob("*.xplane.pb"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"no *.xplane.pb under {logdir}: was the profiler stopped?")
    return found[-1]


def graph_devices(graph: Any) -> dict[str, str]:
    """Each node of a ``tf.Graph`` (``step.get_concrete_function(...).graph``) and its device
    as ``/CPU:0``: the trace names the node and the thread, not the replica it belongs to."""
    return {op.name: "/" + op.device.rpartition("device:")[2] for op in graph.get_operations()
            if op.device}


def profile_call(fn: Callable[[], Any], devices: Mapping[str, str]) -> list[Span]:
    """Run ``fn()`` once under TensorFlow's profiler and return its ops as spans: one session
    per call (about 5 ms on a CPU), so a trace holds one step; ``fn`` must wait for its result
    (``.numpy()``), or the step's last ops would run after the session stopped."""
    tf = import_tensorflow(keras=False)
    with tempfile.TemporaryDirectory() as logdir:
        with capture_fds((2,)):  # the profiler logs each start and stop, with the temp path
            tf.profiler.experimental.start(logdir)
        try:
            fn()
        finally:
            with capture_fds((2,)):
                tf.profiler.experimental.stop()
        return host_spans(latest_xspace(logdir).read_bytes(), devices)


def host_spans(xspace: bytes, devices: Mapping[str, str]) -> list[Span]:
    """The op events of the host plane of a serialized ``XSpace``, placed by ``devices`` (a
    graph node's name to its device). Events whose node is not in ``devices`` (the profiler's
    own, eager copies, other functions' ops) are left out: the spans are the traced function's."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: PLC0415  (heavy import)

    space = xplane_pb2.XSpace.FromString(xspace)
    spans = []
    for plane in (p for p in space.planes if p.name.startswith("/host:")):
        for line in plane.lines:
            for event in line.events:
                name, _, op_type = plane.event_metadata[event.metadata_id].name.rpartition(":")
                if name in devices:
                    start = (line.timestamp_ns * 1000 + event.offset_ps) * 1e-12
                    spans.append(Span(name, op_type, devices[name], line.name, start,
                                      start + event.duration_ps * 1e-12))
    return sorted(spans, key=lambda s: s.start)


def covered(intervals: Iterable[tuple[float, float]], window: tuple[float, float]) -> float:
    """Length of the union of ``intervals`` inside ``window``: time when at least one ran."""
    low, high = window
    clipped = sorted((max(a, low), min(b, high)) for a, b in intervals
                     if min(b, high) > max(a, low))
    total, reach = 0.0, low
    for a, b in clipped:
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def windows_by_device(spans: Sequence[Span]) -> dict[str, tuple[float, float]]:
    """Each device's backward window, from its first backward op's start to its last one's
    end: each replica computes its own gradients on its own schedule, so the windows differ."""
    windows: dict[str, tuple[float, float]] = {}
    for s in spans:
        if s.kind == "backward":
            start, end = windows.get(s.device, (s.start, s.end))
            windows[s.device] = (min(start, s.start), max(end, s.end))
    return dict(sorted(windows.items()))


def overlap_by_device(spans: Sequence[Span]) -> dict[str, float]:
    """Seconds of collective work inside each device's own backward window (an all-reduce that
    starts while another replica computes only waits for it; one that starts while its own
    replica computes earlier layers can hide the exchange), waiting for the others included."""
    return {device: covered([(s.start, s.end) for s in spans
                             if s.device == device and s.kind == "collective"], window)
            for device, window in windows_by_device(spans).items()}


def draw_trace(panels: Mapping[str, Sequence[Span]]) -> Any:
    """A panel per traced step: a row per device and thread, each op a bar coloured by its
    kind, over the replica's backward window (pale): what ran when, for the eye."""
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.patches import Patch  # noqa: PLC0415

    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3 * len(panels)), squeeze=False)
    for ax, (title, spans) in zip(axes[:, 0], panels.items(), strict=True):
        t0, windows = min((s.start for s in spans), default=0.0), windows_by_device(spans)
        rows = sorted({(s.device, s.lane) for s in spans})
        lanes = sorted({s.lane for s in spans})  # numbered per panel: the profiler's ids are long
        for r, (device, lane) in enumerate(rows):
            start, end = windows.get(device, (t0, t0))
            ax.barh(r, 1e3 * (end - start), left=1e3 * (start - t0), color="tab:blue", alpha=0.12)
            for kind, colour in COLOURS.items():
                ax.broken_barh([(1e3 * (s.start - t0), 1e3 * (s.end - s.start)) for s in spans
                                if (s.device, s.lane, s.kind) == (device, lane, kind)],
                               (r - 0.35, 0.7), color=colour)
        ax.set_yticks(range(len(rows)), [f"{d} {ln.split('/')[0]} #{lanes.index(ln) + 1}"
                                         for d, ln in rows], fontsize=8)
        ax.set(title=title, xlabel="ms since the first op", ylim=(max(len(rows), 1) - 0.5, -0.5))
    pale = Patch(color="tab:blue", alpha=0.12, label="the replica's backward span")
    fig.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()] + [pale], ncol=4,
               loc="lower center")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
