"""A real browser for the web page: Debian's chromium driven by Playwright.

Playwright's own browser download is not used: ``chromium()`` is Debian's package
(``scripts/test.sh`` installs it), given to ``chromium.launch(executable_path=…)``.
Screenshots go to ``tests/artifacts/web/`` (git-ignored), kept after the run.
"""

from __future__ import annotations

import os
import re
import time

from e2e.kit.daemon import Daemon

ARTIFACTS = os.path.join(os.path.dirname(__file__), "..", "..", "artifacts", "web")
#: the line ``aipager start`` prints once the page listens
LINK = re.compile(r"^Open (http://\S+/\?token=\S+)$", re.M)


def chromium() -> str:
    path = os.environ.get("AIPAGER_TEST_CHROMIUM") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        msg = (f"no chromium at {path}: the web page's browser tests need Debian's chromium "
               "(`apt-get install chromium`; scripts/test.sh does it)")
        raise AssertionError(msg)
    return path


def what_pages_show(browser) -> str:
    """Each open page's address and what its view reads (printed when a test failed)."""
    lines = []
    for context in browser.contexts:
        for page in context.pages:
            try:
                shown = page.evaluate("(document.getElementById('view') || document.body).innerText")
                flash = page.evaluate("(document.getElementById('flash') || {}).innerText || ''")
            except Exception as exc:  # noqa: BLE001 - a dump must not hide the failure
                shown, flash = f"(cannot read: {exc})", ""
            lines.append(f"--- {page.url}\nflash: {flash}\n{shown[:3000]}")
    return "\n".join(lines) or "(no page open)"


def shot(page, name: str) -> str:
    """A screenshot of the whole page, kept as a test artifact."""
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.abspath(os.path.join(ARTIFACTS, f"{name}.png"))
    page.screenshot(path=path, full_page=True)
    return path


def sign_in_link(daemon: Daemon, timeout: float = 20.0) -> str:
    """The ``Open http://127.0.0.1:PORT/?token=…`` link from ``aipager start``'s output."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(daemon.output, encoding="utf-8", errors="replace") as fh:
                found = LINK.findall(fh.read())
        except FileNotFoundError:
            found = []
        if found:
            return found[-1]
        if time.monotonic() > deadline:
            msg = f"aipager start printed no sign-in link within {timeout} s:\n{daemon.tail()}"
            raise AssertionError(msg)
        time.sleep(0.2)
