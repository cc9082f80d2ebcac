"""What a profiler trace says about overlap: how long the all-reduce was in flight while the
backward pass was still computing (notebook 12, section 3).

Timing a step with one pack of gradients against several says whether the step got faster,
not why: the exchange may have run during the backward pass, or the packs may only have
cost more launches. A trace answers the question directly. ``tf.profiler.experimental``
writes one ``*.xplane.pb`` per session (an ``XSpace`` protocol buffer: planes of lines of
timed events); on the host plane every executed op is one event named ``node:OpType`` on
the thread that ran it, and asynchronous ops (a collective) are an event on the thread that
carried them out. This module turns those events into :class:`Span` objects with the
device the graph placed their op on, sorts them into collective and backward work, and
measures, per device, the collective time that lies inside the backward pass's span.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.placement import capture_fds

#: Op types that exchange data between replicas: the all-reduce of tf.distribute's
#: collective implementations (CPU ring and GPU NCCL) and the older ops.
COLLECTIVE_TYPES = frozenset({
    "CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3", "CollectiveGather",
    "CollectiveGatherV2", "CollectiveAllToAllV2", "CollectiveAllToAllV3", "NcclAllReduce",
    "NcclReduce", "CollectiveBcastSend", "CollectiveBcastRecv", "CollectiveBcastSendV2",
    "CollectiveBcastRecvV2",
})
#: The name scope ``tf.GradientTape.gradient`` gives the ops of the backward pass.
BACKWARD_SCOPE = "gradient_tape/"
KINDS = ("collective", "backward", "other")


@dataclass(frozen=True)
class Span:
    """One op's execution: which node, of what type, on which device and thread, from when to
    when (seconds on the profiler's clock)."""

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
    """Run ``fn()`` once under TensorFlow's profiler and return its ops as spans.

    One profiler session per call (about 5 ms to start and stop on a CPU), so a trace holds
    exactly one step and repeats are separate traces; ``fn`` must wait for its result (call
    ``.numpy()``), or the step's last ops would run after the session stopped.
    """
    from helpers.frameworks import import_tensorflow  # noqa: PLC0415

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
    graph node's name to its device, e.g. from a concrete function's operations).

    The executor's events are named ``node:OpType``; events whose node is not in
    ``devices`` (the profiler's own, eager copies, ops of other functions) are left out,
    so the spans are exactly the traced function's ops.
    """
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: PLC0415  (heavy import)

    space = xplane_pb2.XSpace()
    space.ParseFromString(xspace)
    spans = []
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            for event in line.events:
                name, _, op_type = plane.event_metadata[event.metadata_id].name.rpartition(":")
                if name not in devices:
                    continue
                start = (line.timestamp_ns * 1000 + event.offset_ps) * 1e-12
                spans.append(Span(name, op_type, devices[name], line.name, start,
                                  start + event.duration_ps * 1e-12))
    return sorted(spans, key=lambda s: s.start)


def covered(intervals: Iterable[tuple[float, float]], window: tuple[float, float]) -> float:
    """Length of the union of ``intervals`` inside ``window``: time during which at least one
    of them was running, counted once however many ran at the same time."""
    low, high = window
    clipped = sorted((max(a, low), min(b, high)) for a, b in intervals
                     if min(b, high) > max(a, low))
    total, reach = 0.0, low
    for a, b in clipped:
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def backward_window(spans: Sequence[Span]) -> tuple[float, float] | None:
    """From the first backward op's start to the last one's end (None without any)."""
    backward = [s for s in spans if s.kind == "backward"]
    if not backward:
        return None
    return min(s.start for s in backward), max(s.end for s in backward)


def windows_by_device(spans: Sequence[Span]) -> dict[str, tuple[float, float]]:
    """Each device's backward window: each replica computes its own gradients, on its own
    schedule, so the windows differ (one replica often finishes before the other)."""
    windows = {}
    for device in sorted({s.device for s in spans}):
        window = backward_window([s for s in spans if s.device == device])
        if window is not None:
            windows[device] = window
    return windows


def overlap_by_device(spans: Sequence[Span]) -> dict[str, float]:
    """Seconds of collective work inside each device's own backward window.

    Per device, because an all-reduce that starts while another replica is still computing
    only waits for it, while one that starts while its own replica still computes earlier
    layers is the overlap that can hide the exchange. A collective's span runs from its
    launch to its end, so it includes the time it waits for the other replicas.
    """
    return {device: covered([(s.start, s.end) for s in spans
                             if s.device == device and s.kind == "collective"], window)
            for device, window in windows_by_device(spans).items()}
