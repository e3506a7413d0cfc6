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

#: the suite's longest tests (measured: `scripts/test.sh --durations=60`), started first: the
#: workers share the rest out as they go (``--dist worksteal`` takes from the end of a
#: worker's queue), so none of these starts in the last minute and stretches the run
SLOW_FIRST = (
    "tests/cli/test_install_script.py::test_real_install_then_upgrade",
    "tests/e2e/test_walk.py",
    "tests/e2e/test_approve.py::test_late_taps_answer_the_terminal_dialog_with_keys",
    "tests/hook/test_fallback_install.py",
    "tests/e2e/test_chat.py::test_telegram_down_mid_task_the_chat_converges",
    "tests/hub/test_per_host_order.py",
    "tests/e2e/test_daemon.py::test_daemon_restarted_mid_task_loses_nothing",
    "tests/e2e/test_hub.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)),
                    len(SLOW_FIRST))

    items.sort(key=rank)  # (stable: the rest keep their order)


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
    # a stopping daemon keeps its unsent chat messages for the next start instead of waiting
    # up to 3 s for Telegram's pace at every test's end (tests of that wait set their own)
    monkeypatch.setenv("AIPAGER_STOP_GRACE", "0")
    return root
