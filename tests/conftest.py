"""Suite-wide fixtures.

Every test runs with HOME, XDG_* and AIPAGER_INSTANCE_DIR pointing into its own
tmp folder, so nothing ever reads or writes the real home or /tmp sockets.
"""

from __future__ import annotations

import os

import pytest

# aiogram the way the daemon imports it (models built on use, ``aipager.lazyaiogram``),
# before any test module imports it the eager way
from aipager import lazyaiogram

lazyaiogram.import_aiogram()

_ISOLATED = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "AIPAGER_INSTANCE_DIR",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Point every location aipager derives from the environment at tmp."""
    # A short base keeps Unix socket paths under the 108-byte limit.
    root = tmp_path_factory.mktemp("env")
    for var in list(os.environ):
        if (var.startswith("AIPAGER_") or var == "CLAUDE_DTACH_SESSION") and var not in _ISOLATED:
            monkeypatch.delenv(var, raising=False)
    for var in _ISOLATED:
        path = root / var.lower()
        path.mkdir()
        monkeypatch.setenv(var, str(path))
    # a daemon a test starts serves its web page on a free port, never the real one
    monkeypatch.setenv("AIPAGER_WEB_PORT", "0")
    return root
