"""GitHub-flavoured markdown tables: the one renderer of the maintainers' reports.

``make run``'s REPORT.md (:mod:`tools.report`), ``make bench``'s RESULTS.md
(:mod:`bench.report`) and TEACHING.md's minutes (:mod:`tools.teaching`) all write tables.
Each chooses how its numbers read (significant digits, units) and passes a formatter;
the table's syntax and its escaping live here only, so a value holding ``|`` or a line
break cannot split a row in one report and not in another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any


def escape(text: str) -> str:
    """``text`` safe inside a table cell: ``|`` escaped, line breaks as spaces."""
    return text.replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]],
          fmt: Callable[[Any], str] = str) -> str:
    """A markdown table: a header row, the separator, one line per row.

    Every cell is ``fmt(value)``, escaped. A row with the wrong number of cells is an
    error rather than a table that silently shifts its columns.
    """
    if not columns:
        raise ValueError("a markdown table needs at least one column")
    lines = ["| " + " | ".join(escape(str(c)) for c in columns) + " |",
             "|" + "---|" * len(columns)]
    for row in rows:
        cells = list(row)
        if len(cells) != len(columns):
            raise ValueError(f"a row has {len(cells)} cells but the table has {len(columns)} "
                             f"columns ({', '.join(map(str, columns))})")
        lines.append("| " + " | ".join(escape(fmt(v)) for v in cells) + " |")
    return "\n".join(lines)
