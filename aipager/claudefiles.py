"""Claude Code's own files as aipager reads and writes them at run time and at install
(``install.claude_code``): its user settings (read, written back safely, the model a
switch from the chat must put back) and whether a program is a compiled one.  Run-time
code imports this module, never ``aipager.install``."""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any, Mapping

from aipager.proto import fsio, paths
from aipager.proto.errors import SettingsError
from aipager.proto.fsnames import unused_name

#: ``model_setting`` of settings without a ``model`` key
NO_MODEL = ""


def is_native(path: str) -> bool:
    """Whether ``path`` is a compiled ELF program (not a Python script)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def read_settings(path: str) -> dict[str, Any]:
    """The settings document; an absent or empty file is ``{}``.

    Raises:
        SettingsError: the file cannot be read, is not JSON, or is not an object.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        msg = f"cannot read {path}: {exc.strerror}"
        raise SettingsError(msg) from exc
    if not raw.strip():
        return {}
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        msg = (
            f"{path} is not valid JSON ({exc}); aipager did not change it. "
            "Fix the file (or move it away) and run the command again."
        )
        raise SettingsError(msg) from exc
    if not isinstance(doc, dict):
        msg = f"{path} does not hold a JSON object; aipager did not change it"
        raise SettingsError(msg)
    return doc


def write_json(path: str, doc: dict[str, Any], *, backup_first: bool = True) -> str | None:
    """Back up ``path`` (if present) then replace it atomically; return the backup.

    Shared by every file aipager wires (``wiring_ax`` too): the backup sits
    next to ``path`` as ``<name>.aipager-backup-<stamp>``, the mode is kept.
    A ``path`` that is a symbolic link (a dotfile manager's: stow, chezmoi,
    home-manager) stays one: the file it points to is replaced instead, in
    its own folder, so the rename never crosses file systems.

    Raises:
        SettingsError: the folder, backup or file cannot be written (for a
            link, the message names its target).
    """
    target = os.path.realpath(path) if os.path.islink(path) else path
    if os.path.islink(target):
        msg = f"{path} is a symbolic link that loops; fix it, aipager left it alone"
        raise SettingsError(msg)
    folder = os.path.dirname(target)
    shown = path if target == path else f"{target} (where the link {path} points)"
    backup = None
    mode = 0o600
    try:
        if target == path:
            os.makedirs(folder, exist_ok=True)
        if os.path.exists(path):
            mode = os.stat(path).st_mode & 0o777
            if backup_first:
                backup = unused_name(f"{path}.aipager-backup-{time.strftime('%Y%m%dT%H%M%S')}")
                shutil.copy2(path, backup)
        data = json.dumps(doc, indent=2) + "\n"
        fsio.write_atomic(target, data.encode("utf-8"), mode, sync=True)
    except OSError as exc:
        msg = f"cannot write {shown}: {exc.strerror}"
        raise SettingsError(msg) from exc
    return backup


def model_setting(env: Mapping[str, str]) -> Any:
    """The ``model`` of Claude Code's user settings, ``NO_MODEL`` when there is none.

    Raises:
        SettingsError: as ``read_settings``.
    """
    return read_settings(paths.claude_settings(env)).get("model", NO_MODEL)


def put_back_model(env: Mapping[str, str], before: Any, switched: str) -> bool:
    """Claude Code saves the model ``/model NAME`` picks in its user settings, which makes it
    every later session's too (measured on 2.1.328; the running session keeps it when the
    file changes back).  A switch from the chat is for one session: the setting before goes
    back, only while the file still holds what the switch wrote.  Returns whether it did.

    Raises:
        SettingsError: as ``read_settings`` / ``write_json``.
    """
    path = paths.claude_settings(env)
    doc = read_settings(path)
    if doc.get("model") != switched:
        return False
    if before == NO_MODEL:
        doc.pop("model", None)
    else:
        doc["model"] = before
    write_json(path, doc, backup_first=False)
    return True
