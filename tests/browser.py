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


@contextmanager
def jupyterlab(root, home) -> Iterator[dict]:
    """A JupyterLab server on 127.0.0.1 serving ``root``, with none of the user's settings
    (``home`` holds its own), and what a test needs to reach it. Afterwards the server and
    every kernel it started have ended; a kernel still running then fails the test."""
    import secrets  # noqa: PLC0415
    import sys  # noqa: PLC0415

    import psutil  # noqa: PLC0415

    from helpers.processes import ProcessGroup, free_port  # noqa: PLC0415

    browser = chromium()
    port, token = free_port(), secrets.token_hex(16)
    env = {"JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "run"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
           "MPLBACKEND": "module://matplotlib_inline.backend_inline",  # as a kernel of make lab
           "JUPYTER_TOKEN": token}  # not on the command line, where `ps` would show it
    with ProcessGroup("jupyterlab") as group:
        server = group.start("jupyterlab", [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"], env=env)
        group.wait_for_port(server, port, timeout=90)
        kernels: set = set()
        try:
            yield {"url": f"http://127.0.0.1:{port}", "token": token, "root": root,
                   "browser": browser, "server": server, "kernels": kernels}
        finally:
            kernels.update(psutil.Process(server.pid).children(recursive=True))
            group.stop(grace=10)  # SIGTERM: the server shuts its kernels down first
            _, left = psutil.wait_procs(kernels, timeout=10)
            for kernel in left:
                kernel.kill()
            assert not left, f"kernels still running after JupyterLab stopped: {left}"


def open_notebook(page, lab: dict, name: str) -> None:
    """Open ``name`` (a file in the server's root) and wait until its cells are there."""
    page.goto(f"{lab['url']}/lab/tree/{name}?reset&token={lab['token']}")
    page.wait_for_function(
        "() => { const w = window.jupyterapp && jupyterapp.shell.currentWidget;"
        " return w && w.context && w.context.isReady && w.content && w.content.widgets; }")
