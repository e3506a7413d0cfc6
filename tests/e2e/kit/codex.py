"""Locating the real Codex CLI and giving it a throwaway home wired to a fake Responses API.

Codex is looked up when this module is imported (the suite's autouse ``isolated_env``
fixture deletes every ``AIPAGER_*`` variable before each test).  A missing Codex FAILS the
tests that need it with a message saying how to get it; they are never skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

import pytest

from e2e.kit.claude import search_path

CODEX_VERSION = "0.169.0"
#: where scripts/test.sh installs it (``AIPAGER_TEST_CODEX`` names the program)
CACHED_CODEX = os.path.expanduser(
    f"~/.cache/aipager-test/codex-{CODEX_VERSION}/node_modules/.bin/codex")
#: the variable Codex reads the fake provider's key from, and the key
KEY_VAR = "FAKE_OPENAI_API_KEY"
API_KEY = "sk-e2e-dummy-openai-key"

_CODEX_FROM_ENV = os.environ.get("AIPAGER_TEST_CODEX", "")


def codex_binary() -> str:
    """The Codex executable to drive; fails the test when there is none."""
    for candidate in (_CODEX_FROM_ENV, CACHED_CODEX):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    msg = (
        f"the real Codex CLI {CODEX_VERSION} is needed for these e2e tests: run "
        f"`bash scripts/test.sh` (it installs @openai/codex@{CODEX_VERSION} and sets "
        f"AIPAGER_TEST_CODEX), or point AIPAGER_TEST_CODEX at a `codex` executable "
        f"(looked at {_CODEX_FROM_ENV!r}, {CACHED_CODEX!r})"
    )
    pytest.fail(msg, pytrace=False)


@dataclass
class CodexHome:
    """HOME, CODEX_HOME, a project and the instance folder (its socket) for one Codex run."""

    root: str
    session: str = "codex-e2e"

    @property
    def home(self) -> str:
        return os.path.join(self.root, "home")

    @property
    def codex_home(self) -> str:
        return os.path.join(self.home, ".codex")

    @property
    def project(self) -> str:
        return os.path.join(self.root, "proj")

    @property
    def instance(self) -> str:
        return os.path.join(self.root, "inst")

    @property
    def config_path(self) -> str:
        return os.path.join(self.codex_home, "config.toml")

    @property
    def hooks_path(self) -> str:
        return os.path.join(self.codex_home, "hooks.json")

    def aipager_env(self) -> dict[str, str]:
        """The environment aipager's CLI runs with (CODEX_HOME decides the files)."""
        return {
            "PATH": search_path(),
            "HOME": self.home,
            "CODEX_HOME": self.codex_home,
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
            "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
            "XDG_RUNTIME_DIR": self.instance,
            "AIPAGER_INSTANCE_DIR": self.instance,
            "LANG": "C.UTF-8",
        }

    def codex_env(self) -> dict[str, str]:
        """Codex's environment: offline against the fake, in the session aipager started."""
        env = self.aipager_env()
        env.update({KEY_VAR: API_KEY, "CLAUDE_DTACH_SESSION": self.session,
                    "TERM": "dumb", "NO_COLOR": "1"})
        return env

    def socket_path(self) -> str:
        return os.path.join(self.instance, "aipager.sock")

    def aipager(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the installed ``aipager`` CLI in this home."""
        return subprocess.run(["aipager", *args], env=self.aipager_env(), capture_output=True,
                              text=True, timeout=60, check=False)

    def exec(self, prompt: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``codex exec`` non-interactively: no git repository needed, stdin closed."""
        cmd = [codex_binary(), "exec", "--skip-git-repo-check", *args, prompt]
        return subprocess.run(cmd, env=self.codex_env(), cwd=self.project, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def make_home(provider_config: str, session: str = "codex-e2e", **extra: Any) -> CodexHome:
    """Create the folders and a config.toml holding only ``provider_config``."""
    # short, under /tmp: the instance folder holds Unix sockets
    home = CodexHome(root=tempfile.mkdtemp(prefix="apcx-", dir="/tmp"), session=session)
    for folder in (home.codex_home, home.project, home.instance):
        os.makedirs(folder, exist_ok=True)
    with open(home.config_path, "w", encoding="utf-8") as fh:
        fh.write("# the e2e suite's Codex: offline, against the fake Responses API\n")
        fh.write(provider_config)
    return home
