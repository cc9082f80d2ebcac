"""The results report: fake results files in a temporary folder, read back as markdown."""

import json

import pytest

from tools.report import (
    NotebookRun,
    build_report,
    format_value,
    headlines,
    load_result_files,
    main,
    records_table,
)

MACHINE = {"cpu": "Test CPU", "logical_cpus": 2, "gpus": [], "platform": "Linux-test",
           "python": "3.11.7", "profile": "ci", "versions": {"tensorflow": "2.21.0"}}


def write_result(folder, name, results, machine=MACHINE):
    record = {"name": name, "saved_at": "2030-01-01T00:00:00+0000", "machine": machine,
              "results": results}
    (folder / f"{name}.json").write_text(json.dumps(record))


def timing(label, samples, gflops=None):
    ordered = sorted(samples)
    return {"label": label, "samples": samples, "median": ordered[len(ordered) // 2],
            "spread": ordered[-1] - ordered[0], "flops": None, "nbytes": None,
            "gflops": gflops, "gbps": None}


@pytest.fixture()
def results(tmp_path):
    folder = tmp_path / "build" / "results"
    folder.mkdir(parents=True)
    write_result(folder, "04_matpow", {
        "headline": {"speed-up, 2 devices": 1.84, "GFLOP/s, 1 device": 123.456},
        "one_device": timing("1 device", [0.5, 0.4, 0.6], gflops=123.456),
        "sizes": {"n": 10, "side": 1000},
    })
    write_result(folder, "05_mirrored", {
        "replica_counts": [1, 2, 4],
        "seconds_per_epoch": [2.5, 8.25, 30.0],
        "epoch_timings": [timing("1 replica", [2.0, 3.0]), timing("2 replicas", [8.0, 9.0])],
        "final_accuracy": 0.875,
        "note": "a | b",
    })
    for name in ("05_mirrored_speedup", "04_matpow_bars", "99_unclaimed"):
        (folder / f"{name}.png").write_bytes(b"\x89PNG fake")
    return folder


def test_figures_go_to_the_result_with_the_longest_matching_name(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    write_result(folder, "04_matpow", {"x": 1})
    write_result(folder, "04_matpow_tf", {"x": 2})
    (folder / "04_matpow_tf_speedup.png").write_bytes(b"png")
    (folder / "04_matpowder.png").write_bytes(b"png")
    files, orphans = load_result_files(folder)
    by_name = {f.name: f for f in files}
    assert [p.name for p in by_name["04_matpow_tf"].figures] == ["04_matpow_tf_speedup.png"]
    assert by_name["04_matpow"].figures == []
    assert [p.name for p in orphans] == ["04_matpowder.png"]


def test_report_has_machine_runs_headlines_sections_and_figures(results, tmp_path):
    runs = [NotebookRun("04_matpow", "ok", 12.34, executed="04_matpow.ipynb"),
            NotebookRun("05_mirrored", "failed", 3.0, error="05 failed at In [3]: boom")]
    report = build_report(results, tmp_path / "build" / "REPORT.md", profile="ci", runs=runs,
                          machine={"cpu": "Test CPU", "versions": {"tensorflow": "2.21.0"}})
    text = report.read_text()
    assert "profile `ci`" in text
    assert "| cpu | Test CPU |" in text and "| tensorflow | 2.21.0 |" in text
    assert "| [04_matpow](04_matpow.ipynb) | ok | 12.3 |  |" in text
    assert "| 05_mirrored | failed | 3.0 | 05 failed at In [3]: boom |" in text
    # the explicit headline dict only; a file without one is named, nothing is guessed
    assert "| 04_matpow | speed-up, 2 devices | 1.84 |" in text
    assert "| 04_matpow | GFLOP/s, 1 device | 123.5 |" in text
    assert "| 04_matpow | sizes.n |" not in text
    summary = text.split("## Headline measurements")[1].split("## 04_matpow")[0]
    assert "05_mirrored |" not in summary
    assert "No headline saved by: 05_mirrored" in text
    # sections: nested keys flattened, timings summarised, records as a table, escaping
    assert "## 04_matpow" in text and "## 05_mirrored" in text
    assert "| sizes.side | 1000 |" in text
    assert "| one_device | median 0.5 s (spread 0.2 s, 3 runs), 123.5 GFLOP/s |" in text
    assert "| label | samples | median | spread |" in text  # empty columns dropped
    assert "| note | a \\| b |" in text
    # figures inside the report's folder are linked where they lie
    assert "![05_mirrored_speedup](results/05_mirrored_speedup.png)" in text
    assert "![04_matpow_bars](results/04_matpow_bars.png)" in text
    assert "## Other figures" in text and "(results/99_unclaimed.png)" in text


def test_figures_outside_the_report_folder_are_copied_beside_it(results, tmp_path):
    report = build_report(results, tmp_path / "elsewhere" / "REPORT.md")
    assert "![05_mirrored_speedup](figures/05_mirrored_speedup.png)" in report.read_text()
    copied = tmp_path / "elsewhere" / "figures" / "05_mirrored_speedup.png"
    assert copied.read_bytes() == b"\x89PNG fake"


def test_empty_results_folder_says_so(tmp_path):
    (tmp_path / "results").mkdir()
    text = build_report(tmp_path / "results", tmp_path / "REPORT.md").read_text()
    assert "No results files were found." in text


def test_format_value_keeps_tables_short_and_readable():
    assert format_value(None) == "-" and format_value([]) == "-"
    assert format_value(True) == "yes" and format_value(False) == "no"
    assert format_value(3) == "3" and format_value(0.123456) == "0.1235"
    assert format_value(list(range(20))) == "20 values, 0 to 19"
    assert format_value([[44.0, 56.0], [98.0, 128.0]]) == "[[44.0,56.0],[98.0,128.0]]"
    assert format_value([[0.0] * 50] * 3) == "list of 3 items"
    assert format_value({f"k{i}": i for i in range(30)}) == "30 fields"


def test_records_table_cuts_long_lists():
    text = records_table([{"i": i} for i in range(35)])
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]  # minus the header
    assert rows[0] == "| 0 |" and rows[-1] == "| 29 |" and len(rows) == 30
    assert "(5 more rows in the JSON file)" in text


def test_headlines_are_the_saved_headline_in_its_order_and_nothing_else(tmp_path):
    write_result(tmp_path, "03_copies", {"peak_gbps": 11.5, "copy_gbps": [1.5, 9.0],
                                         "headline": {"copy GB/s, 64 MiB": 9.0,
                                                      "sizes, MiB": [1, 64]}})
    write_result(tmp_path, "05_fit", {"speedup": 1.9, "seconds_per_epoch": [2.0, 1.0]})
    first, second = load_result_files(tmp_path)[0]
    assert headlines(first) == [("copy GB/s, 64 MiB", "9"), ("sizes, MiB", "1, 64")]
    assert headlines(second) == []


def test_missing_results_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="run the notebooks first"):
        build_report(tmp_path / "nope", tmp_path / "REPORT.md")


def test_broken_json_names_the_file(tmp_path):
    (tmp_path / "01_x.json").write_text("{not json")
    with pytest.raises(ValueError, match="01_x.json is not valid JSON"):
        load_result_files(tmp_path)


def test_json_not_written_by_save_results_is_rejected(tmp_path):
    (tmp_path / "01_x.json").write_text(json.dumps({"speedup": 2}))
    with pytest.raises(ValueError, match="save_results"):
        load_result_files(tmp_path)


def test_report_must_be_markdown(results, tmp_path):
    with pytest.raises(ValueError, match=r"\.md"):
        build_report(results, tmp_path / "REPORT.html")


def test_command_line_writes_the_report_and_rejects_a_missing_folder(results, tmp_path, capsys):
    out = tmp_path / "cli" / "REPORT.md"
    assert main(["--results", str(results), "--output", str(out)]) == 0
    assert "## 05_mirrored" in out.read_text()
    with pytest.raises(SystemExit) as exit_info:
        main(["--results", str(tmp_path / "missing"), "--output", str(out)])
    assert exit_info.value.code == 2
    assert "no results folder" in capsys.readouterr().err
