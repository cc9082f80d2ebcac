"""``make bench``: measure the series' own numbers into bench/results.json and RESULTS.md.

Sections, in order: timing accuracy, copies, matrix products, the local TensorFlow
cluster, the notebook suite, then a sweep for leftover processes. A section that fails
is recorded with its error and the others still run; the exit status is 1 when a
section failed, 0 otherwise (a missed target is a measurement, reported in
RESULTS.md, not a failure of the bench).

    python -m bench.run_all                      # everything, writes bench/
    python -m bench.run_all --only matmul --out-dir /tmp/bench --quick

``BENCH_SUITE_TIMEOUT`` (seconds, default 1500) bounds the notebook suite's run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import RUN_MARKER
from bench.stats import FIGURES, check_targets

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("timing", "copies", "matmul", "cluster", "suite")


def _run_timing(quick: bool, gpu: bool) -> dict[str, Any]:
    from bench.subproc import run_json  # noqa: PLC0415

    return run_json("bench.timing_accuracy", {"rounds": 5 if quick else 9}, timeout=300,
                    name="timing")


def _run_copies(quick: bool, gpu: bool) -> dict[str, Any]:
    from bench.subproc import run_json  # noqa: PLC0415

    return run_json("bench.copies", {"rounds": 5 if quick else 9, "gpu": gpu}, timeout=300,
                    name="copies")


def _run_matmul(quick: bool, gpu: bool) -> dict[str, Any]:
    from bench import matmul  # noqa: PLC0415

    if quick:
        return matmul.measure(n=1024, rounds=3, budget_s=8.0, gpu=gpu)
    return matmul.measure(n=2048, rounds=5, budget_s=20.0, gpu=gpu)


def _run_cluster(quick: bool, gpu: bool) -> dict[str, Any]:
    from bench import cluster  # noqa: PLC0415

    return cluster.measure(repeats=1 if quick else 3)


def _run_suite(quick: bool, gpu: bool) -> dict[str, Any]:
    from bench import suite  # noqa: PLC0415

    return suite.measure(timeout=float(os.environ.get("BENCH_SUITE_TIMEOUT", "1500")))


RUNNERS: dict[str, Callable[[bool, bool], dict[str, Any]]] = {
    "timing": _run_timing, "copies": _run_copies, "matmul": _run_matmul,
    "cluster": _run_cluster, "suite": _run_suite,
}


def extract_figures(details: dict[str, Any], orphans: int | None) -> dict[str, Any]:
    """The headline figures (keys of results.json) from the sections' details."""
    from bench.matmul import headline  # noqa: PLC0415

    def pick(section: str, key: str) -> Any:
        return details.get(section, {}).get(key)

    figures = {
        "suite_seconds": pick("suite", "suite_seconds"),
        "timing_error": pick("timing", "timing_error"),
        "matmul_tf_vs_blas": headline(details.get("matmul", {}), "tensorflow",
                                      "tensorflow matmul"),
        "matmul_mx_vs_blas": headline(details.get("matmul", {}), "mxnet", "mxnet dot"),
        "copy_vs_memcpy": pick("copies", "copy_vs_memcpy"),
        "cluster_ready_seconds": pick("cluster", "cluster_ready_seconds"),
        "cluster_teardown_seconds": pick("cluster", "cluster_teardown_seconds"),
        "orphans": orphans,
    }
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in figures.items()}


def choose_sections(only: list[str] | None, skip: list[str] | None) -> list[str]:
    """The sections to run, in the bench's order; ValueError names unknown ones."""
    for name in [*(only or []), *(skip or [])]:
        if name not in SECTIONS:
            raise ValueError(f"unknown section {name!r}; sections are {', '.join(SECTIONS)}")
    chosen = [s for s in SECTIONS if not only or s in only]
    return [s for s in chosen if s not in (skip or [])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="SECTION", help=f"of {SECTIONS}")
    parser.add_argument("--skip", nargs="+", metavar="SECTION", help="sections to leave out")
    parser.add_argument("--out-dir", default=str(ROOT / "bench"),
                        help="where results.json and RESULTS.md go (default: bench/)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds and smaller sizes: checks the pipeline, not the machine")
    args = parser.parse_args(argv)
    try:
        sections = choose_sections(args.only, args.skip)
    except ValueError as exc:
        parser.error(str(exc))

    from bench.orphans import sweep  # noqa: PLC0415
    from bench.report import render  # noqa: PLC0415
    from helpers.machine import describe_machine, load_average  # noqa: PLC0415

    os.chdir(ROOT)  # the suite runs `pytest notebooks` with the repository's pytest config
    run_id = uuid.uuid4().hex
    os.environ[RUN_MARKER] = run_id
    began = time.monotonic()
    machine = {**describe_machine(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    gpu = bool(machine["gpus"])
    run: dict[str, Any] = {"argv": sys.argv[1:] if argv is None else argv,
                           "sections": sections, "quick": args.quick,
                           "load_average_start": load_average()}
    details: dict[str, Any] = {}
    errors: dict[str, str] = {}
    leftovers: dict[int, dict[str, Any]] = {}
    for section in sections:
        print(f"[bench] {section} ...", flush=True)
        start = time.monotonic()
        try:
            details[section] = RUNNERS[section](args.quick, gpu)
        except Exception as exc:  # noqa: BLE001  (record it; the other sections still run)
            errors[section] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
        seconds = time.monotonic() - start
        details.setdefault(section, {})["section_seconds"] = round(seconds, 1)
        print(f"[bench] {section} done in {seconds:.0f} s", flush=True)
        if section == "cluster":
            for p in sweep(run_id)["processes"]:
                leftovers[p["pid"]] = p
            for pid in details["cluster"].get("left_after_stop", []):
                leftovers.setdefault(pid, {"pid": pid, "kind": "cluster task alive after stop()",
                                           "cmdline": "", "ppid": None})
    final = sweep(run_id)
    for p in final["processes"]:
        leftovers[p["pid"]] = p
    details["orphans"] = {"processes": list(leftovers.values()), "killed": final["killed"]}
    run["seconds"] = round(time.monotonic() - began, 1)
    run["load_average_end"] = load_average()

    figures = extract_figures(details, len(leftovers))
    results: dict[str, Any] = {**figures, "targets": check_targets(figures),
                               "machine": machine, "run": run, "errors": errors,
                               "details": details}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
    (out / "RESULTS.md").write_text(render(results))
    width = max(len(k) for k in FIGURES)
    for key in FIGURES:
        t = results["targets"].get(key)
        verdict = "" if t is None else {True: "met", False: "MISSED", None: "-"}[t["met"]]
        print(f"  {key:<{width}}  {figures[key]!s:>10}  {t['target'] if t else '':>8}  {verdict}")
    print(f"[bench] wrote {out / 'results.json'} and {out / 'RESULTS.md'} "
          f"in {run['seconds']:.0f} s", flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
