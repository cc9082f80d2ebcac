"""The package's shape (issue 20): no import cycle, machine.py at the bottom, one small face."""

import ast
import json
import sys
from collections import defaultdict

import helpers
from tools.package_size import (
    NOTEBOOKS,
    PACKAGE,
    find_cycle,
    import_graph,
    notebook_imports,
)


def test_no_import_cycle_counting_imports_inside_functions():
    assert find_cycle(import_graph()) == []


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


def test_machine_is_the_leaf_standard_library_and_psutil_only():
    tree = ast.parse((PACKAGE / "machine.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - {"__future__", "psutil"} <= set(sys.stdlib_module_names), imported


def test_the_mxnet_gpu_route_imports_no_framework_helper():
    assert "helpers.frameworks" not in import_graph()["helpers.mxnet_gpu"]


def test_the_face_holds_what_more_than_one_notebook_uses():
    users = defaultdict(set)
    for notebook in NOTEBOOKS.glob("*.ipynb"):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            lines = [x for x in source.splitlines() if not x.lstrip().startswith(("%", "!"))]
            for node in ast.walk(ast.parse("\n".join(lines))):
                if isinstance(node, ast.ImportFrom) and node.module == "helpers":
                    users.update({alias.name: users[alias.name] | {notebook.stem}
                                  for alias in node.names})
    assert len(helpers.__all__) <= 60
    assert {name for name, who in users.items() if len(who) > 1} == set(helpers.__all__)
    assert all(notebook_imports(nb) for nb in NOTEBOOKS.glob("*.ipynb"))
