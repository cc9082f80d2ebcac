"""Collect the series' measurements into one markdown report, to compare machines.

Each notebook saves its numbers with :func:`helpers.output.save_results` (JSON with the
machine beside them) and its key plots with :func:`helpers.output.save_figure` (PNG).
``make run`` executes the whole series and then calls :func:`build_report`, which turns
every ``<results>/*.json`` into a section of ``REPORT.md`` (a table of its values, a table
for each list of records, its figures) under a summary of the machine, the profile, how
long each notebook took and the headline measurements. Two reports, say from a laptop and
from a cloud GPU instance, can then be read side by side.

Headlines: each notebook saves a ``"headline"`` dict with the few numbers that summarise
it (``{"matpow speed-up, 2 devices": 1.8}``); its entries go to the summary as
they are. The notebook names what matters and in which unit, so nothing is guessed from
key names; a results file without a headline is listed as such.

``python -m tools.report --results results --output build/REPORT.md`` rebuilds a report
from results that are already there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.markdown import table

HEADLINE_KEY = "headline"
_MAX_LIST = 16  # longer lists of numbers are summarised
_MAX_ROWS = 30  # longer record tables are cut
_MAX_INLINE = 80  # characters of compact JSON shown inline


@dataclass
class NotebookRun:
    """How one notebook's run went, for the report's run table."""

    notebook: str
    status: str  # "ok", "failed" or "not run"
    seconds: float | None = None
    error: str | None = None
    executed: str | None = None  # path of the executed copy, relative to the report


@dataclass
class ResultFile:
    """One ``<name>.json`` written by save_results, with the figures that belong to it."""

    name: str
    path: Path
    saved_at: str | None
    machine: dict[str, Any]
    results: dict[str, Any]
    figures: list[Path] = field(default_factory=list)


# ---------------------------------------------------------------- reading


def load_result_files(directory: Path | str) -> tuple[list[ResultFile], list[Path]]:
    """Every results JSON in ``directory`` (sorted by name) and the PNGs no result claims.

    A figure belongs to the result whose name is the longest prefix of the figure's name
    (``05_mirrored_speedup.png`` -> ``05_mirrored``).
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no results folder at {folder}; run the notebooks first (make run or make test)"
        )
    files: list[ResultFile] = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{path} is not valid JSON ({err}); delete it or re-run its notebook"
            ) from None
        if not isinstance(record, dict) or not isinstance(record.get("results"), dict):
            raise ValueError(f"{path} was not written by helpers.output.save_results "
                             "(no 'results' dict); remove it from the results folder")
        files.append(ResultFile(
            name=str(record.get("name") or path.stem), path=path,
            saved_at=record.get("saved_at"), machine=dict(record.get("machine") or {}),
            results=record["results"],
        ))
    orphans: list[Path] = []
    by_length = sorted(files, key=lambda f: len(f.name), reverse=True)
    for png in sorted(folder.glob("*.png")):
        owner = next((f for f in by_length
                      if png.stem == f.name or png.stem.startswith(f.name + "_")), None)
        if owner is None:
            orphans.append(png)
        else:
            owner.figures.append(png)
    return files, orphans


# ---------------------------------------------------------------- formatting


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _is_timing(value: Any) -> bool:
    return isinstance(value, dict) and "median" in value and "samples" in value


def _number(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def _timing(value: dict[str, Any]) -> str:
    samples = value.get("samples") or []
    text = f"median {_number(value['median'])} s"
    if "spread" in value and value["spread"] is not None:
        text += f" (spread {_number(value['spread'])} s, {len(samples)} runs)"
    if value.get("gflops") is not None:
        text += f", {_number(value['gflops'])} GFLOP/s"
    if value.get("gbps") is not None:
        text += f", {_number(value['gbps'])} GB/s"
    return text


def format_value(value: Any) -> str:
    """One value as short text: numbers to 4 significant digits, long lists summarised,
    timings as median and spread (the table escapes it)."""
    if value is None or (isinstance(value, (list, dict)) and not value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if _is_number(value):
        return _number(value)
    if isinstance(value, str):
        return value
    if _is_timing(value):
        return _timing(value)
    if isinstance(value, list) and all(_is_scalar(v) for v in value):
        numbers = [v for v in value if _is_number(v)]
        if len(value) > _MAX_LIST and len(numbers) == len(value):
            return f"{len(value)} values, {_number(min(numbers))} to {_number(max(numbers))}"
        if len(value) <= _MAX_LIST:
            return ", ".join(format_value(v) for v in value)
    compact = json.dumps(value, separators=(",", ":"), default=str)
    if len(compact) <= _MAX_INLINE:
        return compact
    if isinstance(value, list):
        return f"list of {len(value)} items"
    return f"{len(value)} fields" if isinstance(value, dict) else compact[:_MAX_INLINE]


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _flatten(results: dict[str, Any], prefix: str = "") -> tuple[list[tuple[str, Any]],
                                                                  list[tuple[str, list[dict]]]]:
    """Split results into (key, value) rows and (key, records) tables; nested dicts flatten
    into ``outer.inner`` keys."""
    rows: list[tuple[str, Any]] = []
    tables: list[tuple[str, list[dict]]] = []
    for key, value in results.items():
        name = f"{prefix}{key}"
        if _is_records(value):
            tables.append((name, value))
        elif isinstance(value, dict) and value and not _is_timing(value):
            inner_rows, inner_tables = _flatten(value, name + ".")
            rows += inner_rows
            tables += inner_tables
        else:
            rows.append((name, value))
    return rows, tables


def records_table(records: list[dict[str, Any]]) -> str:
    """A list of dicts as a markdown table: columns in first-seen order, empty columns
    dropped, at most ``_MAX_ROWS`` rows."""
    columns: list[str] = []
    for record in records:
        columns += [k for k in record if k not in columns]
    columns = [c for c in columns if any(r.get(c) is not None for r in records)]
    shown = records[:_MAX_ROWS]
    text = table(columns, ([r.get(c) for c in columns] for r in shown), format_value)
    if len(records) > len(shown):
        text += f"\n\n({len(records) - len(shown)} more rows in the JSON file)"
    return text


# ---------------------------------------------------------------- headlines


def headlines(file: ResultFile) -> list[tuple[str, str]]:
    """(measurement, value) pairs for the summary: the entries of the file's ``headline``
    dict, in the order the notebook wrote them; none if it saved no headline."""
    chosen = file.results.get(HEADLINE_KEY)
    if not isinstance(chosen, dict):
        return []
    return [(str(k), format_value(v)) for k, v in chosen.items()]


# ---------------------------------------------------------------- the report


def _link(target: Path, report_dir: Path) -> str:
    return Path(os.path.relpath(target.resolve(), report_dir.resolve())).as_posix()


def _place_figure(png: Path, report_dir: Path) -> str:
    """Link a figure where it lies if that is inside the report's folder, else copy it to
    ``figures/`` beside the report so the report can be moved as one folder."""
    try:
        png.resolve().relative_to(report_dir.resolve())
        return _link(png, report_dir)
    except ValueError:
        target = report_dir / "figures" / png.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, target)
        return f"figures/{png.name}"


#: What identifies a machine, for telling whether all results came from the same one.
_MACHINE_FIELDS = ("cpu", "logical_cpus", "gpus", "platform", "python", "versions")


def _machine_rows(files: list[ResultFile], machine: dict[str, Any]) -> list[list[str]]:
    """The machine as rows (package versions one per row), from ``machine`` or else the
    first results file, with a note naming results saved on another machine."""
    described = machine or next((f.machine for f in files if f.machine), {})
    rows = []
    for key, value in described.items():
        if isinstance(value, dict):
            rows += [[str(k), format_value(v)] for k, v in value.items()]
        else:
            rows.append([str(key), format_value(value)])
    identity = {k: described.get(k) for k in _MACHINE_FIELDS}
    others = sorted({f.name for f in files if f.machine
                     and {k: f.machine.get(k) for k in _MACHINE_FIELDS} != identity})
    if others and described:
        rows.append(["note", "results from another machine: " + ", ".join(others)])
    return rows


def _section(file: ResultFile, report_dir: Path) -> str:
    parts = [f"## {file.name}"]
    about = []
    if file.saved_at:
        about.append(f"saved {file.saved_at}")
    if file.machine.get("profile"):
        about.append(f"profile `{file.machine['profile']}`")
    about.append(f"file `{file.path.name}`")
    parts.append(", ".join(about))
    rows, tables = _flatten({k: v for k, v in file.results.items() if k != HEADLINE_KEY})
    if isinstance(file.results.get(HEADLINE_KEY), dict):
        rows = [(f"{HEADLINE_KEY}.{k}", v) for k, v in file.results[HEADLINE_KEY].items()] + rows
    if rows:
        parts.append(table(["key", "value"], ([k, format_value(v)] for k, v in rows)))
    for key, records in tables:
        parts.append(f"**{key}**\n\n{records_table(records)}")
    for png in file.figures:
        parts.append(f"![{png.stem}]({_place_figure(png, report_dir)})")
    return "\n\n".join(parts)


def render_report(
    files: list[ResultFile],
    report_dir: Path,
    *,
    profile: str | None = None,
    runs: Sequence[NotebookRun] = (),
    machine: dict[str, Any] | None = None,
    orphan_figures: Sequence[Path] = (),
    title: str = "Results of the series on this machine",
) -> str:
    """The report's markdown text (figures are linked relative to ``report_dir``)."""
    profiles = sorted({str(f.machine["profile"]) for f in files if f.machine.get("profile")})
    shown_profile = profile or (", ".join(profiles) if profiles else "not recorded")
    parts = [f"# {title}",
             f"Written {time.strftime('%Y-%m-%d %H:%M:%S %z')}; profile `{shown_profile}`."]
    machine_rows = _machine_rows(files, machine or {})
    if machine_rows:
        parts.append("## Machine\n\n" + table(["", ""], machine_rows))
    if runs:
        total = sum(r.seconds or 0.0 for r in runs)
        run_rows = []
        for r in runs:
            name = f"[{r.notebook}]({r.executed})" if r.executed else r.notebook
            seconds = "-" if r.seconds is None else f"{r.seconds:.1f}"
            run_rows.append([name, r.status, seconds, r.error or ""])
        parts.append("## Notebooks run\n\n"
                     + table(["notebook", "status", "seconds", "error"], run_rows)
                     + f"\n\nTotal: {total:.1f} s.")
    headline_rows = [[f.name, k, v] for f in files for k, v in headlines(f)]
    if headline_rows:
        parts.append("## Headline measurements\n\n"
                     + table(["notebook", "measurement", "value"], headline_rows))
    without = [f.name for f in files if not headlines(f)]
    if without:
        parts.append(f"No headline saved by: {', '.join(without)} (their sections below "
                     "show every value).")
    if not files:
        parts.append("No results files were found.")
    parts += [_section(f, report_dir) for f in files]
    if orphan_figures:
        parts.append("## Other figures\n\n" + "\n\n".join(
            f"![{p.stem}]({_place_figure(p, report_dir)})" for p in orphan_figures))
    return "\n\n".join(parts) + "\n"


def build_report(
    results_dir: Path | str,
    report_path: Path | str,
    *,
    profile: str | None = None,
    runs: Sequence[NotebookRun] = (),
    machine: dict[str, Any] | None = None,
) -> Path:
    """Write the report for every results file in ``results_dir`` to ``report_path``."""
    report = Path(report_path)
    if report.suffix.lower() != ".md":
        raise ValueError(f"the report is a markdown file ending in .md, not {report}")
    files, orphans = load_result_files(results_dir)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render_report(files, report.parent, profile=profile, runs=runs,
                                    machine=machine, orphan_figures=orphans))
    return report


def main(argv: Sequence[str] | None = None) -> int:
    from helpers.machine import describe_machine  # noqa: PLC0415

    parser = argparse.ArgumentParser(
        prog="python -m tools.report",
        description="Write a markdown report of the results the notebooks saved.")
    parser.add_argument("--results", default=None,
                        help="folder of results JSON and PNG files (default: the series' results/)")
    parser.add_argument("--output", default="build/REPORT.md",
                        help="report file (default: %(default)s)")
    parser.add_argument("--profile", default=None, help="profile name to print in the report")
    args = parser.parse_args(argv)
    if args.results is None:
        from helpers.output import results_dir  # noqa: PLC0415

        args.results = results_dir()
    try:
        path = build_report(args.results, args.output, profile=args.profile,
                            machine=describe_machine())
    except (FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    print(f"report written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
