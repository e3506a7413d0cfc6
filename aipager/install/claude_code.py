"""Wiring Claude Code: aipager's entries in ``~/.claude/settings.json``.

aipager owns exactly these entries and nothing else in the file:

- for each of the 17 ``wire.HOOK_EVENTS``, one matcher group whose only hook is
  ``{"type": "command", "command": "<abs path>/aipager-hook"}``, with
  ``"matcher": "*"`` on ``wire.TOOL_EVENTS`` and a timeout on the events in
  ``TIMEOUTS``;
- ``statusLine``: ``{"type": "command", "command": "<abs path>/aipager-statusline"}``.

An entry is recognised as aipager's by the program name of its command
(``aipager-hook`` / ``aipager-statusline``), whatever folder it points at, so
an install that moved (a new venv) is repointed rather than duplicated.  The
user's own hooks, their order and every other setting are left alone.  A
statusLine of the user's that aipager replaces is remembered and put back by
``uninstall``.

The planning functions (``plan_install``, ``plan_uninstall``) are pure; the
file functions wrap them with a backup and an atomic write, and write nothing
when the plan changes nothing.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Any, Mapping, TypeGuard

from aipager.proto import paths, wire
from aipager.claudefiles import (read_settings, write_json)
from aipager.proto.errors import SettingsError

HOOK_NAME = "aipager-hook"
STATUSLINE_NAME = "aipager-statusline"

#: seconds Claude Code waits for the hook, where its default is wrong for us.
#: PermissionRequest: the hook itself waits up to 20 s for a tap; Elicitation: up to
#: 90 s for a form filled in on the phone (hookpy/reply.py).
TIMEOUTS = {"PreModelSwitch": 5, "PermissionRequest": 30, "Elicitation": 120}

_SAVED_STATUSLINE = "statusline-before-aipager.json"


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of the two programs Claude Code runs."""

    hook: str
    statusline: str


@dataclass
class Result:
    """What a wiring change did."""

    path: str
    changed: bool
    backup: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the wiring, with the command that fixes it."""

    what: str
    fix: str


# ---------------------------------------------------------------- locating


def find_binaries(env: Mapping[str, str]) -> Binaries:
    """Locate the installed ``aipager-hook`` and ``aipager-statusline``.

    Order: ``AIPAGER_HOOK_BIN`` / ``AIPAGER_STATUSLINE_BIN``; the scripts folder
    of the running interpreter (the venv aipager is installed in); the folder
    of the running ``aipager`` program; ``PATH``.

    Raises:
        SettingsError: a program was not found anywhere.
    """
    return Binaries(
        hook=_find(env, HOOK_NAME, "AIPAGER_HOOK_BIN"),
        statusline=_find(env, STATUSLINE_NAME, "AIPAGER_STATUSLINE_BIN"),
    )


def _find(env: Mapping[str, str], name: str, override: str) -> str:
    explicit = env.get(override)
    if explicit:
        return os.path.abspath(explicit)
    folders = [sysconfig.get_path("scripts"), os.path.dirname(os.path.abspath(sys.argv[0]))]
    for folder in folders:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name, path=env.get("PATH"))
    if found:
        return os.path.abspath(found)
    msg = f"{name} is not installed next to aipager; reinstall aipager (pip install aipager)"
    raise SettingsError(msg)


# ---------------------------------------------------------------- pure plans


def _program(command: Any) -> str:
    if not isinstance(command, str):
        return ""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return os.path.basename(words[0]) if words else ""


def is_ours(hook: Any) -> bool:
    """Whether one hook entry (``{"type": "command", ...}``) is aipager's."""
    return isinstance(hook, dict) and _program(hook.get("command")) == HOOK_NAME


def _statusline_is_ours(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict) and _program(value.get("command")) == STATUSLINE_NAME


def desired_group(event: str, hook_path: str, timeouts: Mapping[str, int] = TIMEOUTS,
                  tool_events: tuple[str, ...] = wire.TOOL_EVENTS) -> dict[str, Any]:
    """The matcher group aipager wants for ``event`` (Codex's wiring passes its own
    ``timeouts`` and ``tool_events``: the same form)."""
    hook: dict[str, Any] = {"type": "command", "command": hook_path}
    if event in timeouts:
        hook["timeout"] = timeouts[event]
    group: dict[str, Any] = {}
    if event in tool_events:
        group["matcher"] = "*"
    group["hooks"] = [hook]
    return group


def hooks_table(doc: dict[str, Any], where: str = "settings.json") -> dict[str, Any]:
    """The ``hooks`` object of ``doc`` (Claude Code's settings, Codex's hooks.json)."""
    table = doc.get("hooks", {})
    if not isinstance(table, dict):
        msg = f'"hooks" in {where} is not an object; fix it by hand, aipager left it alone'
        raise SettingsError(msg)
    return table


def strip_ours(groups: Any, event: str, where: str = "settings.json") -> tuple[list[Any], int | None]:
    """``groups`` without aipager's hooks, and where the first of them was."""
    if not isinstance(groups, list):
        msg = f"hooks.{event} in {where} is not a list; fix it by hand, aipager left it alone"
        raise SettingsError(msg)
    kept: list[Any] = []
    first: int | None = None
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not any(is_ours(h) for h in inner):
            kept.append(group)
            continue
        if first is None:
            first = len(kept)
        others = [h for h in inner if not is_ours(h)]
        if others:  # a group the user shares with us keeps their hooks
            kept.append({**group, "hooks": others})
    return kept, first


def plan_install(settings: dict[str, Any], bins: Binaries) -> dict[str, Any]:
    """``settings`` with aipager's entries in place (a new object; input untouched).

    Every aipager entry anywhere is removed first and the desired one put at the
    position of the first old one, so stale paths and duplicates disappear and
    a second run returns an equal document.
    """
    new = copy.deepcopy(settings)
    table = hooks_table(new)
    events = list(table)
    events += [e for e in wire.HOOK_EVENTS if e not in table]
    out: dict[str, Any] = {}
    for event in events:
        kept, first = strip_ours(table.get(event, []), event)
        if event in wire.HOOK_EVENTS:
            where = len(kept) if first is None else first
            kept.insert(where, desired_group(event, bins.hook))
        elif not kept and first is not None:
            continue  # an event aipager no longer wires, that held only aipager
        out[event] = kept
    new["hooks"] = out
    new["statusLine"] = {"type": "command", "command": bins.statusline}
    return new


def unhooked(doc: dict[str, Any], where: str = "settings.json") -> dict[str, Any]:
    """``doc`` (Claude Code's settings, or Codex's hooks.json: the same form) without any
    aipager hook, a new object; an event (or ``hooks``) that held only ours goes."""
    new = copy.deepcopy(doc)
    table = hooks_table(new, where)
    out: dict[str, Any] = {}
    for event, groups in table.items():
        kept, first = strip_ours(groups, event, where)
        if kept or first is None:
            out[event] = kept
    if table and not out:
        del new["hooks"]  # aipager's groups were all it held
    elif "hooks" in new:
        new["hooks"] = out
    return new


def plan_uninstall(
    settings: dict[str, Any], saved_statusline: Any = None
) -> dict[str, Any]:
    """``settings`` without any aipager entry (a new object; input untouched).

    An event list that only held aipager's group is removed; ``hooks`` itself is
    removed when aipager's groups were all it held.  The user's earlier
    statusLine (``saved_statusline``) is put back if aipager's is in place.
    """
    new = unhooked(settings)
    if _statusline_is_ours(new.get("statusLine")):
        if saved_statusline is not None:
            new["statusLine"] = saved_statusline
        else:
            del new["statusLine"]
    return new


def problems(settings: dict[str, Any], bins: Binaries | None) -> list[Problem]:
    """What is missing or wrong in ``settings`` (empty when fully wired).

    With ``bins`` None only the shape is checked (any aipager-hook path counts).
    """
    fix = "run `aipager config rewire` (or `aipager setup`)"
    found: list[Problem] = []
    try:
        table = hooks_table(settings)
    except SettingsError as exc:
        return [Problem(str(exc), "edit ~/.claude/settings.json by hand")]
    for event in wire.HOOK_EVENTS:
        groups = table.get(event)
        ours = [
            (g, h)
            for g in (groups if isinstance(groups, list) else [])
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"]
            if is_ours(h)
        ]
        if not ours:
            found.append(Problem(f"{event}: aipager-hook is not wired", fix))
            continue
        group, hook = ours[0]
        want = desired_group(event, bins.hook if bins else hook.get("command"))
        if len(ours) > 1:
            found.append(Problem(f"{event}: aipager-hook is wired {len(ours)} times", fix))
        if bins and hook.get("command") != bins.hook:
            what = f"{event}: points at {hook.get('command')}, not {bins.hook}"
            found.append(Problem(what, fix))
        if group.get("matcher") != want.get("matcher"):
            found.append(Problem(f"{event}: matcher should be {want.get('matcher')!r}", fix))
        if hook.get("timeout") != want["hooks"][0].get("timeout"):
            what = f"{event}: timeout should be {want['hooks'][0].get('timeout')}"
            found.append(Problem(what, fix))
    status = settings.get("statusLine")
    if not _statusline_is_ours(status):
        found.append(Problem("statusLine is not aipager-statusline", fix))
    elif bins and status.get("command") != bins.statusline:
        what = f"statusLine points at {status.get('command')}, not {bins.statusline}"
        found.append(Problem(what, fix))
    return found


# ---------------------------------------------------------------- the file


def _saved_statusline_path(env: Mapping[str, str]) -> str:
    return os.path.join(paths.data_dir(env), _SAVED_STATUSLINE)


def install(env: Mapping[str, str], bins: Binaries | None = None) -> Result:
    """Wire aipager into Claude Code's settings (idempotent).

    Args:
        env: the environment (``HOME`` decides where settings.json is).
        bins: the programs to wire; found with ``find_binaries`` when None.

    Returns:
        What happened; ``changed`` is False (and nothing was written) when the
        file already held exactly aipager's entries.

    Raises:
        SettingsError: the file is not valid JSON (left untouched), cannot be
            written, or a program is not installed.
    """
    bins = bins or find_binaries(env)
    path = paths.claude_settings(env)
    current = read_settings(path)
    wanted = plan_install(current, bins)
    result = Result(path=path, changed=wanted != current)
    if not result.changed:
        return result
    previous = current.get("statusLine")
    if previous is not None and not _statusline_is_ours(previous):
        _remember_statusline(env, previous)
        shown = previous.get("command") if isinstance(previous, dict) else previous
        result.notes.append(f"your statusLine ({shown}) was replaced by aipager-statusline; "
                            "`aipager uninstall` puts it back")
    result.backup = write_json(path, wanted)
    return result


def uninstall(env: Mapping[str, str]) -> Result:
    """Remove exactly aipager's entries from Claude Code's settings (idempotent)."""
    path = paths.claude_settings(env)
    if not os.path.exists(path):
        return Result(path=path, changed=False)
    current = read_settings(path)
    saved_path = _saved_statusline_path(env)
    saved = _load_saved_statusline(saved_path)
    wanted = plan_uninstall(current, saved)
    result = Result(path=path, changed=wanted != current)
    if result.changed:
        result.backup = write_json(path, wanted)
    if saved is not None and wanted.get("statusLine") == saved:
        try:
            os.unlink(saved_path)
        except OSError:
            pass
    return result


def check(env: Mapping[str, str], bins: Binaries | None = None) -> list[Problem]:
    """Problems with the current wiring (empty list = fully wired).

    Used by ``aipager doctor`` and by the daemon at start.  Never raises for a
    broken settings file or a missing program: those are problems too.
    """
    path = paths.claude_settings(env)
    try:
        settings = read_settings(path)
    except SettingsError as exc:
        return [Problem(str(exc), f"fix {path} by hand, then run `aipager setup`")]
    if bins is None:
        try:
            bins = find_binaries(env)
        except SettingsError as exc:
            return [Problem(str(exc), "reinstall aipager")] + problems(settings, None)
    return problems(settings, bins)


def _remember_statusline(env: Mapping[str, str], value: Any) -> None:
    path = _saved_statusline_path(env)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(value, fh)
    except OSError as exc:
        msg = f"cannot save your statusLine to {path}: {exc.strerror}"
        raise SettingsError(msg) from exc


def _load_saved_statusline(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None
