"""Reading a profiler trace into spans, and the overlap of collectives with the backward pass."""

from __future__ import annotations

import pytest

from helpers.timeline import (
    Span,
    covered,
    draw_trace,
    graph_devices,
    host_spans,
    latest_xspace,
    overlap_by_device,
    windows_by_device,
)


def span(name, op_type, device, start, end, lane="tf_Compute/1"):
    return Span(name, op_type, device, lane, start, end)


def test_kinds_follow_the_op_type_and_the_tape_scope():
    assert span("CollectiveReduceV2_1", "CollectiveReduceV2", "/CPU:0", 0, 1).kind == "collective"
    assert span("x", "NcclAllReduce", "/GPU:0", 0, 1).kind == "collective"
    assert span("gradient_tape/replica_1/dense/MatMul", "MatMul", "/CPU:1", 0, 1).kind == "backward"
    assert span("replica_1/gradient_tape/dense/MatMul", "MatMul", "/CPU:1", 0, 1).kind == "backward"
    assert span("sequential/dense/MatMul", "MatMul", "/CPU:0", 0, 1).kind == "other"
    assert span("my_gradient_tape_like/MatMul", "MatMul", "/CPU:0", 0, 1).kind == "other"


def test_covered_counts_overlapping_intervals_once_and_clips_to_the_window():
    assert covered([(0, 2), (1, 3)], (0, 10)) == 3
    assert covered([(0, 2), (1, 3)], (1.5, 2.5)) == 1.0
    assert covered([(5, 6)], (0, 4)) == 0.0
    assert covered([], (0, 4)) == 0.0
    assert covered([(0, 1), (2, 3), (0.5, 2.5)], (0, 3)) == 3


def test_overlap_is_per_replica_a_collective_waiting_for_the_other_replica_is_none():
    spans = [
        span("gradient_tape/a", "MatMul", "/CPU:0", 0.0, 1.0),
        span("CollectiveReduceV2", "CollectiveReduceV2", "/CPU:0", 1.0, 2.0),  # after its own
        span("gradient_tape/replica_1/a", "MatMul", "/CPU:1", 0.0, 1.5),
        span("gradient_tape/replica_1/b", "MatMul", "/CPU:1", 1.5, 3.0),
        span("CollectiveReduceV2_1", "CollectiveReduceV2", "/CPU:1", 2.0, 4.0),  # 1 s inside
        span("sequential/dense/MatMul", "MatMul", "/CPU:2", 0.0, 1.0),  # no backward: absent
    ]
    assert windows_by_device(spans) == {"/CPU:0": (0.0, 1.0), "/CPU:1": (0.0, 3.0)}
    assert overlap_by_device(spans) == {"/CPU:0": 0.0, "/CPU:1": 1.0}


class _Op:
    def __init__(self, name, device):
        self.name, self.device = name, device


class _Graph:
    def get_operations(self):
        return [_Op("a", "/job:localhost/replica:0/task:0/device:CPU:1"), _Op("b", ""),
                _Op("c", "/job:localhost/replica:0/task:0/device:GPU:0")]


def test_draw_trace_has_a_panel_per_step_and_a_row_per_device_and_thread():
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    spans = [span("gradient_tape/a", "MatMul", "/CPU:0", 0.0, 1.0),
             span("CollectiveReduceV2", "CollectiveReduceV2", "/CPU:0", 0.5, 2.0, lane="t/2"),
             span("b", "MatMul", "/CPU:1", 0.0, 1.0)]
    fig = draw_trace({"first": spans, "empty": []})
    first, empty = fig.axes
    assert first.get_title() == "first" and [t.get_text() for t in first.get_yticklabels()] == [
        "/CPU:0 t #1", "/CPU:0 tf_Compute #2", "/CPU:1 tf_Compute #2"]
    assert empty.get_yticklabels() == [] and len(fig.legends[0].legend_handles) == 4


def test_graph_devices_names_short_devices_and_skips_unplaced_nodes():
    assert graph_devices(_Graph()) == {"a": "/CPU:1", "c": "/GPU:0"}


def test_latest_xspace_says_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="no \\*.xplane.pb"):
        latest_xspace(tmp_path)
    run = tmp_path / "plugins" / "profile" / "2026_01_01"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(b"")
    assert latest_xspace(tmp_path).name == "host.xplane.pb"


def test_host_spans_reads_op_events_and_places_them_by_the_graph():
    xplane_pb2 = pytest.importorskip("tensorflow.tsl.profiler.protobuf.xplane_pb2")
    space = xplane_pb2.XSpace()
    plane = space.planes.add(name="/host:CPU")
    for i, name in enumerate(["gradient_tape/a:MatMul", "CollectiveReduceV2:CollectiveReduceV2",
                              "ExecutorState::Process", "other:Add"], start=1):
        plane.event_metadata[i].id = i
        plane.event_metadata[i].name = name
    line = plane.lines.add(id=7, name="tf_Compute/7", timestamp_ns=1000)
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=2_000_000)  # 2 us
    line.events.add(metadata_id=2, offset_ps=1_000_000, duration_ps=3_000_000)
    line.events.add(metadata_id=3, offset_ps=0, duration_ps=5_000_000)  # not an op: skipped
    line.events.add(metadata_id=4, offset_ps=0, duration_ps=1)  # not in the graph: skipped
    space.planes.add(name="/device:GPU:0")  # device planes are not read
    spans = host_spans(space.SerializeToString(),
                       {"gradient_tape/a": "/CPU:0", "CollectiveReduceV2": "/CPU:0"})
    assert [(s.name, s.op_type, s.device, s.lane) for s in spans] == [
        ("gradient_tape/a", "MatMul", "/CPU:0", "tf_Compute/7"),
        ("CollectiveReduceV2", "CollectiveReduceV2", "/CPU:0", "tf_Compute/7")]
    assert spans[0].start == pytest.approx(1e-6) and spans[0].end == pytest.approx(3e-6)
    assert overlap_by_device(spans)["/CPU:0"] == pytest.approx(1e-6)
