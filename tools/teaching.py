"""Fill TEACHING.md's "run minutes" from a real run of the notebooks: ``make teaching``.

An instructor plans a class from two numbers per notebook: how long its cells take to
run, and how long to talk about them. The first is measured, never typed: ``make
teaching`` (``python -m tools.teaching --run``) runs the suite once under nbval with a
JUnit report (``pytest notebooks --junitxml=build/notebooks-junit.xml -o
junit_family=xunit1``), then writes each notebook's run time (the sum of its cells'
times, kernel start-up included) into the minutes table of TEACHING.md, recomputes the
class minutes (run + discussion, rounded up) and states when, where, with which profile
and under which load the run was made. ``--junit FILE`` takes the minutes from a report
that is already there instead. The discussion minutes are the instructor's plan and are
left as they are; a notebook the report does not cover keeps what it had ("not yet
measured" until it has run once). A run with failing cells is never recorded: the guide's
minutes are the reference a class is planned on, so the command stops, names the
notebooks and leaves TEACHING.md as it was.

The table lives between ``<!-- minutes:start -->`` and ``<!-- minutes:end -->``; its
rows are ``| NN | notebook | run | discussion | class |``.

``--profile-run DIR`` records a ``make run PROFILE=...`` (``tools.run_series``) instead: its
``runs.json`` fills that profile's column of the per-profile table (between ``<!--
profiles:start -->`` and ``<!-- profiles:end -->``), again only when every notebook passed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.suite import per_notebook
from helpers.machine import describe_machine, load_average
from tools.markdown import table

ROOT = Path(__file__).resolve().parent.parent
TEACHING = ROOT / "TEACHING.md"
JUNIT = ROOT / "build" / "notebooks-junit.xml"
START, END = "<!-- minutes:start -->", "<!-- minutes:end -->"
COLUMNS = ["#", "notebook", "run minutes (measured)", "discussion minutes (planned)",
           "class minutes"]
NOT_MEASURED = "not yet measured"
_NUMBER = re.compile(r"(?:^|/)(\d\d)_[^/]*\.ipynb$")


@dataclass
class Row:
    """One notebook's line of the minutes table."""

    number: str
    notebook: str  # the markdown link as written
    run: str
    discussion: str

    def class_minutes(self) -> str:
        try:
            return str(math.ceil(float(self.run) + float(self.discussion)))
        except ValueError:
            return "-"


def run_minutes(junit_xml: Path) -> tuple[dict[str, float], dict[str, int]]:
    """``({"04": minutes}, {"04": failed cells})`` for the notebooks of a pytest JUnit
    report of the suite (only notebooks with failing cells appear in the second)."""
    books = per_notebook(junit_xml)
    minutes, failed = {}, {}
    for name, book in books.items():
        match = _NUMBER.search(name.replace("\\", "/").replace(".ipynb::", ".ipynb"))
        if match is None:
            raise ValueError(f"{name!r} in {junit_xml.name} is not a notebook NN_name.ipynb; "
                             "run the report as `pytest notebooks --junitxml=... "
                             "-o junit_family=xunit1`")
        minutes[match[1]] = book["seconds"] / 60
        if book["failed"]:
            failed[match[1]] = book["failed"]
    if not minutes:
        raise ValueError(f"{junit_xml.name} holds no notebook cells")
    return minutes, failed


def run_suite(junit_xml: Path = JUNIT, profile: str = "ci",
              notebooks: Path = ROOT / "notebooks") -> dict[str, object]:
    """Run ``pytest notebooks`` once with a JUnit report; wall time and load around it."""
    junit_xml.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pytest", str(notebooks), "-q", f"--junitxml={junit_xml}",
               "-o", "junit_family=xunit1", "-c", str(ROOT / "pyproject.toml")]
    before = load_average()
    began = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "SERIES_PROFILE": profile},
                          check=False)
    return {"seconds": time.monotonic() - began, "exit_code": done.returncode,
            "load_before": before, "load_after": load_average()}


def machine_words(machine: dict) -> str:
    """``AMD EPYC (2 logical CPUs, GPUs: ...)``: the machine a run was made on, for notes."""
    gpus = f", GPUs: {', '.join(machine['gpus'])}" if machine.get("gpus") else ""
    return f"{machine.get('cpu')} ({machine.get('logical_cpus')} logical CPUs{gpus})"


def table_cells(line: str) -> list[str]:
    """The cells of one markdown table row, stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def note(date: str, profile: str, machine: dict,
         run: dict[str, object] | None = None) -> str:
    """The sentence under the table: where the run minutes come from."""
    text = (f"Run minutes: `pytest notebooks` under nbval on {date}, profile `{profile}`, "
            f"{machine_words(machine)}")
    if run is not None:
        before, after = (f"{x[0]:.1f}" if x else "?"  # type: ignore[index]
                         for x in (run["load_before"], run["load_after"]))
        text += (f", {run['seconds'] / 60:.1f} min of wall time, 1-minute load average "
                 f"{before} before and {after} after")
    text += ", filled in by `make teaching`."
    return text + (" A class on a laptop or a GPU runs the `laptop` or `gpu` profile's larger"
                   " sizes: run the notebooks there once before class.")


def report_time(junit_xml: Path) -> str:
    """When the run recorded in the report started (its ``timestamp``), as a date."""
    root = ET.parse(junit_xml).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    stamp = (suite.get("timestamp") if suite is not None else None) or ""
    return stamp[:10] or time.strftime("%Y-%m-%d", time.localtime(junit_xml.stat().st_mtime))


def parse_rows(text: str) -> tuple[str, list[Row], str]:
    """(before, rows, after): TEACHING.md split around its minutes table."""
    if text.count(START) != 1 or text.count(END) != 1:
        raise ValueError(f"TEACHING.md must hold one minutes table between {START} and {END}")
    before, rest = text.split(START)
    inside, after = rest.split(END)
    rows = []
    for line in inside.splitlines():
        cells = table_cells(line)
        if len(cells) == len(COLUMNS) and re.fullmatch(r"\d\d", cells[0]):
            rows.append(Row(cells[0], cells[1], cells[2], cells[3]))
    if not rows:
        raise ValueError("the minutes table of TEACHING.md has no notebook rows")
    return before, rows, after


def render(rows: Sequence[Row], note: str) -> str:
    """The minutes table and the sentence that says where its run minutes come from."""
    def number(value: str) -> float | None:
        try:
            return float(value)
        except ValueError:
            return None

    runs = [number(r.run) for r in rows]
    talks = [number(r.discussion) for r in rows]
    body = [[r.number, r.notebook, r.run, r.discussion, r.class_minutes()] for r in rows]
    both = [(x, y) for x, y in zip(runs, talks, strict=True) if x is not None and y is not None]
    total_class = str(sum(math.ceil(x + y) for x, y in both))
    if len(both) < len(rows):
        total_class += f" ({len(both)} of {len(rows)} notebooks)"
    body.append(["", "**total**", f"{sum(x for x, _ in both):.1f}",
                 f"{sum(y for _, y in both):.0f}", total_class])
    return f"{START}\n{table(COLUMNS, body)}\n\n{note}\n{END}"


def update(text: str, minutes: dict[str, float], note: str) -> str:
    """TEACHING.md's text with the run minutes of ``minutes`` written into its table."""
    before, rows, after = parse_rows(text)
    known = {r.number for r in rows}
    unknown = sorted(set(minutes) - known)
    if unknown:
        raise ValueError(f"TEACHING.md has no row for notebook(s) {', '.join(unknown)}; add "
                         "them to the minutes table first")
    for row in rows:
        if row.number in minutes:
            row.run = f"{minutes[row.number]:.1f}"
    return before + render(rows, note) + after


P_START, P_END = "<!-- profiles:start -->", "<!-- profiles:end -->"


def update_profile(text: str, run: dict) -> str:
    """TEACHING.md with the minutes of a ``tools.run_series`` run (its ``runs.json``) written
    into the per-profile table: one column per profile, the run's note under the table."""
    if run.get("shrink", 1) > 1:
        raise ValueError(f"that run shrank the {run['profile']} profile {run['shrink']}x: its "
                         "minutes are not that profile's; run `make run` without SHRINK")
    failed = [r["notebook"] for r in run["runs"] if r["status"] != "ok"]
    if failed:
        raise ValueError(f"{', '.join(failed)} did not pass in that run: its minutes are not "
                         "recorded; fix them and run `make run` again")
    if P_START not in text or P_END not in text:
        raise ValueError(f"TEACHING.md has no {P_START} ... {P_END} table")
    before, rest = text.split(P_START, 1)
    inside, after = rest.split(P_END, 1)
    lines = [ln for ln in inside.strip().splitlines() if ln.startswith("|")]
    notes = [ln for ln in inside.strip().splitlines() if ln.startswith("- ")]
    header = table_cells(lines[0])
    rows = {c[0]: c for c in map(table_cells, lines[2:]) if re.fullmatch(r"\d\d", c[0])}
    profile, column = run["profile"], f"{run['profile']} (min)"
    if column not in header:
        header.append(column)
        for cells in rows.values():
            cells.append("")
    k = header.index(column)
    for r in run["runs"]:
        number = r["notebook"][:2]  # a notebook new to the table gets a row of its own
        rows.setdefault(number, [number] + [""] * (len(header) - 1))[k] = (
            f"{r['seconds'] / 60:.1f}")
    total = sum(r["seconds"] for r in run["runs"]) / 60
    notes = [n for n in notes if not n.startswith(f"- `{profile}`:")] + [
        f"- `{profile}`: `make run PROFILE={profile}` on {run['date']}, "
        f"{machine_words(run['machine'])}, {total:.1f} min in all."]
    body = table(header, [rows[n] for n in sorted(rows)])
    return f"{before}{P_START}\n{body}\n\n" + "\n".join(sorted(notes)) + f"\n{P_END}{after}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.teaching",
                                     description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", action="store_true",
                        help=f"run the notebook suite now, into {JUNIT.relative_to(ROOT)}")
    source.add_argument("--junit", type=Path,
                        help="JUnit XML of a `pytest notebooks` run (-o junit_family=xunit1)")
    source.add_argument("--profile-run", type=Path, metavar="DIR",
                        help="the output folder of a `make run PROFILE=...` to record")
    parser.add_argument("--teaching", type=Path, default=TEACHING,
                        help="the guide to update (default: TEACHING.md)")
    parser.add_argument("--profile", default="ci",
                        help="the profile the suite ran with (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.profile_run is not None:
        try:
            text = update_profile(args.teaching.read_text(), json.loads(
                (args.profile_run / "runs.json").read_text()))
        except (FileNotFoundError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        args.teaching.write_text(text)
        print(f"{args.teaching.name}: minutes of {args.profile_run / 'runs.json'} written")
        return 0
    run = run_suite(JUNIT, args.profile) if args.run else None
    junit = JUNIT if args.run else args.junit
    try:
        minutes, failed = run_minutes(junit)
        text = update(args.teaching.read_text(), minutes,
                      note(report_time(junit), args.profile, describe_machine(), run))
    except (FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    if failed:
        listed = ", ".join(f"{n} ({k} cell(s))" for n, k in sorted(failed.items()))
        print(f"error: failing cells in {listed}: {args.teaching.name} keeps its minutes; fix "
              "them and run `make teaching` again", file=sys.stderr)
        return 1
    args.teaching.write_text(text)
    print(f"{args.teaching.name}: run minutes of {', '.join(sorted(minutes))} written "
          f"({sum(minutes.values()):.1f} min in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
