"""The notes of one release: its section of CHANGELOG.md (``python -m tools.changelog 0.3.0``).

The release workflow prints them into the GitHub release; the tests check that the version
in ``pyproject.toml`` has a section, so a tag is never cut without one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"


def section(version: str, text: str | None = None) -> str:
    """The text under ``## <version>`` up to the next ``## `` heading."""
    text = CHANGELOG.read_text() if text is None else text
    found = re.search(rf"^## {re.escape(version)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not found or not found[1].strip():
        raise SystemExit(f"CHANGELOG.md has no section '## {version}': write one before the tag")
    return found[1].strip()


if __name__ == "__main__":
    print(section(sys.argv[1]))
