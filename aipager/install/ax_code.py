"""Wiring AX Code: aipager's entries in ``<project>/.ax-code/hooks.json``.

AX Code's hook file is a flat list, one entry per event, in one of two forms:

- **legacy** (every 7.x; the only one 7.7.8, the newest version with public
  source, has): ``{"event", "command"}``, plus ``"blockOnFailure": true`` on
  the two events that can block (PreToolUse, UserPromptSubmit): any non-zero
  exit then blocks, the model reading the hook's stderr.  7.7.8 drops unknown
  keys but refuses the *whole file* for an event it does not know, so this
  form leaves out ``PostToolUseFailure`` (``LEGACY_EVENTS``).
- **protocol** (7.24.4, spec seeds/004): ``{"event", "command", "protocol":
  "claude-code"}``, answers read with Claude Code's semantics.

aipager-hook answers both the same way (a refusal is exit 2 with the reason on
stderr; hookpy/axcode.py), so the forms differ only in what AX Code needs to
hear it.  ``install`` asks the installed ``ax-code --version`` which one to
write (``form_for``); without an AX Code to ask it writes the legacy form,
which every 7.x reads.

aipager owns one entry per event and nothing else in the file.  Entries are
recognised with ``claude_code.is_ours`` (program name of ``command``), so a
moved install is repointed, never duplicated; the user's entries, their order,
``packs`` and any other key are left alone.  The pure plans are
``plan_install`` / ``plan_uninstall`` / ``problems``; the file functions add
the backup, the atomic write and the invalid-JSON refusal of ``claude_code``.

AX Code ignores a project's hook file until it is started with
``AX_CODE_TRUST_PROJECT_CONFIG=1`` (``TRUST_REMINDER``).
"""

from __future__ import annotations

import copy
import os
import re
import shlex
import shutil
import subprocess
from typing import Any, Mapping

from aipager.proto import paths
from aipager import claudefiles
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

LEGACY = "legacy"
PROTOCOL_FORM = "protocol"
FORMS = (LEGACY, PROTOCOL_FORM)

#: the events the legacy schema (7.7.8 hooks/lifecycle.ts) knows
LEGACY_EVENTS = tuple(e for e in AX_EVENTS if e != "PostToolUseFailure")

#: the events whose legacy entry blocks on a non-zero exit
BLOCKING = ("PreToolUse", "UserPromptSubmit")

PROTOCOL = "claude-code"

#: the first version known to read ``"protocol"`` (seeds/004 documents 7.24.4;
#: 7.7.8 has no trace of it, and nothing in between is public)
PROTOCOL_SINCE = (7, 24, 4)

#: ``ax-code --version`` gets this long (AX Code starts in about a second)
VERSION_TIMEOUT = 30.0

#: AX Code refuses the whole file (every project hook silently off) past this
#: many entries, so an install that would cross it is refused instead.
MAX_ENTRIES = 100

TRUST_REMINDER = (
    "AX Code runs project hooks only when started with AX_CODE_TRUST_PROJECT_CONFIG=1 "
    "(e.g. `AX_CODE_TRUST_PROJECT_CONFIG=1 ax-code`); review .ax-code/hooks.json first."
)

_VERSION = re.compile(r"(?<![\d.])v?(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``X.Y.Z`` (a leading ``v`` allowed) in ``ax-code --version``'s output."""
    found = _VERSION.search(text)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def form_for(version: tuple[int, int, int] | None) -> str:
    """The form a version reads: protocol from ``PROTOCOL_SINCE``, else (or unknown) legacy."""
    return PROTOCOL_FORM if version is not None and version >= PROTOCOL_SINCE else LEGACY


def detect_version(env: Mapping[str, str], program: str | None = None) -> tuple[int, int, int] | None:
    """The version ``program`` (default: ``ax-code`` on ``env``'s PATH) reports, or None
    when there is none, it fails, or it prints no version."""
    found = program or shutil.which("ax-code", path=env.get("PATH", os.defpath))
    if not found:
        return None
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, errors="replace",
                              timeout=VERSION_TIMEOUT, env=dict(env), stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_version(done.stdout) if done.returncode == 0 else None


def events_for(form: str) -> tuple[str, ...]:
    return LEGACY_EVENTS if form == LEGACY else AX_EVENTS


def desired_entry(event: str, hook_path: str, form: str = PROTOCOL_FORM) -> dict[str, Any]:
    """The entry aipager wants for ``event`` in ``form``.

    There is no ``matcher``: in AX Code the matcher is an optional tool-id
    filter, and an entry without one runs for every tool, exactly like ``"*"``.
    Leaving it out also keeps the entries of tool-less events (SessionStart,
    Interrupt, ...) free of a filter that means nothing there.  AX Code runs
    ``command`` through a shell, hence the quoting.
    """
    entry: dict[str, Any] = {"event": event, "command": shlex.quote(hook_path)}
    if form == PROTOCOL_FORM:
        entry["protocol"] = PROTOCOL
    elif event in BLOCKING:
        entry["blockOnFailure"] = True
    return entry


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


def plan_install(doc: dict[str, Any], hook_path: str, path: str = "hooks.json",
                 form: str = PROTOCOL_FORM) -> dict[str, Any]:
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
    ours = [desired_entry(event, hook_path, form) for event in events_for(form)]
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


def problems(doc: dict[str, Any], hook_path: str | None, path: str = "hooks.json",
             form: str = PROTOCOL_FORM) -> list[claude_code.Problem]:
    """What is missing or wrong in ``doc`` for ``form`` (empty when fully wired).

    With ``hook_path`` None any aipager-hook path counts.
    """
    fix = "run `aipager ax-code install`"
    try:
        entries = _entries(doc, path)
    except SettingsError as exc:
        return [claude_code.Problem(str(exc), f"edit {path} by hand")]
    found: list[claude_code.Problem] = []
    wanted = events_for(form)
    for event in wanted:
        ours = [e for e in entries if claude_code.is_ours(e) and e.get("event") == event]
        if not ours:
            found.append(claude_code.Problem(f"{event}: aipager-hook is not wired", fix))
            continue
        if len(ours) > 1:
            found.append(claude_code.Problem(f"{event}: aipager-hook is wired {len(ours)} times", fix))
        entry = ours[0]
        want = desired_entry(event, hook_path or "", form)
        if hook_path and entry.get("command") != want["command"]:
            what = f"{event}: runs {entry.get('command')}, not {want['command']}"
            found.append(claude_code.Problem(what, fix))
        if form == PROTOCOL_FORM and entry.get("protocol") != PROTOCOL:
            what = f'{event}: "protocol" should be "{PROTOCOL}" (AX Code ignores its answers)'
            found.append(claude_code.Problem(what, fix))
        if form == LEGACY and "protocol" in entry:
            what = f'{event}: "protocol" is for AX Code 7.24.4 and later, this one ignores it'
            found.append(claude_code.Problem(what, fix))
        if form == LEGACY and event in BLOCKING and entry.get("blockOnFailure") is not True:
            what = f'{event}: "blockOnFailure" should be true (AX Code ignores its refusals)'
            found.append(claude_code.Problem(what, fix))
        if entry.get("matcher") not in (None, "*"):
            found.append(claude_code.Problem(f"{event}: matcher limits it to {entry['matcher']!r}", fix))
    stray = [e for e in entries if claude_code.is_ours(e) and e.get("event") not in wanted]
    if stray:
        what = f"{len(stray)} aipager-hook entries name no event this AX Code knows"
        if form == LEGACY:
            what += " (an unknown event makes it ignore the whole file)"
        found.append(claude_code.Problem(what, fix))
    if len(entries) > MAX_ENTRIES:
        what = f"{path} holds {len(entries)} hooks; AX Code ignores the file past {MAX_ENTRIES}"
        found.append(claude_code.Problem(what, f"edit {path} by hand"))
    return found


# ---------------------------------------------------------------- the file


#: what a hook file in a form AX Code cannot read turns off (it ignores the whole file)
STOPS_WORKING = ("every aipager hook in this project: the safety floor and the policy "
                 "(PreToolUse), the chat's prompts and answers")


def resolve_form(env: Mapping[str, str], form: str | None = None,
                 program: str | None = None, force: bool = False) -> tuple[str, str]:
    """``(form, note)``: ``form`` when given, else the one the installed AX Code reads.

    A form the installed AX Code cannot read is refused: AX Code would ignore the whole
    file, every hook silently off (the safety floor included).  ``force`` writes it all
    the same, and the note says what stops working.

    Raises:
        SettingsError: ``form`` is not one of ``FORMS``, or the installed AX Code does not
            read it (without ``force``).
    """
    if form is not None and form not in FORMS:
        msg = f"unknown AX Code hook form {form!r}: use one of {', '.join(FORMS)}"
        raise SettingsError(msg)
    version = detect_version(env, program)
    if form is not None:
        # every 7.x reads the legacy form; the protocol form only from PROTOCOL_SINCE
        if form == LEGACY or version is None or version >= PROTOCOL_SINCE:
            return form, f"AX Code hook form: {form} (as asked)."
        reads = form_for(version)
        spelled = ".".join(str(n) for n in version)
        if not force:
            msg = (f"AX Code {spelled} does not read the {form} hook form (it reads {reads}): it "
                   f"would ignore .ax-code/hooks.json and with it {STOPS_WORKING}.  Leave out "
                   f"--form (it asks AX Code), or --force to write it anyway.")
            raise SettingsError(msg)
        return form, (f"Warning: AX Code {spelled} does not read the {form} hook form; until it "
                      f"is upgraded, {STOPS_WORKING} stop working.")
    form = form_for(version)
    if version is None:
        return form, ("No AX Code answered `ax-code --version`: wrote the legacy form, which every "
                      "7.x reads (use --form protocol for 7.24.4 or later).")
    spelled = ".".join(str(n) for n in version)
    return form, f"AX Code {spelled}: the {form} hook form."


def _form_in_file(doc: dict[str, Any]) -> str:
    """The form aipager's entries in ``doc`` are in (legacy when none says protocol)."""
    entries = doc.get("hooks")
    if isinstance(entries, list) and any(claude_code.is_ours(e) and "protocol" in e for e in entries):
        return PROTOCOL_FORM
    return LEGACY


def install(project: str, env: Mapping[str, str], hook_path: str | None = None,
            form: str | None = None, program: str | None = None,
            force: bool = False) -> claude_code.Result:
    """Wire aipager into the AX Code hooks of ``project`` (idempotent).

    Args:
        project: the project folder (``.ax-code/`` is created in it if needed).
        env: the environment ``claude_code.find_binaries`` and the AX Code
            lookup search.
        hook_path: the program to wire; the installed ``aipager-hook`` when None.
        form: ``LEGACY`` or ``PROTOCOL_FORM``; None asks AX Code (``resolve_form``).
        program: the AX Code to ask; ``ax-code`` on PATH when None.
        force: write a ``form`` the installed AX Code does not read (``resolve_form``).

    Returns:
        What happened; ``changed`` is False (nothing written) when the file
        already held exactly aipager's entries.  The notes name the form.

    Raises:
        SettingsError: the file is not valid JSON (left untouched), cannot be
            written, would be too long for AX Code, aipager-hook is missing,
            ``form`` is unknown, or the installed AX Code does not read it.
    """
    form, said = resolve_form(env, form, program, force)
    hook_path = hook_path or claude_code.find_binaries(env).hook
    path = paths.ax_code_hooks(project)
    current = claudefiles.read_settings(path)
    wanted = plan_install(current, hook_path, path, form)
    result = claude_code.Result(path=path, changed=wanted != current)
    if result.changed:
        result.backup = claudefiles.write_json(path, wanted)
    result.notes += [said, TRUST_REMINDER]
    return result


def uninstall(project: str) -> claude_code.Result:
    """Remove exactly aipager's entries from the project's AX Code hooks (idempotent)."""
    path = paths.ax_code_hooks(project)
    if not os.path.exists(path):
        return claude_code.Result(path=path, changed=False)
    current = claudefiles.read_settings(path)
    wanted = plan_uninstall(current, path)
    result = claude_code.Result(path=path, changed=wanted != current)
    if result.changed:
        result.backup = claudefiles.write_json(path, wanted)
    return result


def check(project: str, env: Mapping[str, str], hook_path: str | None = None,
          form: str | None = None, program: str | None = None) -> list[claude_code.Problem]:
    """Problems with the project's AX Code wiring (empty list = fully wired).

    The form checked is ``form``, else the installed AX Code's, else (none
    answers) the one the file is in.  Never raises for a broken file or a
    missing program: those are problems too.
    """
    path = paths.ax_code_hooks(project)
    try:
        doc = claudefiles.read_settings(path)
    except SettingsError as exc:
        return [claude_code.Problem(str(exc), f"fix {path} by hand, then run `aipager ax-code install`")]
    found: list[claude_code.Problem] = []
    if form is None:
        version = detect_version(env, program)
        form = form_for(version) if version is not None else _form_in_file(doc)
    if hook_path is None:
        try:
            hook_path = claude_code.find_binaries(env).hook
        except SettingsError as exc:
            found.append(claude_code.Problem(str(exc), "reinstall aipager"))
    return found + problems(doc, hook_path, path, form)
