"""Sample JSON files for the wiring tests (Claude Code settings, AX Code hooks)."""

from __future__ import annotations

import glob
import json
import os


def write(path: str, content) -> None:
    """Write ``content`` verbatim (a str, e.g. broken JSON) or as JSON."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(content if isinstance(content, str) else json.dumps(content))


def read(path: str):
    with open(path) as fh:
        return json.load(fh)


def backups(path: str) -> list[str]:
    """The backups aipager made of ``path`` (``wiring.write_json``)."""
    return glob.glob(path + ".aipager-backup-*")
