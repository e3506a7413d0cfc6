"""Which folders Claude Code trusts, read from its own config (``~/.claude.json``).

A session started in a folder Claude Code has never trusted stops at its folder trust
dialog ("Do you trust the files in this folder?") before any hook runs: it stays
"starting" and a prompt typed then answers the dialog.  So the page offers the trusted
folders first when it starts a session, and shows the dialog as something that needs the
person while a session of an untrusted folder has not started.

Claude Code keeps a project's trust as ``projects[path].hasTrustDialogAccepted``; a folder
under a trusted one is trusted too.  The file is read, never written: Claude Code rewrites
it whole, and a second writer could lose its changes.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

#: the file is Claude Code's and can be large (a history per project): read at most this
READ_MAX = 8 * 1024 * 1024


def config_path(env: Mapping[str, str]) -> str:
    """Where Claude Code keeps its config: ``$CLAUDE_CONFIG_DIR/.claude.json``, else
    ``~/.claude.json``."""
    base = env.get("CLAUDE_CONFIG_DIR") or env.get("HOME") or os.path.expanduser("~")
    return os.path.join(base, ".claude.json")


def trusted(config: Any) -> list[str]:
    """The folders whose trust dialog was accepted, in the config's order (pure)."""
    projects = config.get("projects") if isinstance(config, dict) else None
    if not isinstance(projects, dict):
        return []
    return [path for path, facts in projects.items()
            if isinstance(path, str) and os.path.isabs(path) and isinstance(facts, dict)
            and facts.get("hasTrustDialogAccepted") is True]


def is_trusted(folder: str, folders: list[str]) -> bool:
    """Whether ``folder`` is one of ``folders`` or inside one (pure)."""
    here = os.path.normpath(folder)
    return any(here == os.path.normpath(f) or here.startswith(os.path.normpath(f).rstrip("/") + "/")
               for f in folders)


def read(env: Mapping[str, str]) -> list[str]:
    """The trusted folders that still exist; none when the config cannot be read."""
    try:
        with open(config_path(env), "rb") as fh:
            data = fh.read(READ_MAX + 1)
    except OSError:
        return []
    if len(data) > READ_MAX:
        return []
    try:
        config = json.loads(data)
    except ValueError:
        return []
    return [f for f in trusted(config) if os.path.isdir(f)]


__all__ = ["config_path", "is_trusted", "read", "trusted"]
