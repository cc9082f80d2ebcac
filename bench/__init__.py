"""Benchmarks of the series' own numbers: ``make bench`` (``python -m bench.run_all``).

These are measurements, not timed tests. The machines that run them are noisy (shared
cores, other people's jobs), so every figure is a ratio or a count measured side by side
in one run: the framework and its reference are timed in alternating rounds, each round
gives one paired ratio, and the figure is the median over the rounds. A slow minute on
a busy machine slows both sides of a pair and cancels out.

Each section runs in its own process (and the matmul section in one process per
configuration), because the settings that matter (threads, BLAS kernels) are fixed
when a library is loaded and cannot be changed afterwards in the same process.
"""

#: Every process the bench starts inherits this variable (set to the run's id), so the
#: processes it leaves behind can be found afterwards without confusing them with other
#: people's processes on the same machine.
RUN_MARKER = "SERIES_BENCH_RUN"
