"""What a class reads, checked: the form every notebook of the series keeps.

``python -m tools.lesson_form`` prints, per notebook, the measures a lesson is held to and
what breaks them; ``tests/test_lesson_form.py`` fails on any. The rules, and why:

* prose a projector can carry: a paragraph (a list item counts as one; tables, code and
  headings do not) of at most 120 words, a median of at most 40, at most 3,500 words in all
  (about fifteen minutes of reading);
* under the title, the class time (from TEACHING.md, rounded up to five minutes), a link to
  the glossary, and the objectives as a list of at most six things a student will be able
  to do;
* every numbered section (``## N. ...``) closes with a ``**Takeaway:**`` paragraph that
  states the rule learned; neither it nor the summary points at an output ("the table
  above") instead of saying what it shows;
* at least one concept diagram (a markdown cell tagged ``diagram``, see ``tools.diagrams``);
* the setup cell folded and at most ten lines, every solution folded;
* sources named by their titles: no "the seed".
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from tools.cells import SETUP_ID, cell_source, is_solution, stored_notebooks

ROOT = Path(__file__).resolve().parent.parent
TEACHING = ROOT / "TEACHING.md"
GLOSSARY = ROOT / "GLOSSARY.md"
LIMITS = {"words": 3500, "median": 40, "paragraph": 120, "objectives": 6, "setup_lines": 10}
LIST_ITEM = re.compile(r"\s*([-*+]|\d+\.)\s")
POINTERS = re.compile(r"\b(table|figure|plot|cell|output)s? (above|below)\b|\bprinted\b|"
                      r"\bthe cell (says|shows|prints)\b", re.I)
SEED = re.compile(r"\bthe seeds?\b|\bseed's\b", re.I)
TAKEAWAY = "**Takeaway:**"


def paragraphs(markdown: str) -> list[str]:
    """The prose paragraphs of a markdown text: blocks between blank lines, each list item
    its own; code fences, tables, headings, HTML and images left out."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    found: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or lines[0].lstrip().startswith(("#", "|", "<", "![", "[![")):
            continue
        if all(LIST_ITEM.match(line) or line.startswith("  ") for line in lines):
            item: list[str] = []
            for line in lines:
                if LIST_ITEM.match(line) and item:
                    found.append(" ".join(item))
                    item = []
                item.append(line)
            found.append(" ".join(item))
        else:
            found.append(" ".join(lines))
    return found


def class_minutes(number: str, teaching: Path = TEACHING) -> int | None:
    """The class minutes of notebook ``number`` in TEACHING.md's table, rounded up to 5."""
    for line in teaching.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] == number and cells[4].isdigit():
            return 5 * math.ceil(int(cells[4]) / 5)
    return None


def glossary_anchors(glossary: Path = GLOSSARY) -> set[str]:
    """GitHub's anchors of the glossary's headings (lower case, punctuation dropped)."""
    anchors = set()
    for line in glossary.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def sections(cells: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(heading, the section's markdown) for every ``## `` heading, in order."""
    found: list[tuple[str, list[str]]] = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        for line in cell_source(cell).splitlines(keepends=True):
            if line.startswith("## "):
                found.append((line.strip(), []))
            elif found:
                found[-1][1].append(line)
        if found:
            found[-1][1].append("\n\n")
    return [(heading, "".join(body)) for heading, body in found]


def measure(path: Path) -> dict[str, Any]:
    """The measures of one notebook, and ``problems``: each broken rule in a sentence."""
    cells = json.loads(path.read_text())["cells"]
    number = path.name[:2]
    prose = [c for c in cells if c["cell_type"] == "markdown"
             and "diagram" not in c.get("metadata", {}).get("tags", [])]
    texts = [cell_source(c) for c in prose]
    lengths = [len(p.split()) for t in texts for p in paragraphs(t)]
    # every word a reader meets, a diagram's alt text included
    words = sum(len(cell_source(c).split()) for c in cells if c["cell_type"] == "markdown")
    title = next((t for t in texts if t.lstrip().startswith("# ")), "")
    objectives = [line for line in title.splitlines() if LIST_ITEM.match(line)]
    minutes = re.search(r"\*\*Class time:\*\* about (\d+) minutes", title)
    diagrams = [c for c in cells if "diagram" in c.get("metadata", {}).get("tags", [])]
    setup = next((c for c in cells if c.get("id") == SETUP_ID), None)
    r: dict[str, Any] = {
        "nb": number, "words": words, "paragraphs": len(lengths),
        "median": statistics.median(lengths) if lengths else 0,
        "largest": max(lengths, default=0),
        "over": sum(n > LIMITS["paragraph"] for n in lengths),
        "objectives": len(objectives), "diagrams": len(diagrams),
        "setup_lines": len([x for x in cell_source(setup).splitlines() if x.strip()])
        if setup else 0,
    }
    problems = []
    if words > LIMITS["words"]:
        problems.append(f"{words} words (at most {LIMITS['words']})")
    if r["median"] > LIMITS["median"]:
        problems.append(f"median paragraph {r['median']} words (at most {LIMITS['median']})")
    if r["over"]:
        long = [p[:50] for t in texts for p in paragraphs(t) if len(p.split()) > 120]
        problems.append(f"{r['over']} paragraph(s) over {LIMITS['paragraph']} words: {long}")
    if not 1 <= len(objectives) <= LIMITS["objectives"]:
        problems.append(f"{len(objectives)} objectives in the title cell (a list of 1 to 6)")
    wanted = class_minutes(number)
    if not minutes or wanted is None or int(minutes[1]) != wanted:
        problems.append(f"the title cell says '**Class time:** about N minutes' with N = "
                        f"{wanted} (TEACHING.md's class minutes rounded up to 5), not "
                        f"{minutes[0] if minutes else 'nothing'}")
    links = re.findall(r"GLOSSARY\.md(?:#([\w-]+))?", "".join(texts))
    if not re.search(r"GLOSSARY\.md", title):
        problems.append("the title cell does not link the glossary (GLOSSARY.md)")
    missing = sorted({a for a in links if a and a not in glossary_anchors()})
    if missing:
        problems.append(f"glossary anchors that GLOSSARY.md lacks: {missing}")
    for heading, body in sections(cells):
        numbered = re.match(r"## \d+\.", heading)
        takeaways = [p for p in paragraphs(body) if p.startswith(TAKEAWAY)]
        if numbered and not takeaways:
            problems.append(f"{heading[:50]!r} has no {TAKEAWAY} paragraph")
        if numbered or heading.startswith("## Summary"):
            pointing = [p for p in paragraphs(body) if (p.startswith(TAKEAWAY) or not numbered)
                        and POINTERS.search(p)]
            if pointing:
                problems.append(f"{heading[:40]!r}: a takeaway or summary points at an output "
                                f"instead of saying what it shows: {pointing[0][:70]!r}")
    if not any(IMAGE_WITH_ALT.search(cell_source(c)) for c in diagrams):
        problems.append("no concept diagram (a markdown cell tagged 'diagram' with alt text)")
    if setup is None or r["setup_lines"] > LIMITS["setup_lines"] or not setup.get(
            "metadata", {}).get("jupyter", {}).get("source_hidden"):
        problems.append("the setup cell is not folded or has more than 10 lines")
    unfolded = [cell_source(c)[:30] for c in cells if is_solution(c)
                and not c.get("metadata", {}).get("jupyter", {}).get("source_hidden")]
    if unfolded:
        problems.append(f"solutions not folded: {unfolded}")
    if any(SEED.search(t) for t in texts):
        problems.append("'the seed' in learner text: name the book and chapter instead")
    r["problems"] = problems
    return r


IMAGE_WITH_ALT = re.compile(r"!\[[^\]\s][^\]]*\]\(data:image/png;base64,")


def code_lines(folder: Path = ROOT / "notebooks") -> int:
    """Lines of the notebooks' code cells, as ``wc -l`` counts the extracted sources."""
    return sum(len(cell_source(c).splitlines()) for p in stored_notebooks(folder)
               for c in json.loads(p.read_text())["cells"] if c["cell_type"] == "code")


def package_lines(folder: Path = ROOT / "helpers") -> int:
    """Lines of the helper package's Python files, as ``wc -l`` counts them."""
    return sum(len(p.read_text().splitlines()) for p in folder.rglob("*.py"))


def main() -> int:
    rows = [measure(p) for p in stored_notebooks()]
    keys = [k for k in rows[0] if k != "problems"]
    print("  ".join(f"{k:>10}" for k in keys))
    for r in rows:
        print("  ".join(f"{str(r[k]):>10}" for k in keys))
    for r in rows:
        for p in r["problems"]:
            print(f"{r['nb']}: {p}")
    print(f"code cells {code_lines()} lines (at most 6,000); helpers {package_lines()} lines "
          "(at most 6,000)")
    return 1 if any(r["problems"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
