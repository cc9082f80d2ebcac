"""Turn ``results.json`` into the readable ``RESULTS.md``.

Everything here is pure: a dict in, markdown out. Every number in the text is read from
the results, so the page stays true for whichever machine ran the bench; sentences that
explain a missed target are chosen from what the measurements show.
"""

from __future__ import annotations

from typing import Any

from bench.stats import FIGURES, NOTEBOOK_LIMIT_S, check_targets
from helpers.frameworks import TUNING_ENV
from helpers.measure import GENERIC_KERNELS
from tools import markdown

#: Width in bits of the vectors each OpenBLAS kernel set computes with (AVX-512, AVX2/AVX).
KERNEL_VECTOR_BITS = {"SkylakeX": 512, "CooperLake": 512, "SapphireRapids": 512,
                      "Haswell": 256, "Zen": 256, "Sandybridge": 256, "Bulldozer": 256,
                      "Piledriver": 256, "Steamroller": 256, "Excavator": 256}


def vector_bits(kernels: str | None) -> int | None:
    """How wide the vectors of an OpenBLAS kernel set are (128 for the generic SSE sets)."""
    if not kernels:
        return None
    if kernels.lower() in {k.lower() for k in GENERIC_KERNELS}:
        return 128
    return {k.lower(): bits for k, bits in KERNEL_VECTOR_BITS.items()}.get(kernels.lower())


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table: significant digits, '-' for missing, yes/no for booleans."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"
    return str(value)


def ratio(value: float | None) -> str:
    """A ratio in prose: two decimals."""
    return "-" if value is None else f"{value:.2f}"


def table(columns: list[str], rows: list[list[Any]]) -> str:
    """A markdown table with the bench's number format (the one renderer is tools.markdown)."""
    return markdown.table(columns, rows, fmt)


def _met(flag: bool | None) -> str:
    return {True: "met", False: "**missed**", None: "not measured"}[flag]


# -- explanations ---------------------------------------------------------------------
def _series(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next((r for r in rows if r.get("name") == "series" and "routes" in r), {})


def _ratio(row: dict[str, Any], route: str, key: str = "vs_blas") -> float | None:
    return row.get("routes", {}).get(route, {}).get(key)


def _per_cpu(row: dict[str, Any], route: str) -> float | None:
    return _ratio(row, route, "vs_blas_per_cpu_s")


def _kernels(row: dict[str, Any], owner: str) -> str | None:
    """The kernel set the OpenBLAS of ``owner`` (mxnet, numpy) chose in a probe."""
    return row.get("kernels", {}).get(owner)


def _named(rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next((r for r in rows if r.get("name") == name), {})


def _best(row: dict[str, Any]) -> float | None:
    """The faster of MXNet's two products in a probe, as a ratio to NumPy."""
    found = [r for r in (_ratio(row, "mxnet dot"), _ratio(row, "mxnet FullyConnected"))
             if r is not None]
    return max(found) if found else None


def explain_mxnet(matmul: dict[str, Any]) -> list[str]:
    """Why MXNet multiplies as fast as it does as the series runs, from the probes."""
    rows = [r for r in matmul.get("mxnet", []) if "routes" in r]
    series = _series(rows)
    if not series:
        return ["The MXNet probes did not run; see the errors above."]
    cores = matmul.get("physical_cores")
    settings = series.get("import_settings", {})
    read = " ".join(f"`{k}={v}`" for k, v in settings.get("read", {}).items())
    by = ("added by `import_mxnet`" if settings.get("added") == settings.get("read")
          else "set in the environment")
    dot, fc = _ratio(series, "mxnet dot"), _ratio(series, "mxnet FullyConnected")
    removed = " ".join(f"`{k}={v}`" for k, v in matmul.get("removed_from_environment", {}).items())
    out = [f"This machine's environment sets {removed}; every probe ran without it, so "
           "NumPy used its own kernels and MXNet what `import_mxnet` chooses."] if removed else []
    out += [f"As the series runs, MXNet started with {read or 'no settings'} "
           f"({by if read else 'the tuning was off'}): its OpenBLAS used "
           f"`{_kernels(series, 'mxnet')}` kernels and `nd.dot` worked on "
           f"{series.get('threads', {}).get('mxnet dot')} thread(s) of {cores} physical "
           f"cores, at {ratio(dot)} of NumPy's speed; `nd.FullyConnected`, the same product "
           f"through oneDNN on the same OpenMP pool, at {ratio(fc)}. The faster of the two "
           f"(`matmul_mx_best_vs_blas`) is {ratio(_best(series))}."]
    defaults = _named(rows, "library defaults")
    if defaults:
        kernels, threads = _kernels(defaults, "mxnet"), defaults.get("threads", {}).get(
            "mxnet dot")
        text = (f"Imported as installed (`{TUNING_ENV}=0`), MXNet ran `nd.dot` at "
                f"{ratio(_ratio(defaults, 'mxnet dot'))} of NumPy's speed, with `{kernels}` "
                f"kernels on {threads} thread(s)")
        why = []
        if vector_bits(kernels) == 128:
            why.append(f"its OpenBLAS 0.3.13 does not recognise this CPU and falls back to "
                       f"`{kernels}` (SSE, no AVX)")
        if isinstance(threads, int) and isinstance(cores, int) and threads < cores:
            why.append("on x86 MXNet sizes its OpenMP pool to half the logical CPUs")
        out.append(text + (": " + "; ".join(why) if why else "") + ".")
    singles = [r for r in rows if r.get("name") in ("threads only", "kernels only")]
    if singles:
        out.append("One setting at a time: " + "; ".join(
            f"`{r['what']}` {ratio(_ratio(r, 'mxnet dot'))}" for r in singles) + ".")
    mine, numpys = _kernels(series, "mxnet"), _kernels(series, "numpy")
    mine_bits, numpy_bits = vector_bits(mine), vector_bits(numpys)
    if dot is not None and dot < 0.8 and mine_bits and numpy_bits and numpy_bits > mine_bits:
        text = (f"What `nd.dot` still lacks is vector width: MXNet's OpenBLAS runs `{mine}` "
                f"kernels ({mine_bits}-bit vectors), NumPy's `{numpys}` ({numpy_bits}-bit), "
                f"{numpy_bits // mine_bits}x the work per instruction")
        if fc is not None and fc > dot:
            text += "; oneDNN picks its kernels from the CPU itself, so `nd.FullyConnected` " \
                    "gets closer to NumPy"
        out.append(text + ".")
    return out


def brief_mxnet(matmul: dict[str, Any]) -> str:
    """One paragraph for the list of misses: MXNet's two products and what was tried."""
    rows = [r for r in matmul.get("mxnet", []) if "routes" in r]
    series = _series(rows)
    if not series:
        return "The MXNet probes did not run; see the errors below."
    tried = "; ".join(f"`{r['what']}` {ratio(_ratio(r, 'mxnet dot'))}" for r in rows
                      if r is not series)
    return (f"As the series runs, `nd.dot` (MXNet's bundled OpenBLAS, "
            f"`{_kernels(series, 'mxnet')}` kernels, "
            f"{series.get('threads', {}).get('mxnet dot')} thread(s) of "
            f"{matmul.get('physical_cores')} cores) reached {ratio(_ratio(series, 'mxnet dot'))}"
            f" of NumPy and `nd.FullyConnected` (oneDNN) "
            f"{ratio(_ratio(series, 'mxnet FullyConnected'))}. Other configurations, `nd.dot`: "
            f"{tried or 'none'}. Details under MXNet below.")


def explain_tensorflow(matmul: dict[str, Any]) -> list[str]:
    """How TensorFlow's matmul compares and what its settings change."""
    rows = [r for r in matmul.get("tensorflow", []) if "routes" in r]
    series = _series(rows)
    if not series:
        return ["The TensorFlow probes did not run; see the errors above."]
    threads = series.get("threads", {}).get("tensorflow matmul")
    pool = series.get("intra_op_threads")
    out = [f"TensorFlow {series.get('version')} runs `tf.matmul` at "
           f"{ratio(_ratio(series, 'tensorflow matmul'))} of NumPy's speed with oneDNN "
           f"{'on' if series.get('onednn') else 'off'} and "
           + (f"{pool} intra-op threads" if pool else "its default intra-op pool (one thread "
              "per core)") + f"; the product used {threads} thread(s)."]
    wall, per_cpu = _ratio(series, "tensorflow matmul"), _per_cpu(series, "tensorflow matmul")
    if wall is not None and per_cpu is not None and wall < 0.8 <= per_cpu:
        out.append(
            f"Per CPU-second, which other programs on the cores do not change, it does "
            f"{ratio(per_cpu)} of NumPy's work: its kernels are as good as NumPy's, and the "
            f"wall-time ratio was lost to contention (the probe got "
            f"{fmt(series.get('cpu_share'))} CPU-seconds per second; a multi-threaded "
            f"product that waits for a descheduled thread loses more than a single call).")
    for row in rows:
        if row is series:
            continue
        out.append(f"With `{row['what']}`: {ratio(_ratio(row, 'tensorflow matmul'))} of NumPy.")
    return out


def explain_miss(key: str, results: dict[str, Any]) -> str:
    """What limits a missed figure and what was tried, from the measurements."""
    d = results.get("details", {})
    if key == "suite_seconds":
        books = d.get("suite", {}).get("notebooks", {})
        slow = sorted(books.items(), key=lambda kv: -kv[1]["seconds"])[:3]
        slow_text = ", ".join(f"{name} {b['seconds']:.0f} s" for name, b in slow)
        single = d.get("cluster", {}).get("single_worker", {}).get("ready_s")
        s = d.get("suite", {})
        run = results.get("run", {})
        before = s.get("load_average_before", run.get("load_average_start"))
        after = s.get("load_average_after", run.get("load_average_end"))
        failed = [name for name, b in books.items() if b.get("failed")]
        shaped, skipped = s.get("shaped_seconds"), s.get("shaping_problem")
        return (f"The slowest notebooks were {slow_text}. "
                + (f"The sections on shaped links were skipped here ({skipped}). " if skipped
                   else f"The cells that build hosts on shaped links took {shaped:.0f} s of the "
                   f"notebooks' {s.get('cells_seconds', 0):.0f} s; without them the suite would "
                   f"still take about {s['suite_seconds'] - shaped:.0f} s. " if shaped else "")
                + "Every notebook starts a kernel and "
                "imports TensorFlow and MXNet" + (f" (a process that imports TensorFlow and "
                f"starts a server took {single:.1f} s in this run)" if single else "")
                + f". Load average (1, 5, 15 min) before the suite: {before}, after it: "
                f"{after}; the suite itself keeps one to two processes busy, more means "
                "other work shared the cores."
                + (f" Notebooks with failing cells: {', '.join(failed)}." if failed else ""))
    if key == "timing_error":
        t = d.get("timing", {})
        parts = [f"{fw}: {fmt(t[fw]['error'])}" for fw in ("mxnet", "tensorflow") if fw in t]
        return ("The helper and the outer clock disagreed by " + ", ".join(parts)
                + ". Both time the same execution, so the difference is the helper's own "
                "overhead or a missing synchronisation, not machine noise.")
    if key in ("matmul_mx_vs_blas", "matmul_mx_best_vs_blas"):
        return brief_mxnet(d.get("matmul", {}))
    if key == "matmul_tf_vs_blas":
        return (" ".join(explain_tensorflow(d.get("matmul", {})))
                + " Load on the machine during the probe shows in its `cpu share`.")
    if key == "cluster_ready_seconds":
        c = d.get("cluster", {})
        single = c.get("single_worker", {}).get("ready_s")
        cores = results.get("machine", {}).get("logical_cpus")
        return ("The cluster is ready the moment every task's port accepts connections, "
                "with no fixed sleep, so what remains is start-up: "
                + (f"one worker started alone needs {single:.1f} s (a new Python process "
                   "that must import TensorFlow before its server can listen); " if single else "")
                + f"two workers import it at the same time on {cores} cores, and the "
                "machine's other load slows both.")
    if key == "cluster_teardown_seconds":
        return ("Teardown sends SIGTERM and waits up to 2 s before SIGKILL; a task that "
                "ignores SIGTERM costs the whole grace period.")
    if key == "orphans":
        procs = results.get("details", {}).get("orphans", {}).get("processes", [])
        kinds = ", ".join(sorted({p["kind"] for p in procs})) or "see the list"
        return f"Processes of this run were still alive after the bench ended them: {kinds}."
    return ""


# -- sections -------------------------------------------------------------------------
def _header(results: dict[str, Any]) -> list[str]:
    m = results.get("machine", {})
    run = results.get("run", {})
    v = m.get("versions", {})
    gpus = ", ".join(m.get("gpus") or []) or "none"
    return [
        "# Benchmarks of the series",
        "",
        f"Measured on {m.get('date', '?')}: {m.get('cpu', '?')}, "
        f"{m.get('logical_cpus', '?')} logical CPUs ({m.get('physical_cores', '?')} physical "
        f"cores), {m.get('memory_gib', '?')} GiB, GPUs: {gpus}; {m.get('platform', '?')}, "
        f"Python {m.get('python', '?')}, TensorFlow {v.get('tensorflow')}, MXNet "
        f"{v.get('mxnet')}, NumPy {v.get('numpy')}.",
        "",
        f"Load average (1, 5, 15 min) at the start: {run.get('load_average_start')}, at the "
        f"end: {run.get('load_average_end')}; the bench took {fmt(run.get('seconds'))} s "
        f"(`{' '.join(['python -m bench.run_all', *run.get('argv', [])])}`).",
        "",
        "Produced by `make bench` (`python -m bench.run_all --help` for single sections). "
        "Every figure is a ratio or a count measured side by side in this run: the framework "
        "and its reference are timed in alternating rounds, each round gives one ratio, "
        "and the figure is the median over the rounds, so load that slows a round slows "
        "both sides of its ratio.",
        "",
    ]


def _figures(results: dict[str, Any]) -> list[str]:
    # recomputed from the values, so the page and the figures cannot disagree
    targets = check_targets({k: results.get(k) for k in FIGURES})
    rows = []
    for key in FIGURES:
        t = targets.get(key, {})
        rows.append([f"`{key}`", results.get(key), t.get("target", "none"),
                     _met(t.get("met")) if t else "-"])
    out = ["## Figures", "", table(["figure", "value", "target", ""], rows), ""]
    missed = [k for k in FIGURES if targets.get(k, {}).get("met") is False]
    if missed:
        out += ["### Where a target is missed", ""]
        for key in missed:
            out += [f"- `{key}`: {explain_miss(key, results)}"]
        out.append("")
    errors = results.get("errors", {})
    if errors:
        out += ["### Sections that failed", ""]
        out += [f"- {name}: `{msg.splitlines()[0][:300]}`" for name, msg in errors.items()]
        out.append("")
    return out


def _suite(s: dict[str, Any]) -> list[str]:
    books = s.get("notebooks", {})
    rows = [[name, b["seconds"], b.get("shaped_seconds") or "", b["cells"], b["failed"],
             "**over**" if b["seconds"] > NOTEBOOK_LIMIT_S else ""] for name, b in books.items()]
    return [
        "## Notebook suite (`suite_seconds`)", "",
        f"`{s.get('command')}` took {fmt(s.get('suite_seconds'))} s and "
        f"{'passed' if s.get('passed') else 'did not pass'} ({s.get('summary', '')}). "
        "Per notebook, from the same run's JUnit report (sum of its cells' set-up, call "
        f"and tear-down, kernel start-up included); limit {NOTEBOOK_LIMIT_S:.0f} s each. "
        "`shaped links` is the part spent in the cells that build hosts on shaped links "
        "(`ShapedNetwork`).", "",
        table(["notebook", "seconds", "shaped links", "cells", "failed",
               f"> {NOTEBOOK_LIMIT_S:.0f} s"], rows),
        "",
    ]


def _timing(t: dict[str, Any]) -> list[str]:
    rows = []
    for fw in ("mxnet", "tensorflow"):
        if fw in t:
            r = t[fw]
            rows.append([fw, r.get("products"), r["helper_median_s"] * 1e3,
                         r["outer_median_s"] * 1e3, r["error"], r["separate_median_s"] * 1e3,
                         r["separate_runs_difference"], r["separate_spread"]])
    mx = t.get("mxnet", {})
    return [
        "## Timing accuracy (`timing_error`)", "",
        f"Workload: {t.get('n')} x {t.get('n')} float32 products, as many as take about "
        "0.1 s (independent ones for MXNet; a chain for TensorFlow, whose graph optimiser "
        "would merge identical independent products into one). Each of "
        f"{t.get('rounds')} rounds reads an independent clock (`time.monotonic_ns`, the helper "
        "uses `perf_counter`) before calling `helpers.measure.benchmark(work, sync=..., "
        "warmup=0, repeat=1)` and again after the framework's own wait (`mx.nd.waitall()`, "
        "`tf.test.experimental.sync_devices()`): both clocks time the same execution, so the "
        "machine's load cannot make them differ, only a timer that stops too early or "
        "costs too much can. `timing_error` is |median(helper / outer) - 1|, the worse "
        "framework. The same bare loop also timed separate runs of the workload, "
        "alternating with the helper's: their difference is what run-to-run noise on this "
        "machine looks like.", "",
        table(["framework", "products", "helper ms", "outer clock ms", "error",
               "separate run ms", "separate-run difference", "separate-run spread"], rows),
        "",
        "Without synchronisation (`sync=\"none\"`), the helper's timing of the same MXNet "
        f"work is {fmt(mx.get('unsynchronised_fraction'))} of the true time "
        f"(median {fmt((mx.get('unsynchronised_median_s') or 0) * 1e3)} ms): it measures "
        "how fast MXNet's engine accepts the work, not how long the work takes.", "",
    ]


def _matmul(m: dict[str, Any]) -> list[str]:
    out = ["## Matrix product against NumPy's BLAS (`matmul_tf_vs_blas`, `matmul_mx_vs_blas`, "
           "`matmul_mx_best_vs_blas`)",
           "", f"float32 {m.get('n')} x {m.get('n')} products; each configuration runs in its "
           "own process (threads and BLAS kernels are fixed when the libraries load) and "
           "times NumPy and the framework in alternating rounds. Ratio = framework GFLOP/s "
           "/ NumPy GFLOP/s (median of paired rounds); the `series` rows give the figures. "
           "`per CPU-s` compares GFLOP per CPU-second instead (the kernels' efficiency, "
           "which other programs on the cores do not change, whatever the thread count). "
           "`cpu share` is CPU-seconds per second the probe got over its whole run (the "
           "number of cores if it had them to itself and kept them all busy).", "",
           "### MXNet", ""]
    rows = []
    for r in m.get("mxnet", []):
        if "routes" not in r:
            rows.append([r["name"], r["what"], "error", "", "", "", "", "", "", "", ""])
            continue
        routes = r["routes"]
        rows.append([r["name"], f"`{r['what']}`", _kernels(r, "mxnet"),
                     r.get("threads", {}).get("mxnet dot"), routes["numpy"]["gflops"],
                     routes["mxnet dot"]["gflops"], routes["mxnet dot"]["vs_blas"],
                     _per_cpu(r, "mxnet dot"), routes["mxnet FullyConnected"]["gflops"],
                     routes["mxnet FullyConnected"]["vs_blas"], r.get("cpu_share")])
    out += [table(["config", "settings", "MXNet OpenBLAS kernels", "dot threads",
                   "NumPy GFLOP/s", "dot GFLOP/s", "dot / NumPy", "dot / NumPy per CPU-s",
                   "FC GFLOP/s", "FC / NumPy", "cpu share"], rows), ""]
    out += [" ".join(explain_mxnet(m)), "", "### TensorFlow", ""]
    rows = []
    for r in m.get("tensorflow", []):
        if "routes" not in r:
            rows.append([r["name"], r["what"], "error", "", "", "", "", "", ""])
            continue
        routes = r["routes"]
        rows.append([r["name"], f"`{r['what']}`", r.get("onednn"),
                     r.get("threads", {}).get("tensorflow matmul"), routes["numpy"]["gflops"],
                     routes["tensorflow matmul"]["gflops"],
                     routes["tensorflow matmul"]["vs_blas"], _per_cpu(r, "tensorflow matmul"),
                     r.get("cpu_share")])
    out += [table(["config", "settings", "oneDNN", "threads", "NumPy GFLOP/s",
                   "TF GFLOP/s", "TF / NumPy", "TF / NumPy per CPU-s", "cpu share"], rows), ""]
    out += [" ".join(explain_tensorflow(m)), ""]
    errors = [f"- {fw} {r['name']}: `{r['error'].splitlines()[0][:300]}`"
              for fw in ("mxnet", "tensorflow") for r in m.get(fw, []) if "error" in r]
    if errors:
        out += ["Probes that failed:", "", *errors, ""]
    gpu = m.get("gpu")
    if gpu and gpu.get("gpus"):
        out += ["### GPU", "", table(
            ["route", "GFLOP/s", "vs cuBLAS peak"],
            [[f"TensorFlow float32 n={gpu.get('n')}", gpu["tf_gflops_by_size"][str(gpu["n"])],
              gpu.get("tf_vs_peak")],
             [f"TensorFlow TF32 n={gpu.get('n')}", gpu.get("tf32_gflops"), None],
             [f"MXNet float32 n={gpu.get('n')}", gpu.get("mx_gflops"), gpu.get("mx_vs_peak")]]),
            "", f"cuBLAS peak = best float32 GFLOP/s of TensorFlow's matmul (a cuBLAS SGEMM, "
            f"TF32 off) over sizes {', '.join(gpu.get('tf_gflops_by_size', {}))}: "
            f"{fmt(gpu.get('cublas_peak_gflops'))} GFLOP/s. {gpu.get('mx_note', '')}", ""]
    return out


def _copies(c: dict[str, Any]) -> list[str]:
    rows = [[r["route"], r["bytes"] / 2**20, r["gbps"], r.get("vs_memcpy")]
            for r in c.get("rows", [])]
    out = ["## Copies between contexts (`copy_vs_memcpy`)", "",
           "MXNet `src.copyto(dst)` from `cpu(0)` to a preallocated array on `cpu(1)`, "
           "against NumPy's `np.copyto` into a preallocated array of the same size, in "
           "alternating rounds; `copy_vs_memcpy` is the "
           f"{fmt(c.get('headline_bytes', 0) / 2**20)} MiB row. `as_in_context` also "
           "allocates the destination each time.", "",
           table(["route", "MiB", "GB/s", "vs NumPy copy"], rows), ""]
    gpu = c.get("gpu", {})
    if gpu.get("rows"):
        out += ["Host <-> device:", "", table(
            ["route", "MiB", "GB/s"],
            [[r["route"], r["bytes"] / 2**20, r["gbps"]] for r in gpu["rows"]]), ""]
    return out


def _cluster(c: dict[str, Any]) -> list[str]:
    rows = [[f"cluster run {i + 1}", r["ready_s"], r["teardown_s"]]
            for i, r in enumerate(c.get("runs", []))]
    single = c.get("single_worker", {})
    fixed = c.get("fixed_sleep", {})
    if single:
        rows.append(["one worker alone", single.get("ready_s"), single.get("teardown_s")])
    if fixed:
        rows.append([f"fixed-sleep launch (sleep {fmt(fixed.get('sleep_s'))} s)",
                     fixed.get("ready_s"), fixed.get("teardown_s")])
    text = [
        "## Local TensorFlow cluster (`cluster_ready_seconds`, `cluster_teardown_seconds`)",
        "", f"`helpers.tf_cluster.LocalTFCluster` with {c.get('workers')} workers running "
        f"`{c.get('worker_program')}`: ready = every task's gRPC port accepts connections; "
        "teardown = from `stop()` until every process has exited. Figures are medians "
        f"(ready at worst {fmt(c.get('ready_max_s'))} s, teardown at worst "
        f"{fmt(c.get('teardown_max_s'))} s).", "",
        table(["launch", "ready s", "teardown s"], rows), ""]
    if fixed:
        when = ("was" if fixed.get("first_ready_when_sleep_ended") else "was **not**")
        text += [
            "The official multi-worker tutorial starts worker 0 in the background, waits a "
            f"fixed `time.sleep(10)` and then starts worker 1. Run that way here, the cluster "
            f"was complete after {fmt(fixed.get('ready_s'))} s, and worker 0 {when} listening "
            "when the sleep ended: a fixed sleep is either time wasted on a fast machine or "
            "too short on a slow one, where readiness checks wait exactly as long as needed.",
            ""]
    return text


def _orphans(results: dict[str, Any]) -> list[str]:
    o = results.get("details", {}).get("orphans", {})
    out = ["## Leftover processes (`orphans`)", "",
           "Every process the bench starts inherits `SERIES_BENCH_RUN=<run id>`; after the "
           "clusters, and again at the end, the bench lists live processes whose environment "
           "carries this run's id (TensorFlow servers, worker programs, MXNet ps-lite roles "
           "with `DMLC_ROLE`, Jupyter kernels of the suite, probes), plus any cluster task "
           f"still alive right after its `stop()`. Found: {results.get('orphans')}.", ""]
    procs = o.get("processes", [])
    if procs:
        out += [table(["pid", "kind", "command"], [[p["pid"], p["kind"], f"`{p['cmdline']}`"]
                                                   for p in procs]), ""]
    return out


def render(results: dict[str, Any]) -> str:
    """The whole RESULTS.md for one run's results."""
    if not isinstance(results, dict):
        raise ValueError(f"results must be the dict from results.json, not {type(results)}")
    d = results.get("details", {})
    out = _header(results) + _figures(results)
    if "suite" in d:
        out += _suite(d["suite"])
    if "timing" in d:
        out += _timing(d["timing"])
    if "matmul" in d:
        out += _matmul(d["matmul"])
    if "copies" in d:
        out += _copies(d["copies"])
    if "cluster" in d:
        out += _cluster(d["cluster"])
    out += _orphans(results)
    return "\n".join(out).rstrip() + "\n"
