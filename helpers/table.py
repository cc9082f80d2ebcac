"""A small table that prints the same text everywhere and renders as HTML in Jupyter.

Notebooks show device listings, placement logs and timings as tables. pandas would be a
large dependency for that alone, and its text layout changes between versions, which
would break notebook output comparison; this table's text form is fixed.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class Table:
    """Rows of values under named columns."""

    def __init__(self, columns: Sequence[str], rows: Iterable[Sequence[Any]] = ()) -> None:
        if not columns:
            raise ValueError("a Table needs at least one column name")
        self.columns = list(columns)
        self.rows: list[list[Any]] = []
        for row in rows:
            self.append(row)

    def append(self, row: Sequence[Any]) -> None:
        if len(row) != len(self.columns):
            raise ValueError(
                f"row has {len(row)} values but the table has {len(self.columns)} columns "
                f"({', '.join(self.columns)})"
            )
        self.rows.append(list(row))

    def column(self, name: str) -> list[Any]:
        """All values of one column, in row order."""
        if name not in self.columns:
            raise KeyError(f"no column {name!r}; columns are {', '.join(self.columns)}")
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def records(self) -> list[dict[str, Any]]:
        """The rows as dictionaries (handy for JSON)."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        cells = [self.columns] + [[_cell(v) for v in row] for row in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
            for row in self.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
