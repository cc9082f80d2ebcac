"""The formulas and mechanisms each notebook teaches are written in its own cells (issue 20).

The values are checked here too, on the notebook's own definitions.
"""

import ast
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from lesson_cells import cell_with_context, defined_in_cells, lesson

from helpers.costs import AlphaBeta
from helpers.measure import Span, Timeline

TAUGHT = {
    "01": ["try_gpu", "try_all_gpus"],
    "04": ["matpow", "true_power", "matpow_flops", "entry_log10", "overflows", "largest_safe_n",
           "relative_error", "check_matpow_sum"],
    "10": ["amdahl_speedup", "karp_flatt", "compute_seconds", "step_seconds",
           "parameter_server_seconds", "ring_allreduce_seconds"],
    "11": ["naive_allreduce_bytes", "ring_allreduce_bytes", "slowest", "round_trips"],
    "12": ["matmul_cost", "elementwise_cost", "OpPoint", "Roofline", "product_precision",
           "comm_threshold", "overlap_bounds", "accumulation_seconds", "dp_threshold"],
    "13": ["zero_bytes_per_replica", "bubble_fraction", "run_gpipe", "TrainingMemory",
           "MemorySteps", "replayed_bubble", "waiting_share", "gpipe_order", "run_pipeline",
           "one_f_one_b_order", "run_1f1b", "step_needs"],
    "14": ["bytes_per_parameter", "float16_losses", "dynamic_scale", "reduce_scatter",
           "all_gather", "zero_sent_bytes", "memory_per_device", "Held"],
    "15": ["noise_scale", "steps_and_examples", "model_flops_per_example", "mfu"],
}
#: What later notebooks reuse: the package keeps one copy, with a pointer to its notebook.
REUSED = {"parameter_server_seconds", "ring_allreduce_seconds", "zero_bytes_per_replica"}
LINK = AlphaBeta(1e-4, 1e-9, "test")


@pytest.mark.parametrize(("number", "name"), [(n, name) for n, names in TAUGHT.items()
                                              for name in names])
def test_taught_in_a_code_cell_of_its_notebook(number, name):
    assert name in defined_in_cells(number), f"notebook {number} should define {name} in a cell"


def test_the_package_keeps_no_copy_of_what_one_notebook_teaches():
    taught = {name for names in TAUGHT.values() for name in names} - REUSED
    package = Path(__file__).resolve().parent.parent / "helpers"
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {node.name for node in tree.body
                   if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        assert not defined & taught, f"{path.name} keeps a copy of {sorted(defined & taught)}"


def test_amdahl_and_karp_flatt():
    nb = lesson("10")
    assert nb.amdahl_speedup(1, 0.9) == pytest.approx(1.0)
    assert nb.amdahl_speedup(8, 1.0) == pytest.approx(8.0)
    assert nb.amdahl_speedup(10**6, 0.95) == pytest.approx(20.0, rel=1e-3)
    for p in (0.5, 0.9, 0.99):
        for n in (2, 4, 16):
            assert nb.karp_flatt(nb.amdahl_speedup(n, p), n) == pytest.approx(1 - p)


def test_notebook_10_exchanges_match_the_package_copies():
    from helpers import costs as communication

    nb = lesson("10")
    for n in (1, 2, 8, 64):
        for m in (1e3, 1e8):
            assert nb.ring_allreduce_seconds(n, m, LINK) == pytest.approx(
                communication.ring_allreduce_seconds(n, m, LINK))
            for s in (1, 4):
                assert nb.parameter_server_seconds(n, m, LINK, s) == pytest.approx(
                    communication.parameter_server_seconds(n, m, LINK, s))


def test_step_model():
    nb = lesson("10")
    per_step = AlphaBeta(0.001, 1e-5)  # 1 ms fixed + 10 us per example
    assert nb.compute_seconds(1, 1000, per_step) == pytest.approx(0.011)
    # Four workers on two cores: the total work (4 fixed costs + 1000 examples) over 2.
    assert nb.compute_seconds(4, 1000, per_step, slots=2) == pytest.approx((4 * 0.001 + 0.01) / 2)
    base = nb.compute_seconds(4, 1000, per_step)
    assert nb.step_seconds(4, 1000, per_step, 1e6, LINK, "none") == base
    assert nb.step_seconds(4, 1000, per_step, 1e6, LINK, "ring") == pytest.approx(
        base + nb.ring_allreduce_seconds(4, 1e6, LINK))
    assert nb.step_seconds(4, 1000, per_step, 1e6, LINK, "ps", servers=2) == pytest.approx(
        base + nb.parameter_server_seconds(4, 1e6, LINK, 2))


def test_allreduce_bytes():
    nb = lesson("11")
    assert nb.naive_allreduce_bytes(4, 100) == [(300, 300), (100, 100), (100, 100), (100, 100)]
    assert nb.naive_allreduce_bytes(3, 10, root=2)[2] == (20, 20)
    assert nb.ring_allreduce_bytes(4, 100) == [(150, 150)] * 4


def test_roofline_and_communication_threshold():
    nb = lesson("12")
    assert nb.matmul_cost(2, 3, 4) == (48.0, 4.0 * (6 + 12 + 8))
    assert nb.elementwise_cost(10, inputs=2, flops_per_element=1) == (10.0, 120.0)
    roof = nb.Roofline(peak=100e9, bandwidth=10e9, name="test")
    assert roof.ridge == 10
    assert roof.attainable(1) == 10e9 and roof.attainable(1000) == 100e9
    assert roof.bound(1) == "memory" and roof.bound(10) == "compute"
    op = nb.OpPoint("op", flops=1e9, nbytes=1e8, seconds=0.1)
    assert op.intensity == 10 and roof.fraction(op) == pytest.approx(0.1)
    assert nb.comm_threshold(1e-5, 1e-3) == pytest.approx(100)
    assert nb.overlap_bounds(0.5, 3.0, 1.0) == (3.5, 4.5)  # the fixed cost is paid either way
    compute = AlphaBeta(0.001, 1e-5)
    # accumulated: one call (one fixed cost) and one exchange for the 4 micro-batches
    assert nb.accumulation_seconds(4, 10, compute, 0.01) == pytest.approx(
        0.001 + 0.01 + 4 * 10 * 1e-5)
    assert nb.accumulation_seconds(4, 10, compute, 0.01, accumulate=False) == pytest.approx(
        4 * (0.0011 + 0.01))
    assert nb.dp_threshold(3e12, 1e9) == pytest.approx(4000)  # (4/3) C / W
    assert nb.dp_threshold(4.59e14, 1.8e11, grad_bytes=2, flops_per_param=4) == pytest.approx(
        2550)  # the scaling book's C / W for a TPU v5p over one axis


@pytest.mark.parametrize(("device", "capability", "tf32_on", "label"), [
    ("/CPU:0", (9, 0), True, "float32"), ("/GPU:0", (7, 5), True, "float32"),  # T4: no TF32
    ("/GPU:0", (8, 0), True, "TF32"), ("/GPU:0", (9, 0), True, "TF32"),  # A100, H200
    ("/GPU:0", (9, 0), False, "float32")])  # TF32 switched off
def test_12_labels_the_roof_with_the_precision_tensorflow_runs(device, capability, tf32_on,
                                                                 label):
    details = {"compute_capability": capability}
    experimental = SimpleNamespace(get_device_details=lambda gpu: details,
                                   tensor_float_32_execution_enabled=lambda: tf32_on)
    tf = SimpleNamespace(config=SimpleNamespace(
        list_physical_devices=lambda kind: ["gpu0"], experimental=experimental))
    assert lesson("12", "product_precision", tf=tf).product_precision(device) == label


def test_noise_scale_the_steps_examples_trade_off_and_mfu():
    nb = lesson("15", np=np)  # the notebook imports NumPy in a cell of its own
    # |G|^2 = 2 and tr(Sigma) = 100: a batch of B has E|G_B|^2 = 2 + 100 / B
    signal, trace, b_simple = nb.noise_scale([2 + 100 / 10, 2 + 100 / 10], [2 + 100 / 100], 10, 100)
    assert (signal, trace, b_simple) == pytest.approx((2, 100, 50))
    for batch in (5, 50, 500):
        steps, examples = nb.steps_and_examples(batch, 50)
        assert (steps - 1) * (examples - 1) == pytest.approx(1)  # the paper's trade-off
    assert nb.steps_and_examples(50, 50) == (2, 2)
    assert nb.mfu(1e9, 0.5, 4e9) == pytest.approx(0.5)
    layers = [SimpleNamespace(flops=f) for f in (0, 10, 0, 20)]  # the first layer with FLOPs: 10
    assert nb.model_flops_per_example(layers) == 3 * 30 - 10  # its input gradient is not needed


def test_zero_reproduces_the_papers_example():
    nb = lesson("13", Span=Span, Timeline=Timeline)
    paper = [nb.zero_bytes_per_replica(7.5e9, 64, s) / 1e9 for s in range(4)]
    assert np.allclose(paper, [120, 31.4, 16.6, 1.9], atol=0.05)  # the paper's Figure 1


def test_gpipe_order_its_replay_and_its_waiting():
    """The schedule's order (no timing: these machines are noisy), then the replay and the
    waiting on a timeline made up by hand."""
    nb = lesson("13", Span=Span, Timeline=Timeline)
    t = nb.run_gpipe([lambda x: (x, x)] * 2, [lambda saved, dy: dy] * 2, [1, 2, 3, 4],
                     lambda y, j: y)
    assert len(t.spans) == 2 * 2 * 4
    last = [s.microbatch for s in sorted(t.spans, key=lambda s: s.start)
            if s.stage == 1 and s.phase == "B"]
    assert last == [3, 2, 1, 0]  # the last stage turns round: last micro-batch first
    late = Timeline(2, 1, [Span(0, 0, "F", 0.0, 1.0), Span(1, 0, "F", 1.5, 2.5),
                           Span(1, 0, "B", 2.5, 3.5), Span(0, 0, "B", 3.5, 4.5)])
    assert nb.replayed_bubble(late) == pytest.approx(0.5)  # 4 s of work, 4 s replayed
    assert nb.waiting_share(late) == pytest.approx(0.5 / (2 * 4.5))  # stage 1 started late
    uneven = Timeline(2, 1, [Span(0, 0, "F", 0.0, 1.0), Span(1, 0, "F", 1.0, 4.0),
                             Span(1, 0, "B", 4.0, 5.0), Span(0, 0, "B", 5.0, 6.0)])
    assert nb.replayed_bubble(uneven) == pytest.approx(0.5) and nb.waiting_share(uneven) == 0


def test_1f1b_order_what_it_holds_and_its_replay():
    """1F1B's steps and the activations each stage holds, counted (no timing)."""
    nb = lesson("13", Span=Span, Timeline=Timeline)
    assert [nb.one_f_one_b_order(3, 4, s) for s in range(3)] == [
        "FFFBFBBB", "FFBFBFBB", "FBFBFBFB"]  # p - s - 1 warm-up forwards
    assert nb.one_f_one_b_order(3, 1, 0) == "FB"  # fewer micro-batches than warm-up steps
    stages = [lambda x: (x, x)] * 3, [lambda saved, dy: dy] * 3
    t = nb.run_1f1b(*stages, [1, 2, 3, 4], lambda y, j: y)
    assert t.held == [3, 2, 1]  # stage s: p - s micro-batches at most
    assert nb.run_gpipe(*stages, [1, 2, 3, 4], lambda y, j: y).held == [4, 4, 4]  # all of them
    first = [s.microbatch for s in t.spans if s.stage == 0 and s.phase == "B"]
    assert first == [0, 1, 2, 3]  # the oldest micro-batch's backward first
    # 1F1B on two stages, steps of 1 s, the second forward on stage 1 started 0.5 s late
    late = Timeline(2, 2, [Span(0, 0, "F", 0, 1), Span(0, 1, "F", 1, 2), Span(1, 0, "F", 1, 2),
                           Span(1, 0, "B", 2, 3), Span(0, 0, "B", 3, 4), Span(1, 1, "F", 3.5, 4.5),
                           Span(1, 1, "B", 4.5, 5.5), Span(0, 1, "B", 5.5, 6.5)])
    assert nb.replayed_bubble(late) == pytest.approx(1 - 8 / (2 * 6))  # (p - 1) / (m + p - 1)
    assert nb.waiting_share(late) == pytest.approx(0.5 / (2 * 6.5))


def test_notebook_13_zero_bytes_match_the_package_copy():
    """Notebook 14 reuses notebook 13's ZeRO formula from helpers.costs."""
    from helpers import costs

    nb = lesson("13", "zero_bytes_per_replica")
    for params in (26124, 7.5e9):
        for n in (1, 4, 64):
            for stage in range(4):
                assert nb.zero_bytes_per_replica(params, n, stage) == pytest.approx(
                    costs.zero_bytes_per_replica(params, n, stage))
                assert nb.zero_bytes_per_replica(params, n, stage, 4, 4, 8) == pytest.approx(
                    costs.zero_bytes_per_replica(params, n, stage, 4, 4, 8))


def test_a_calculator_cell_comes_with_the_definitions_it_needs_and_nothing_measured():
    context = cell_with_context("13", "from helpers.calculator import")
    assert "def bubble_fraction" in context and context.rstrip().endswith("v=slider(2, 1, 8))")
    assert "LocalTFCluster" not in context and "benchmark" not in context, context
    with pytest.raises(ValueError, match="computed with a call"):  # 12's needs section 1's ops
        cell_with_context("12", "from helpers.calculator import")
