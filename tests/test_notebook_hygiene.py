"""Stored notebooks carry no run-to-run metadata; the check finds each kind and --fix strips it."""

import json

import nbformat
import pytest

from tools import hygiene
from tools.cells import stored_notebooks


def executed_like():
    """A notebook with every kind of volatile field a run or an editor leaves."""
    nb = nbformat.v4.new_notebook()
    nb.metadata.update(
        kernelspec={"display_name": "Python 3 (series)", "language": "python",
                    "name": "python3"},
        language_info={"name": "python", "version": "3.11.7"},
        widgets={"application/vnd.jupyter.widget-state+json": {"state": {}}},
        papermill={"start_time": "2030-01-01T00:00:00"})
    code = nbformat.v4.new_code_cell("print(1)", execution_count=1, outputs=[
        nbformat.v4.new_output("stream", text="1\n"),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "9f2c", "version_major": 2,
                                                         "version_minor": 0},
            "text/plain": "HBox(children=(IntSlider(value=8),))"})])
    code.metadata.update(execution={"iopub.execute_input": "2030-01-01T00:00:00.1Z"},
                         ExecuteTime={"end_time": "2030"}, papermill={"duration": 0.1},
                         tags=["keep-me"])
    nb.cells += [nbformat.v4.new_markdown_cell("# Title"), code]
    return nb


def test_every_volatile_field_is_found():
    found = hygiene.volatile_fields(executed_like())
    assert found == ["metadata.papermill", "metadata.widgets", "metadata.language_info.version",
                     "metadata.kernelspec ('Python 3 (series)')",
                     "cell 2 metadata: execution, ExecuteTime, papermill",
                     "cell 2 output: a widget view"]


def test_fix_strips_them_and_keeps_sources_outputs_and_tags(tmp_path, capsys):
    path = tmp_path / "01_x.ipynb"
    nbformat.write(executed_like(), path)
    assert hygiene.main([str(path)]) == 1
    assert "01_x.ipynb: metadata.papermill" in capsys.readouterr().out
    assert hygiene.main(["--fix", str(path)]) == 0
    fixed = json.loads(path.read_text())
    assert hygiene.volatile_fields(fixed) == []
    code = fixed["cells"][1]
    assert code["metadata"] == {"tags": ["keep-me"]}
    assert code["outputs"][0]["text"] == ["1\n"] and code["execution_count"] == 1
    assert len(code["outputs"]) == 1, "the widget view goes, the printed output stays"
    assert fixed["metadata"]["language_info"] == {"name": "python"}
    assert hygiene.main([str(path)]) == 0


def test_missing_notebook_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        hygiene.main([str(tmp_path / "nope.ipynb")])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("path", stored_notebooks(), ids=lambda p: p.name)
def test_stored_notebook_has_no_volatile_metadata(path):
    found = hygiene.volatile_fields(json.loads(path.read_text()))
    assert not found, f"run `python -m tools.hygiene --fix {path.name}`: {found[:5]}"
