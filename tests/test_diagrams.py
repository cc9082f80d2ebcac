"""The concept diagrams: drawn by tools.diagrams, one notebook at least each."""

from tools import diagrams
from tools.cells import stored_notebooks


def test_every_diagram_is_what_its_function_draws():
    problems = diagrams.sync(write=False)
    assert not problems, "\n".join(problems) + "\nrun `python -m tools.diagrams`"


def test_every_notebook_has_a_diagram_registered_for_it():
    drawn = {d.notebook for d in diagrams.load_all().values()}
    missing = [p.name for p in stored_notebooks() if p.name[:2] not in drawn]
    assert not missing, f"no diagram drawn for {missing}"
