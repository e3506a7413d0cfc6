"""The systemd user unit that keeps the daemon running (`aipager service ...`).

``KillMode=process``: the Claude Code sessions started from the phone are
dtach masters in the daemon's cgroup.  With systemd's default (control-group)
a daemon restart would kill every session; with ``process`` only the daemon's
own process is stopped and the sessions carry on, to be re-adopted at start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from aipager.proto import paths
from aipager.proto.errors import ServiceError

UNIT_NAME = "aipager.service"

#: environment the unit passes on to the daemon when it is set at install time
_PASSED_ON = ("AIPAGER_INSTANCE_DIR", "AIPAGER_CLAUDE_BIN", "AIPAGER_TELEGRAM_API_BASE")

ACTIONS = {
    "start": [["start", UNIT_NAME]],
    "stop": [["stop", UNIT_NAME]],
    "status": [["status", "--no-pager", UNIT_NAME]],
    "install": [["daemon-reload"], ["enable", "--now", UNIT_NAME]],
    "uninstall": [["disable", "--now", UNIT_NAME], ["daemon-reload"]],
}


@dataclass(frozen=True)
class Outcome:
    """What one ``systemctl --user`` call said."""

    argv: list[str]
    returncode: int
    output: str


def unit_path(env: Mapping[str, str]) -> str:
    """``$XDG_CONFIG_HOME/systemd/user/aipager.service``."""
    xdg_config = os.path.dirname(paths.config_dir(env))
    return os.path.join(xdg_config, "systemd", "user", UNIT_NAME)


def aipager_binary(env: Mapping[str, str]) -> str:
    """Absolute path of the ``aipager`` program the unit should run."""
    here = os.path.abspath(sys.argv[0])
    if os.path.basename(here) == "aipager" and os.access(here, os.X_OK):
        return here
    candidate = os.path.join(sysconfig.get_path("scripts"), "aipager")
    if os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("aipager", path=env.get("PATH"))
    if found:
        return os.path.abspath(found)
    msg = "cannot find the installed `aipager` program for the unit; reinstall aipager"
    raise ServiceError(msg)


def unit_text(aipager: str, env: Mapping[str, str], start_args: Sequence[str] = ()) -> str:
    """The unit file for running ``<aipager> start [start_args]`` as a user service
    (``--hub``, or ``--join URL --creds FILE`` with the file's absolute path)."""
    lines = [
        "[Unit]",
        "Description=aipager: Telegram remote control for Claude Code",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        f"ExecStart={' '.join(_quote(a) for a in (aipager, 'start', *start_args))}",
        # The user manager's PATH is minimal; Claude Code and git must be found
        # the way they are in the shell that ran `service install`.
        f"Environment={_quote('PATH=' + env.get('PATH', '/usr/bin:/bin'))}",
    ]
    for var in _PASSED_ON:
        if env.get(var):
            lines.append(f"Environment={_quote(var + '=' + env[var])}")
    lines += [
        "Restart=always",
        "RestartSec=5",
        "KillMode=process",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def _quote(value: str) -> str:
    # systemd splits on spaces and expands % specifiers; quote and escape both.
    value = value.replace("%", "%%")
    if any(c in value for c in ' "\\'):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def write_unit(env: Mapping[str, str], text: str) -> tuple[str, str | None]:
    """Write the unit; a different existing unit is backed up first.

    Returns:
        ``(path, backup)``; ``backup`` is None when nothing was replaced.
    """
    path = unit_path(env)
    backup = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                if fh.read() == text:
                    return path, None
            backup = f"{path}.bak-{time.strftime('%Y%m%dT%H%M%S')}"
            os.replace(path, backup)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        msg = f"cannot write {path}: {exc.strerror}"
        raise ServiceError(msg) from exc
    return path, backup


def systemctl_argv(env: Mapping[str, str], action: str) -> list[list[str]]:
    """The ``systemctl --user`` command lines for ``action``."""
    if action not in ACTIONS:
        msg = f"unknown service action {action!r}; use one of: {', '.join(ACTIONS)}"
        raise ServiceError(msg)
    systemctl = shutil.which("systemctl", path=env.get("PATH"))
    if not systemctl:
        msg = "systemctl not found: systemd user services are not available on this machine"
        raise ServiceError(msg)
    return [[systemctl, "--user", *args] for args in ACTIONS[action]]


def run(env: Mapping[str, str], action: str, start_args: Sequence[str] = ()) -> list[Outcome]:
    """Run ``action``; for install/uninstall also write/remove the unit file (install: one
    that runs ``aipager start`` with ``start_args``).

    ``status`` returns systemctl's answer whatever its exit code (3 = inactive);
    any other failing call raises ``ServiceError`` with systemctl's words.
    """
    if action == "install":
        write_unit(env, unit_text(aipager_binary(env), env, start_args))
    outcomes = []
    for argv in systemctl_argv(env, action):
        proc = subprocess.run(argv, capture_output=True, text=True, env=dict(env), check=False)
        outcome = Outcome(argv, proc.returncode, (proc.stdout + proc.stderr).strip())
        outcomes.append(outcome)
        if proc.returncode != 0 and action != "status":
            msg = f"`{' '.join(argv[1:])}` failed: {outcome.output or proc.returncode}"
            raise ServiceError(msg)
    if action == "uninstall":
        try:
            os.unlink(unit_path(env))
        except FileNotFoundError:
            pass
    return outcomes


def installed(env: Mapping[str, str]) -> bool:
    """Whether the unit file exists."""
    return os.path.exists(unit_path(env))
