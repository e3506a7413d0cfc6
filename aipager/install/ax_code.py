"""Wiring AX Code: aipager's entries in ``<project>/.ax-code/hooks.json``.

AX Code runs Claude Code hooks when an entry opts into the Claude Code wire
protocol.  Its hook file is a flat list, one entry per event::

    {"hooks": [{"event": "PreToolUse", "command": "/venv/bin/aipager-hook",
                "protocol": "claude-code"}, ...],
     "packs": [...]}

aipager owns one entry per ``AX_EVENTS`` event and nothing else in the file.
Entries are recognised with ``claude_code.is_ours`` (program name of ``command``),
so a moved install is repointed, never duplicated; the user's entries, their
order, ``packs`` and any other key are left alone.  The pure plans are
``plan_install`` / ``plan_uninstall`` / ``problems``; the file functions add
the backup, the atomic write and the invalid-JSON refusal of ``claude_code``.

AX Code ignores a project's hook file until it is started with
``AX_CODE_TRUST_PROJECT_CONFIG=1`` (``TRUST_REMINDER``).
"""

from __future__ import annotations

import copy
import os
import shlex
from typing import Any, Mapping

from aipager.proto import paths
from aipager.install import claude_code
from aipager.proto.errors import SettingsError

#: every event AX Code fires.  aipager forwards all of them: the ten it shares
#: with Claude Code feed the same daemon handlers, and ``Interrupt`` (AX only)
#: tells the daemon a turn was cut short.
AX_EVENTS = (
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Interrupt",
)

PROTOCOL = "claude-code"

#: AX Code refuses the whole file (every project hook silently off) past this
#: many entries, so an install that would cross it is refused instead.
MAX_ENTRIES = 100

TRUST_REMINDER = (
    "AX Code runs project hooks only when started with AX_CODE_TRUST_PROJECT_CONFIG=1 "
    "(e.g. `AX_CODE_TRUST_PROJECT_CONFIG=1 ax-code`); review .ax-code/hooks.json first."
)


def desired_entry(event: str, hook_path: str) -> dict[str, Any]:
    """The entry aipager wants for ``event``.

    There is no ``matcher``: in AX Code the matcher is an optional tool-id
    filter, and an entry without one runs for every tool, exactly like ``"*"``.
    Leaving it out also keeps the entries of tool-less events (SessionStart,
    Interrupt, ...) free of a filter that means nothing there.  AX Code runs
    ``command`` through a shell, hence the quoting.
    """
    return {"event": event, "command": shlex.quote(hook_path), "protocol": PROTOCOL}


def _entries(doc: dict[str, Any], path: str) -> list[Any]:
    entries = doc.get("hooks", [])
    if not isinstance(entries, list):
        msg = f'"hooks" in {path} is not a list; fix it by hand, aipager left it alone'
        raise SettingsError(msg)
    return entries


def _split(entries: list[Any]) -> tuple[list[Any], int | None]:
    """The user's entries, and where aipager's first entry was among them."""
    kept: list[Any] = []
    first: int | None = None
    for entry in entries:
        if claude_code.is_ours(entry):
            if first is None:
                first = len(kept)
            continue
        kept.append(entry)
    return kept, first


def plan_install(doc: dict[str, Any], hook_path: str, path: str = "hooks.json") -> dict[str, Any]:
    """``doc`` with aipager's entries in place (a new object; input untouched).

    Every old aipager entry goes and the full set is put where the first one
    was (at the end when there was none), so a second run returns an equal
    document.

    Raises:
        SettingsError: ``hooks`` is not a list, or the result would hold more
            entries than AX Code accepts.
    """
    new = copy.deepcopy(doc)
    kept, first = _split(_entries(new, path))
    where = len(kept) if first is None else first
    ours = [desired_entry(event, hook_path) for event in AX_EVENTS]
    wanted = kept[:where] + ours + kept[where:]
    if len(wanted) > MAX_ENTRIES:
        msg = (f"{path} would hold {len(wanted)} hooks; AX Code ignores the whole file "
               f"past {MAX_ENTRIES}. Remove some of yours, then run the command again.")
        raise SettingsError(msg)
    new["hooks"] = wanted
    return new


def plan_uninstall(doc: dict[str, Any], path: str = "hooks.json") -> dict[str, Any]:
    """``doc`` without aipager's entries (a new object; input untouched).

    ``hooks`` itself goes when aipager's entries were all it held.
    """
    new = copy.deepcopy(doc)
    entries = _entries(new, path)
    kept, first = _split(entries)
    if first is None:
        return new
    if kept:
        new["hooks"] = kept
    else:
        del new["hooks"]
    return new


def problems(doc: dict[str, Any], hook_path: str | None, path: str = "hooks.json") -> list[claude_code.Problem]:
    """What is missing or wrong in ``doc`` (empty when fully wired).

    With ``hook_path`` None any aipager-hook path counts.
    """
    fix = "run `aipager ax-code install`"
    try:
        entries = _entries(doc, path)
    except SettingsError as exc:
        return [claude_code.Problem(str(exc), f"edit {path} by hand")]
    found: list[claude_code.Problem] = []
    for event in AX_EVENTS:
        ours = [e for e in entries if claude_code.is_ours(e) and e.get("event") == event]
        if not ours:
            found.append(claude_code.Problem(f"{event}: aipager-hook is not wired", fix))
            continue
        if len(ours) > 1:
            found.append(claude_code.Problem(f"{event}: aipager-hook is wired {len(ours)} times", fix))
        entry = ours[0]
        want = desired_entry(event, hook_path) if hook_path else entry
        if entry.get("command") != want["command"]:
            what = f"{event}: runs {entry.get('command')}, not {want['command']}"
            found.append(claude_code.Problem(what, fix))
        if entry.get("protocol") != PROTOCOL:
            what = f'{event}: "protocol" should be "{PROTOCOL}" (AX Code ignores its answers)'
            found.append(claude_code.Problem(what, fix))
        if entry.get("matcher") not in (None, "*"):
            found.append(claude_code.Problem(f"{event}: matcher limits it to {entry['matcher']!r}", fix))
    stray = [e for e in entries if claude_code.is_ours(e) and e.get("event") not in AX_EVENTS]
    if stray:
        found.append(claude_code.Problem(f"{len(stray)} aipager-hook entries name no AX Code event", fix))
    if len(entries) > MAX_ENTRIES:
        what = f"{path} holds {len(entries)} hooks; AX Code ignores the file past {MAX_ENTRIES}"
        found.append(claude_code.Problem(what, f"edit {path} by hand"))
    return found


# ---------------------------------------------------------------- the file


def install(project: str, env: Mapping[str, str], hook_path: str | None = None) -> claude_code.Result:
    """Wire aipager into the AX Code hooks of ``project`` (idempotent).

    Args:
        project: the project folder (``.ax-code/`` is created in it if needed).
        env: the environment ``claude_code.find_binaries`` searches.
        hook_path: the program to wire; the installed ``aipager-hook`` when None.

    Returns:
        What happened; ``changed`` is False (nothing written) when the file
        already held exactly aipager's entries.

    Raises:
        SettingsError: the file is not valid JSON (left untouched), cannot be
            written, would be too long for AX Code, or aipager-hook is missing.
    """
    hook_path = hook_path or claude_code.find_binaries(env).hook
    path = paths.ax_code_hooks(project)
    current = claude_code.read_settings(path)
    wanted = plan_install(current, hook_path, path)
    result = claude_code.Result(path=path, changed=wanted != current)
    if result.changed:
        result.backup = claude_code.write_json(path, wanted)
    result.notes.append(TRUST_REMINDER)
    return result


def uninstall(project: str) -> claude_code.Result:
    """Remove exactly aipager's entries from the project's AX Code hooks (idempotent)."""
    path = paths.ax_code_hooks(project)
    if not os.path.exists(path):
        return claude_code.Result(path=path, changed=False)
    current = claude_code.read_settings(path)
    wanted = plan_uninstall(current, path)
    result = claude_code.Result(path=path, changed=wanted != current)
    if result.changed:
        result.backup = claude_code.write_json(path, wanted)
    return result


def check(project: str, env: Mapping[str, str], hook_path: str | None = None) -> list[claude_code.Problem]:
    """Problems with the project's AX Code wiring (empty list = fully wired).

    Never raises for a broken file or a missing program: those are problems too.
    """
    path = paths.ax_code_hooks(project)
    try:
        doc = claude_code.read_settings(path)
    except SettingsError as exc:
        return [claude_code.Problem(str(exc), f"fix {path} by hand, then run `aipager ax-code install`")]
    found: list[claude_code.Problem] = []
    if hook_path is None:
        try:
            hook_path = claude_code.find_binaries(env).hook
        except SettingsError as exc:
            found.append(claude_code.Problem(str(exc), "reinstall aipager"))
    return found + problems(doc, hook_path, path)
