"""Locating the real Claude Code and the built hook, and giving Claude Code a throwaway home.

The programs are looked up once, when this module is imported (collection time): the suite's
autouse ``isolated_env`` fixture deletes every ``AIPAGER_*`` variable before each test, which
would otherwise hide ``AIPAGER_TEST_CLAUDE``.  A missing program FAILS the e2e tests with a
message saying how to get it; the suite is never skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sysconfig
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pytest

from aipager.proto import paths, wire

#: where the development machine keeps Claude Code (scripts/test.sh sets AIPAGER_TEST_CLAUDE)
DEV_CLAUDE = "/work/cache/npmclaude/node_modules/.bin/claude"
CLAUDE_VERSION = "2.1.328"
#: a dummy key; the TUI asks about it unless its last 20 characters are pre-approved
API_KEY = "sk-ant-api03-e2e-dummy-key-000000000000000000000000"

_CLAUDE_FROM_ENV = os.environ.get("AIPAGER_TEST_CLAUDE", "")
# PATH as the test run started (the venv's bin first, per scripts/test.sh).
_PATH_AT_START = os.environ.get("PATH", "")


def claude_binary() -> str:
    """The Claude Code executable to drive; fails the test when there is none."""
    for candidate in (_CLAUDE_FROM_ENV, DEV_CLAUDE):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    msg = (
        f"the real Claude Code {CLAUDE_VERSION} is needed for the e2e suite: run "
        f"`bash scripts/test.sh` (it installs it and sets AIPAGER_TEST_CLAUDE), or point "
        f"AIPAGER_TEST_CLAUDE at a `claude` executable (looked at {_CLAUDE_FROM_ENV!r}, {DEV_CLAUDE!r})"
    )
    pytest.fail(msg, pytrace=False)


def installed_program(name: str) -> str:
    """Absolute path of an installed program: next to this interpreter, else on PATH; or fail.

    The interpreter's scripts folder comes first: pytest runs from the venv aipager is
    installed in, whatever PATH says.
    """
    here = os.path.join(sysconfig.get_path("scripts"), name)
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    found = shutil.which(name, path=_PATH_AT_START)
    if found:
        return os.path.abspath(found)
    msg = (
        f"`{name}` is not on PATH: install aipager (`pip install .`) into the venv whose bin "
        f"folder is on PATH, as scripts/test.sh does"
    )
    pytest.fail(msg, pytrace=False)


def search_path() -> str:
    """PATH for child processes: this interpreter's scripts folder, then the start-up PATH.

    aipager's CLI and daemon find ``dtach`` (from dtach-bin) and each other through PATH.
    """
    return os.pathsep.join([sysconfig.get_path("scripts"), _PATH_AT_START])


def expected_settings(hook: str, statusline: str) -> dict[str, Any]:
    """The wiring aipager must put in ``~/.claude/settings.json`` (what the suite checks)."""
    hooks: dict[str, Any] = {}
    for event in wire.HOOK_EVENTS:
        entry: dict[str, Any] = {"type": "command", "command": hook}
        timeout = {"PreModelSwitch": 5, "PermissionRequest": 30, "Elicitation": 120}.get(event)
        if timeout:
            entry["timeout"] = timeout
        group: dict[str, Any] = {"hooks": [entry]}
        if event in wire.TOOL_EVENTS:
            group["matcher"] = "*"
        hooks[event] = [group]
    return {"hooks": hooks, "statusLine": {"type": "command", "command": statusline}}


@dataclass
class ClaudeHome:
    """A throwaway world for one Claude Code run: HOME, project, instance folder.

    The instance folder is short (under /tmp) because it holds the Unix sockets.
    """

    root: str
    session: str = "claude-e2e"
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> str:
        return os.path.join(self.root, "home")

    @property
    def project(self) -> str:
        return os.path.join(self.root, "proj")

    @property
    def instance(self) -> str:
        return os.path.join(self.root, "inst")

    @property
    def settings_path(self) -> str:
        return os.path.join(self.home, ".claude", "settings.json")

    def audit(self) -> list[dict]:
        """The daemon's audit log, one record per line (none before the first)."""
        try:
            with open(paths.audit_log(self.aipager_env()), encoding="utf-8") as fh:
                return [json.loads(line) for line in fh if line.strip()]
        except FileNotFoundError:
            return []

    def aipager_env(self) -> dict[str, str]:
        """The environment aipager's own tools (CLI, daemon) run with."""
        env = {
            "PATH": search_path(),
            "HOME": self.home,
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
            "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
            "XDG_RUNTIME_DIR": self.instance,
            "AIPAGER_INSTANCE_DIR": self.instance,
            "LANG": "C.UTF-8",
            # a stopped daemon saves its unsent chat messages for the next start at once
            # rather than wait for Telegram's pace (up to 3 s at the end of every test)
            "AIPAGER_STOP_GRACE": "0",
        }
        env.update(self.extra_env)
        return env

    def claude_env(self, base_url: str) -> dict[str, str]:
        """The environment Claude Code runs with, offline against the fake API."""
        env = self.aipager_env()
        env.update(
            ANTHROPIC_BASE_URL=base_url,
            ANTHROPIC_API_KEY=API_KEY,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_DTACH_SESSION=self.session,
            TERM="xterm-256color",
        )
        return env

    def status_file(self) -> str:
        return paths.status_file(self.aipager_env(), self.session)

    def socket_path(self) -> str:
        return paths.socket_path(self.aipager_env())

    def read_settings(self) -> dict[str, Any]:
        with open(self.settings_path, encoding="utf-8") as fh:
            return json.load(fh)


def make_home(session: str = "claude-e2e") -> ClaudeHome:
    """Create the folders and pre-answer Claude Code's first-run dialogs."""
    root = tempfile.mkdtemp(prefix="ape2e-", dir="/tmp")
    home = ClaudeHome(root=root, session=session)
    for folder in (home.home, home.project, home.instance, os.path.dirname(home.settings_path)):
        os.makedirs(folder, exist_ok=True)
    first_run = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {home.project: {"hasTrustDialogAccepted": True}},
    }
    with open(os.path.join(home.home, ".claude.json"), "w", encoding="utf-8") as fh:
        json.dump(first_run, fh)
    return home


def wire_hooks(home: ClaudeHome, hook: str, statusline: str) -> None:
    """Wire the hook into the home's settings.json with the CLI's own wiring code.

    A scenario checks the result against :func:`expected_settings`.
    """
    from aipager.install import claude_code

    claude_code.install(home.aipager_env(), claude_code.Binaries(hook=hook, statusline=statusline))
