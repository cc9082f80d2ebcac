"""Chromium for the tests that look at pages as a reader does (JupyterLab, the website).

It needs Chromium (Debian: ``apt-get install chromium``, or ``$SERIES_CHROMIUM`` naming the
browser) and Playwright (``requirements-browser.txt``, which ``make test`` installs). Without
them the tests are skipped, saying so; with ``SERIES_REQUIRE_BROWSER=1`` (CI) they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

# The probe's flags: without the background-networking ones Chromium keeps dialling out.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


def needed(what: str) -> None:
    """Skip, saying how to get ``what``; under ``SERIES_REQUIRE_BROWSER=1`` (CI), fail."""
    if os.environ.get("SERIES_REQUIRE_BROWSER") == "1":
        pytest.fail(f"SERIES_REQUIRE_BROWSER=1 and {what}")
    pytest.skip(f"this check needs what is missing: {what}")


def chromium() -> str:
    """The browser's executable, or a skip (a failure in CI) saying how to get one."""
    found = os.environ.get("SERIES_CHROMIUM") or next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    if not found:
        needed("no Chromium: apt-get install chromium, or set SERIES_CHROMIUM to a Chromium "
               "or Chrome executable")
    try:
        import playwright  # noqa: F401, PLC0415
    except ImportError:
        needed("no Playwright: make test installs requirements-browser.txt")
    return found


@contextmanager
def browser_page(width: int = 1400, height: int = 1000) -> Iterator:
    """A page of a headless Chromium, closed afterwards whatever happens."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    executable = chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(60_000)
            yield page
        finally:
            browser.close()
