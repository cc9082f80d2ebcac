"""Run the whole series headless on this machine and write a report: ``make run``.

``python -m tools.run_series --output build [--profile NAME] [--only 03 04]``

Each notebook ``notebooks/NN_*.ipynb`` gets the chosen profile through papermill (which
fills in its ``parameters`` cell) and is executed in order by a fresh ``python3`` kernel
of the current environment, with the notebooks folder as working directory. The executed
copies land in the output folder, the notebooks' results (JSON and PNG) in
``<output>/results/``, and :mod:`tools.report` turns those into ``<output>/REPORT.md``;
``<output>/runs.json`` keeps each notebook's status and seconds for ``tools.teaching``.

A notebook that fails (cells tagged ``raises-exception`` are expected to fail and do not
count) stops at its failing cell; the run goes on with the next notebook, so one run of a
profile reports every notebook with its time and its first false claim (the failing
cell and the assert's message). The report lists them all, and the run exits non-zero if
any failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from helpers.machine import describe_machine
from helpers.profiles import PROFILES, SHRINK_VAR, shrink
from tools.report import NotebookRun, build_report

KERNEL = "python3"
_NOTEBOOK = re.compile(r"^(\d\d)_[A-Za-z0-9_]+\.ipynb$")
_TOP = Path(__file__).resolve().parent.parent
_PYTHON_NAMES = {"python", f"python{sys.version_info[0]}",
                 f"python{sys.version_info[0]}.{sys.version_info[1]}"}


@dataclass
class NotebookFailed(Exception):
    """A notebook raised an error that no ``raises-exception`` tag expected."""

    notebook: str
    cell: str | None  # e.g. "In [7] `x = 1 / 0`"
    ename: str
    evalue: str

    def __str__(self) -> str:
        where = "start-up" if self.cell is None else self.cell
        return f"{self.notebook} failed at {where}: {self.ename}: {self.evalue}"


def default_notebooks_dir() -> Path:
    """``notebooks/`` of the series' checkout, else of the working directory."""
    top = _TOP / "notebooks"
    return top if top.is_dir() else Path.cwd() / "notebooks"


def find_notebooks(folder: Path, only: Sequence[str] = ()) -> list[Path]:
    """The series' notebooks ``NN_name.ipynb`` in order; ``only`` keeps those whose number
    or file name is listed (``["03", "04_matpow"]``)."""
    if not folder.is_dir():
        raise ValueError(f"no notebooks folder at {folder}; pass --notebooks DIR or run from "
                         "the top of the series' checkout")
    notebooks = sorted(p for p in folder.iterdir() if _NOTEBOOK.match(p.name))
    if not notebooks:
        raise ValueError(f"{folder} holds no notebooks named like 01_name.ipynb")
    if only:
        wanted = set(only)
        unknown = wanted - {p.name[:2] for p in notebooks} - {p.stem for p in notebooks} \
            - {p.name for p in notebooks}
        if unknown:
            raise ValueError(f"no notebook matches {sorted(unknown)}; the notebooks are "
                             f"{', '.join(p.stem for p in notebooks)}")
        notebooks = [p for p in notebooks if wanted & {p.name[:2], p.stem, p.name}]
    return notebooks


def choose_profile(name: str | None) -> str:
    """The profile named, else ``$SERIES_PROFILE``, else the hardware's (this looks for
    GPUs through TensorFlow, which takes a few seconds)."""
    from helpers.profiles import ENV_VAR, PROFILES, get_profile  # noqa: PLC0415

    if name is not None and name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}")
    if name is None and os.environ.get(ENV_VAR) and os.environ[ENV_VAR] not in PROFILES:
        raise ValueError(f"unknown profile {os.environ[ENV_VAR]!r} in ${ENV_VAR}; choose one "
                         f"of {', '.join(PROFILES)} or unset it")
    return name if name is not None else get_profile().name


def kernel_warning() -> str | None:
    """A warning if the ``python3`` kernel would not run this environment's Python."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel  # noqa: PLC0415

    try:
        argv = KernelSpecManager().get_kernel_spec(KERNEL).argv
    except NoSuchKernel:
        return (f"no '{KERNEL}' Jupyter kernel is installed; run `make venv` "
                f"(or `{sys.executable} -m ipykernel install --sys-prefix --name {KERNEL}`)")
    exe = argv[0] if argv else ""
    if exe in _PYTHON_NAMES or os.path.abspath(exe) == os.path.abspath(sys.executable):
        return None
    return (f"the '{KERNEL}' kernel runs {exe}, not this environment's {sys.executable}; "
            "notebooks may not find the series' packages")


def _failed_cell(nb) -> tuple[str | None, str, str]:  # noqa: ANN001  (a NotebookNode)
    """Where and what: the first cell whose error no ``raises-exception`` tag expected,
    named as Jupyter shows it (``In [7]``) with its first line."""
    for index, cell in enumerate(nb.cells):
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                count = cell.get("execution_count")
                first = (cell.get("source") or "").strip().splitlines()[:1]
                where = f"In [{count}]" if count else f"cell {index + 1}"
                if first:
                    where += f" `{first[0][:60]}`"
                return where, output.get("ename", "Error"), output.get("evalue", "")
    return None, "CellExecutionError", ""


def run_notebook(source: Path, executed: Path, profile: str, timeout: float) -> float:
    """Parameterise ``source`` with papermill, execute it into ``executed``; return seconds.

    The kernel's own terminal output goes to ``executed`` with the suffix ``.log``.
    Raises NotebookFailed for an unexpected error; the executed copy, with the error in
    its cell, is written either way.
    """
    import nbformat  # noqa: PLC0415
    import papermill  # noqa: PLC0415
    from nbclient import NotebookClient  # noqa: PLC0415
    from nbclient.exceptions import CellExecutionError, CellTimeoutError  # noqa: PLC0415

    executed.parent.mkdir(parents=True, exist_ok=True)
    # papermill writes the copy with the profile injected after the `parameters` cell ...
    papermill.execute_notebook(source, executed, parameters={"profile": profile},
                               kernel_name=KERNEL, prepare_only=True, progress_bar=False)
    nb = nbformat.read(executed, as_version=4)
    # ... and nbclient runs it, honouring `raises-exception` tags (papermill would stop there).
    client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL,
                            resources={"metadata": {"path": str(source.parent)}})
    start = time.perf_counter()
    log = executed.with_suffix(".log")
    try:
        # What the kernel process itself prints (TensorFlow's C++ start-up lines and the
        # like, also shown in the cells) goes to a log file instead of the terminal.
        with log.open("w") as kernel_output:
            client.execute(stdout=kernel_output, stderr=subprocess.STDOUT)
    except CellTimeoutError as err:
        where, _, _ = _failed_cell(nb)
        raise NotebookFailed(source.name, where, "CellTimeoutError",
                             f"a cell ran longer than {timeout:.0f} s ({err})") from None
    except CellExecutionError:
        where, ename, evalue = _failed_cell(nb)
        raise NotebookFailed(source.name, where, ename, evalue) from None
    except RuntimeError as err:  # the kernel died or did not start
        raise NotebookFailed(source.name, None, type(err).__name__, str(err)) from None
    finally:
        nbformat.write(nb, executed)
    return time.perf_counter() - start


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.run_series",
        description="Execute every notebook of the series headless and write REPORT.md.")
    parser.add_argument("--output", default="build",
                        help="folder for executed notebooks, results and REPORT.md "
                             "(default: %(default)s)")
    parser.add_argument("--profile", default=None,
                        help="ci, laptop or gpu (default: $SERIES_PROFILE, else from the hardware)")
    parser.add_argument("--shrink", type=int, default=1, metavar="K",
                        help="divide the profile's amounts by K (1, 4, 16 or 64) and its sides "
                             "by sqrt(K): a big profile's code paths on a small machine; its "
                             "minutes are not recorded in TEACHING.md")
    parser.add_argument("--notebooks", default=None, type=Path,
                        help="folder holding the NN_name.ipynb notebooks (default: the series')")
    parser.add_argument("--only", nargs="+", default=(), metavar="NN",
                        help="run only these notebooks, by number or name (e.g. --only 03 04)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds one cell may run (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0, not {args.timeout}")
    try:
        args.notebook_paths = find_notebooks(args.notebooks or default_notebooks_dir(), args.only)
        args.profile = choose_profile(args.profile)
        shrink(PROFILES[args.profile], args.shrink)  # refuses a factor it cannot use
    except ValueError as err:
        parser.error(str(err))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    output = Path(args.output).resolve()
    results = output / "results"
    shutil.rmtree(results, ignore_errors=True)  # the report shows this run only
    try:
        results.mkdir(parents=True)
    except OSError as err:
        print(f"python -m tools.run_series: error: cannot write to --output {args.output}: "
              f"{err.strerror}; name a folder you can write to", file=sys.stderr)
        return 2
    os.environ["SERIES_RESULTS_DIR"] = str(results)
    os.environ["SERIES_PROFILE"] = args.profile
    os.environ[SHRINK_VAR] = str(args.shrink)
    warning = kernel_warning()
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    shrunk = f" shrunk {args.shrink}x" if args.shrink > 1 else ""
    print(f"profile {args.profile}{shrunk}: running {len(args.notebook_paths)} notebook(s) "
          f"into {output}", flush=True)

    runs = [NotebookRun(p.stem, "not run") for p in args.notebook_paths]
    failures: list[NotebookFailed] = []
    for run, source in zip(runs, args.notebook_paths, strict=True):
        executed = output / source.name
        run.executed = source.name
        print(f"  {source.name} ...", end=" ", flush=True)
        start = time.perf_counter()
        try:
            run.seconds = run_notebook(source, executed, args.profile, args.timeout)
            run.status = "ok"
            print(f"ok ({run.seconds:.1f} s)", flush=True)
        except Exception as err:  # noqa: BLE001  (any failure is reported; the run goes on)
            if not isinstance(err, NotebookFailed):
                err = NotebookFailed(source.name, None, type(err).__name__, str(err))
            run.seconds = time.perf_counter() - start
            run.status, run.error = "failed", str(err)
            failures.append(err)
            print(f"FAILED ({run.seconds:.1f} s)", flush=True)
    machine = describe_machine()
    report = build_report(results, output / "REPORT.md", profile=args.profile, runs=runs,
                          machine=machine)
    (output / "runs.json").write_text(json.dumps({  # what `make teaching RUN=...` reads
        "profile": args.profile, "shrink": args.shrink,
        "date": datetime.date.today().isoformat(), "machine": machine,
        "runs": [{"notebook": r.notebook, "status": r.status, "seconds": r.seconds}
                 for r in runs]}, indent=1))
    print(f"report: {report}")
    for failure in failures:
        print(f"error: {failure}\n  the executed copy with the error: {output / failure.notebook}",
              file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
