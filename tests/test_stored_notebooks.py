"""The stored notebooks are pages that readers open on other machines: keep them true and tidy.

nbval re-runs every notebook, but it compares only the cells marked for it, and it
cannot see what a stored page shows a reader who never runs it. This test reads the
stored files and fails on what such a reader must never meet:

* **paths of the machine that executed the notebook** in any output (the checkout, the
  home or temporary directory, a kernel's temporary file, ``site-packages``), in printed
  text, tracebacks and ``Path`` reprs alike: they mean nothing elsewhere and leak where
  the notebook ran;
* **error outputs longer than a few lines**: a teaching error is one line (caught and
  printed), not a wall of framework frames;
* **section numbers out of order** (``## 1.``, ``## 2.`` ...);
* **code cells stored unexecuted, or executed out of order**: a page that was not run
  top to bottom in one fresh kernel (``python -m tools.execute``) may show results that
  its cells no longer produce;
* **asserts without a message**: a claim that fails on a learner's machine must say which
  claim and which values;
* **nbval markers in two forms at once** (a tag and the same option as a comment), which
  nbval resolves silently in favour of the comment, with an "Overlapping options" warning.
"""

from __future__ import annotations

import ast
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from lesson_cells import parse_cell
from nbval.plugin import find_comment_markers, find_metadata_tags

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: Error outputs longer than this (after removing terminal colours) are a wall, not a lesson.
MAX_ERROR_LINES = 8

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: Absolute paths under the places a machine keeps checkouts, homes, temporary files and
#: installed packages. The look-behind keeps URLs (``https://host/tmp/...``), relative
#: paths and TensorFlow device strings (``/job:worker/task:0``) out.
_MACHINE_PATH = re.compile(
    r"(?<![\w.:/~-])/(?:home|root|Users|tmp|var/tmp|var/folders|private|work|workspace|mnt"
    r"|srv|opt|usr/(?:local/)?lib|builds|github/workspace|content|kaggle)/"
    r"|\b[A-Za-z]:\\(?:Users|Windows|Program Files)\\"
    r"|\b(?:site|dist)-packages\b"
    r"|\b(?:Posix|Windows)Path\("
)
_SECTION = re.compile(r"^##\s+(\d+)\.", re.MULTILINE)
_TRACEBACK_START = "Traceback (most recent call last):"


def _this_machine() -> list[str]:
    """This machine's own checkout, home and temporary directories, beyond the pattern."""
    places = {str(ROOT), str(Path.home()), tempfile.gettempdir()}
    return sorted(p for p in places if len(Path(p).parts) > 2)


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _output_texts(output: dict[str, Any]) -> list[str]:
    """Every piece of text an output shows: stream text, reprs, HTML, error and traceback."""
    kind = output.get("output_type")
    if kind == "stream":
        texts = [_text(output.get("text", ""))]
    elif kind == "error":
        texts = ["\n".join(output.get("traceback", [])),
                 f"{output.get('ename', '')}: {output.get('evalue', '')}"]
    else:
        texts = [_text(v) for k, v in output.get("data", {}).items()
                 if k.startswith("text/") or k == "application/json"]
    return [_ANSI.sub("", t) for t in texts]


def _code_cells(nb: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, c) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def machine_paths(nb: dict[str, Any]) -> list[str]:
    """``cell N: ...`` for every output that shows a path of the executing machine."""
    own = _this_machine()
    found = []
    for i, cell in _code_cells(nb):
        for output in cell.get("outputs", []):
            for text in _output_texts(output):
                for line in text.splitlines():
                    if _MACHINE_PATH.search(line) or any(p in line for p in own):
                        found.append(f"cell {i}: {line.strip()[:160]}")
    return found


def _traceback_lengths(text: str) -> list[int]:
    """Lengths of the Python tracebacks printed in ``text`` (up to the exception line)."""
    lines, lengths = text.splitlines(), []
    for start, line in enumerate(lines):
        if line.strip() != _TRACEBACK_START:
            continue
        end = start + 1
        while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end]):
            end += 1
        lengths.append(end - start + 1)
    return lengths


def long_errors(nb: dict[str, Any], limit: int = MAX_ERROR_LINES) -> list[str]:
    """``cell N: ...`` for every error output, or printed traceback, over ``limit`` lines."""
    found = []
    for i, cell in _code_cells(nb):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                lines = _ANSI.sub("", "\n".join(output.get("traceback", []))).splitlines()
                if len(lines) > limit:
                    found.append(f"cell {i}: {output.get('ename')} with a {len(lines)}-line "
                                 "traceback")
            elif output.get("output_type") == "stream":
                for n in _traceback_lengths(_ANSI.sub("", _text(output.get("text", "")))):
                    if n > limit:
                        found.append(f"cell {i}: a printed {n}-line traceback")
    return found


def section_numbers(nb: dict[str, Any]) -> list[int]:
    """The numbers of the ``## N.`` headings, in the order they appear."""
    return [int(n) for c in nb["cells"] if c["cell_type"] == "markdown"
            for n in _SECTION.findall(_text(c["source"]))]


def execution_problems(nb: dict[str, Any]) -> list[str]:
    """Code cells not executed, or not executed 1, 2, 3 ... from the top in one kernel."""
    problems, expected = [], 1
    for i, cell in _code_cells(nb):
        if not _text(cell["source"]).strip():
            continue  # empty cells are not executed
        count = cell.get("execution_count")
        if count is None:
            problems.append(f"cell {i} is stored unexecuted")
        elif count != expected:
            problems.append(f"cell {i} has execution count {count}, expected {expected}")
        expected = (count if count is not None else expected) + 1
    return problems


def overlapping_markers(nb: dict[str, Any]) -> list[str]:
    """Cells that give nbval the same option as a tag and as a comment."""
    found = []
    for i, cell in _code_cells(nb):
        comments = dict(find_comment_markers(_text(cell["source"])))
        tags = dict(find_metadata_tags(cell.get("metadata", {})))
        both = sorted(set(comments) & set(tags))
        if both:
            found.append(f"cell {i}: {', '.join(both)} both as a tag and as a comment")
    return found


def problems(nb: dict[str, Any]) -> list[str]:
    """Everything this test objects to in one notebook, as readable lines."""
    found = [f"machine path in {p}" for p in machine_paths(nb)]
    found += [f"long error in {p}" for p in long_errors(nb)]
    numbers = section_numbers(nb)
    if numbers != list(range(1, len(numbers) + 1)):
        found.append(f"section numbers {numbers}, expected 1 to {len(numbers)} in order")
    found += execution_problems(nb)
    found += [f"nbval markers in two forms: {p}" for p in overlapping_markers(nb)]
    return found


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 14, f"expected the series' notebooks in {ROOT / 'notebooks'}"


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in NOTEBOOKS])
def test_stored_notebook_is_clean(path: Path) -> None:
    found = problems(_load(path))
    assert not found, f"{path.name}:\n" + "\n".join(found[:30])


# -- the checks themselves, on small made-up notebooks ------------------------------------

def _nb(*cells: dict[str, Any]) -> dict[str, Any]:
    return {"cells": list(cells)}


def _code(source: str, count: int | None = 1, outputs: list[Any] | None = None,
          tags: list[str] | None = None) -> dict[str, Any]:
    return {"cell_type": "code", "source": source, "execution_count": count,
            "outputs": outputs or [], "metadata": {"tags": tags} if tags else {}}


def _md(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "source": source, "metadata": {}}


def _stdout(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


@pytest.mark.parametrize("text", [
    "saved /work/main/results/08_legacy.json",
    "PosixPath('results/x.png')",
    "File /home/ann/series/.venv/lib/python3.11/site-packages/mxnet/base.py:246",
    "checkpoints in /tmp/tmpab12cd/ckpt-3",
    "/var/folders/xy/T/ipykernel_1/123.py in <module>",
    "C:\\Users\\ann\\series\\notebooks",
])
def test_machine_paths_are_found(text: str) -> None:
    assert machine_paths(_nb(_code("x", outputs=[_stdout(text)]))), text


@pytest.mark.parametrize("text", [
    "variable global_step on /job:ps/task:0, loss on /job:worker/task:1",
    "/job:localhost/replica:0/task:0/device:CPU:0",
    "see https://github.com/apache/mxnet/tree/master/tools/launch.py",
    "saved results/08_legacy.json and helpers/workers/tf1_mnist.py",
    "~/.keras/datasets/mnist.npz",
    "1/beta = 0.63 GB/s; 10 Gbit/s Ethernet",
])
def test_legitimate_text_is_not_a_machine_path(text: str) -> None:
    assert machine_paths(_nb(_code("x", outputs=[_stdout(text)]))) == [], text


def test_machine_path_behind_terminal_colours() -> None:
    coloured = _stdout("  File \x1b[0;32m/home/ann/series/helpers/x.py\x1b[0m, line 3\n")
    assert machine_paths(_nb(_code("x", outputs=[coloured])))


def test_machine_path_in_a_traceback_and_a_repr() -> None:
    error = {"output_type": "error", "ename": "ValueError", "evalue": "bad",
             "traceback": ["\x1b[0;31mValueError\x1b[0m", "File \x1b[0;32m/root/x.py\x1b[0m"]}
    result = {"output_type": "execute_result", "execution_count": 1, "metadata": {},
              "data": {"text/plain": "PosixPath('/srv/ci/results/fig.png')"}}
    found = machine_paths(_nb(_code("x", outputs=[error]), _code("y", 2, [result])))
    assert [line.split(":")[0] for line in found] == ["cell 0", "cell 1"], found


def test_long_errors() -> None:
    short = {"output_type": "error", "ename": "E", "evalue": "", "traceback": ["E: one line"]}
    wall = {"output_type": "error", "ename": "E", "evalue": "",
            "traceback": ["\x1b[0;31m--------\x1b[0m"] + [f"frame {i}" for i in range(12)]}
    printed = _stdout("Traceback (most recent call last):\n"
                      + "".join(f'  File "x.py", line {i}\n    f()\n' for i in range(5))
                      + "RuntimeError: no\nafter\n")
    assert long_errors(_nb(_code("a", outputs=[short]))) == []
    assert len(long_errors(_nb(_code("a", outputs=[wall]), _code("b", 2, [printed])))) == 2
    assert _traceback_lengths("Traceback (most recent call last):\n  File x\nE: y\nz") == [3]


def test_sections_and_execution_order() -> None:
    good = _nb(_md("# T\n## 1. a"), _code("x", 1), _md("## 2. b\n### 2.1 c"), _code("", None),
               _code("y", 2), _md("## Summary"))
    assert problems(good) == []
    assert section_numbers(_nb(_md("## 8. a"), _md("## 9. b\n## 8. c"))) == [8, 9, 8]
    assert problems(_nb(_md("## 2. a"), _md("## 1. b")))
    assert execution_problems(_nb(_code("x", 1), _code("y", None), _code("z", 3))) == [
        "cell 1 is stored unexecuted"]
    assert execution_problems(_nb(_code("x", 2), _code("y", 1))) == [
        "cell 0 has execution count 2, expected 1", "cell 1 has execution count 1, expected 3"]


def test_overlapping_markers() -> None:
    both = _code("# NBVAL_RAISES_EXCEPTION\n1/0", tags=["raises-exception"])
    tag_only = _code("1/0", tags=["raises-exception"])
    comment_only = _code("# NBVAL_CHECK_OUTPUT\nprint(1)")
    assert overlapping_markers(_nb(tag_only, comment_only)) == []
    assert overlapping_markers(_nb(both)) == [
        "cell 0: check_exception both as a tag and as a comment"]


def bare_asserts(notebook: dict[str, Any]) -> list[str]:
    """``cell N: <test>`` for every assert without a message in the notebook's code cells: when
    one fails on a learner's machine, ``AssertionError`` alone says neither which claim nor
    which values."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(parse_cell(cell)):
            if isinstance(node, ast.Assert) and node.msg is None:
                found.append(f"cell {index}: {ast.unparse(node.test)[:80]}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_assert_says_what_it_checked(path: Path) -> None:
    assert not bare_asserts(_load(path)), bare_asserts(_load(path))


def test_a_bare_assert_is_found() -> None:
    cell = {"cell_type": "code", "source": ["%time x = 1\n", "assert x == 1\n",
                                            "assert x, f'x is {x}'\n"]}
    assert bare_asserts({"cells": [cell]}) == ["cell 0: x == 1"]
