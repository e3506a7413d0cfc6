"""Wiring OpenAI's Codex CLI: aipager's hooks in ``$CODEX_HOME/hooks.json``, trusted in
``$CODEX_HOME/config.toml``.

Codex (measured on 0.169.0) reads Claude Code's hook form from ``hooks.json`` next to its
``config.toml``: ``{"hooks": {"<Event>": [{"matcher": ..., "hooks": [{"type": "command",
"command": ..., "timeout": N}]}]}}``.  aipager owns one matcher group per event of
``CODEX_EVENTS`` (``"matcher": "*"`` on the tool events, a timeout on PermissionRequest)
and nothing else in the file; a group is recognised as aipager's by the program name of its
command (``claude_code.is_ours``), so a moved install is repointed, never duplicated.

Codex runs a hook only when it is **trusted**, and says nothing when it is not.  Trust is
a table of ``config.toml`` per handler::

    [hooks.state."<hooks.json path>:<event label>:<group index>:<handler index>"]
    trusted_hash = "sha256:<hex>"

The event label is snake_case (``pre_tool_use``); the hash is ``trust_hash``: sha-256 of
the compact, key-sorted JSON of the handler's normalised identity (Codex's
``command_hook_hash`` in codex-rs/hooks/src/engine/discovery.rs, through
``version_for_toml`` in codex-rs/config/src/fingerprint.rs).  The hooks.json path is
``$CODEX_HOME`` made canonical (Codex canonicalises the variable) or ``~/.codex`` as is.

config.toml is the user's: it is edited as text, one ``[hooks.state."…"]`` table at a
time (an existing table of ours gets its ``trusted_hash`` line replaced, a missing one is
appended at the end), every other line and comment kept; the result is parsed back and
compared with the plan before anything is written.  Model and provider settings are never
touched.  Trust entries are recognised as aipager's by their key (under our hooks.json)
*and* their hash (one of aipager's groups), so ``uninstall`` never drops the user's.

Pure plans: ``plan_hooks`` / ``plan_unhooks`` (hooks.json), ``plan_trust`` (config.toml
text), ``problems``; the file functions add backups and atomic writes, and write nothing
when nothing changes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import time
import tomllib
from dataclasses import dataclass
from typing import Any, Mapping

from aipager import claudefiles
from aipager.install import claude_code
from aipager.install.claude_code import Problem, Result
from aipager.proto import fsio
from aipager.proto.errors import SettingsError
from aipager.proto.fsnames import unused_name

#: the events aipager wires into Codex (PreModelRequest, fired before every model request,
#: is left out: the daemon has no use for it)
CODEX_EVENTS = (
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Interrupt",
)

#: events whose group gets ``"matcher": "*"``
TOOL_EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse")

#: seconds Codex waits for the hook where its default (600) is wrong for us: the hook
#: waits for the chat's answer to a PermissionRequest (as for Claude Code)
TIMEOUTS = {"PermissionRequest": 30}

#: Codex's timeout for a handler that names none
DEFAULT_TIMEOUT = 600

#: events whose hooks Codex gives at most this many seconds, whatever they ask (they run
#: as it exits or interrupts), and hashes with that timeout: read off the trust the real
#: 0.169.0 TUI wrote when told "Trust all" (aipager's own hashes for them were "changed")
_CAPPED = {"SessionEnd": 1, "Interrupt": 1}

#: events whose matcher Codex ignores (drops before hashing)
_NO_MATCHER = ("UserPromptSubmit", "Stop", "Interrupt")

HOOKS_FILE = "hooks.json"
CONFIG_FILE = "config.toml"

_FIX = "run `aipager codex install`"


def event_label(event: str) -> str:
    """Codex's snake_case label of ``event`` in trust keys (``PreToolUse`` -> ``pre_tool_use``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def codex_home(env: Mapping[str, str]) -> str:
    """The folder Codex reads: ``$CODEX_HOME`` made canonical, else ``$HOME/.codex``."""
    explicit = env.get("CODEX_HOME")
    if explicit:
        return os.path.realpath(explicit)
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".codex")


@dataclass(frozen=True)
class Files:
    """The two files of one Codex home."""

    hooks: str
    config: str

    @classmethod
    def of(cls, home: str) -> Files:
        return cls(hooks=os.path.join(home, HOOKS_FILE), config=os.path.join(home, CONFIG_FILE))


# ---------------------------------------------------------------- hashing


def trust_hash(event: str, group: Mapping[str, Any], handler: Mapping[str, Any]) -> str:
    """The ``trusted_hash`` Codex computes for one command ``handler`` of ``group``.

    Codex hashes the handler as it normalised it, alone in its group: ``type``,
    ``command``, ``timeout`` (600 when unset, at least 1), ``async`` (false when unset),
    ``statusMessage`` when set; the group's ``matcher`` when set and the event has one;
    ``event_name`` the snake_case label.  Then: keys sorted, compact JSON, sha-256.
    """
    timeout = handler.get("timeout")
    seconds = max(int(timeout), 1) if isinstance(timeout, int) else DEFAULT_TIMEOUT
    norm: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": min(seconds, _CAPPED.get(event, seconds)),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        norm["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event_label(event), "hooks": [norm]}
    matcher = group.get("matcher")
    if matcher is not None and event not in _NO_MATCHER:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def trust_key(hooks_path: str, event: str, group_index: int, handler_index: int = 0) -> str:
    """The ``hooks.state`` key of one handler."""
    return f"{hooks_path}:{event_label(event)}:{group_index}:{handler_index}"


# ---------------------------------------------------------------- hooks.json plans


def desired_group(event: str, hook_path: str) -> dict[str, Any]:
    """The matcher group aipager wants for ``event`` (Claude Code's form, Codex's events)."""
    return claude_code.desired_group(event, hook_path, TIMEOUTS, TOOL_EVENTS)


def _table(doc: dict[str, Any]) -> dict[str, Any]:
    return claude_code.hooks_table(doc, HOOKS_FILE)


def _strip_ours(groups: Any, event: str) -> tuple[list[Any], int | None]:
    return claude_code.strip_ours(groups, event, HOOKS_FILE)


def plan_hooks(doc: dict[str, Any], hook_path: str) -> dict[str, Any]:
    """``doc`` (hooks.json) with aipager's groups in place (a new object).

    Every aipager hook anywhere is removed first and the desired group put where the first
    old one was (else last), so stale paths and duplicates go and a second run is equal.
    """
    new = copy.deepcopy(doc)
    table = _table(new)
    events = list(table) + [e for e in CODEX_EVENTS if e not in table]
    out: dict[str, Any] = {}
    for event in events:
        kept, first = _strip_ours(table.get(event, []), event)
        if event in CODEX_EVENTS:
            kept.insert(len(kept) if first is None else first, desired_group(event, hook_path))
        elif not kept and first is not None:
            continue  # an event aipager no longer wires that held only aipager
        out[event] = kept
    new["hooks"] = out
    return new


def plan_unhooks(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without any aipager hook; an event (or ``hooks``) that held only ours goes."""
    return claude_code.unhooked(doc, HOOKS_FILE)


def our_handlers(doc: dict[str, Any]) -> list[tuple[str, int, int, dict[str, Any], dict[str, Any]]]:
    """Every aipager handler of ``doc``: (event, group index, handler index, group, handler)."""
    found = []
    table = doc.get("hooks")
    for event, groups in (table.items() if isinstance(table, dict) else []):
        for gi, group in enumerate(groups if isinstance(groups, list) else []):
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hi, handler in enumerate(inner if isinstance(inner, list) else []):
                if claude_code.is_ours(handler):
                    found.append((event, gi, hi, group, handler))
    return found


def wanted_trust(doc: dict[str, Any], hooks_path: str) -> dict[str, str]:
    """``{trust key: hash}`` for every aipager handler of ``doc`` (hooks.json)."""
    return {
        trust_key(hooks_path, event, gi, hi): trust_hash(event, group, handler)
        for event, gi, hi, group, handler in our_handlers(doc)
    }


def our_hashes(docs: list[dict[str, Any]], hook_paths: list[str]) -> set[str]:
    """Every hash an aipager handler had or would have: of the handlers in ``docs`` and of
    the desired groups for ``hook_paths`` (to recognise our trust entries)."""
    hashes: set[str] = set()
    for doc in docs:
        hashes.update(trust_hash(e, g, h) for e, _gi, _hi, g, h in our_handlers(doc))
    for path in hook_paths:
        for event in CODEX_EVENTS:
            group = desired_group(event, path)
            hashes.add(trust_hash(event, group, group["hooks"][0]))
    return hashes


# ---------------------------------------------------------------- config.toml plans

_ANY_HEADER = re.compile(r"^\s*\[")
_HASH_LINE = re.compile(r"^\s*trusted_hash\s*=")


def parse_toml(text: str, path: str = CONFIG_FILE) -> dict[str, Any]:
    """``text`` parsed; raises SettingsError naming ``path`` when it is not TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = f"{path} is not valid TOML ({exc}); aipager did not change it"
        raise SettingsError(msg) from exc


def trust_entries(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``hooks.state`` tables of a parsed config.toml."""
    hooks = config.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    if not isinstance(state, dict):
        return {}
    return {k: v for k, v in state.items() if isinstance(v, dict)}


def _header_key(line: str) -> str | None:
    """The key of a ``[hooks.state."KEY"]`` header line, None for any other line."""
    try:
        doc = tomllib.loads(line)
    except tomllib.TOMLDecodeError:
        return None
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict) or len(doc) != 1 or len(hooks) != 1:
        return None
    state = hooks.get("state")
    if not isinstance(state, dict) or len(state) != 1:
        return None
    (key, value), = state.items()
    return key if value == {} else None


def _toml_string(value: str) -> str:
    # JSON's escapes are all TOML basic-string escapes
    return json.dumps(value, ensure_ascii=False)


def _sections(lines: list[str]) -> list[tuple[str | None, int, int]]:
    """(header key, start, end) of each table (key None for other tables and the top)."""
    starts = [i for i, line in enumerate(lines) if _ANY_HEADER.match(line)]
    out: list[tuple[str | None, int, int]] = [(None, 0, starts[0] if starts else len(lines))]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        out.append((_header_key(lines[start]), start, end))
    return out


def plan_trust(text: str, want: Mapping[str, str], drop: Mapping[str, str],
               path: str = CONFIG_FILE) -> str:
    """config.toml ``text`` with ``trusted_hash`` set for every key of ``want`` and the
    entries of ``drop`` (key -> the hash it must hold to be dropped) removed.

    Only ``[hooks.state."KEY"]`` tables are touched: a ``trusted_hash`` line replaced or
    inserted, a table whose only key was ours removed, a missing table appended.

    Raises:
        SettingsError: ``text`` is not TOML, or holds an entry aipager must change in a
            form it does not edit (an inline table, dotted keys); then nothing changes.
    """
    config = parse_toml(text, path)
    entries = trust_entries(config)
    drop = {k: h for k, h in drop.items()
            if k not in want and entries.get(k, {}).get("trusted_hash") == h}
    todo = {k: h for k, h in want.items() if entries.get(k, {}).get("trusted_hash") != h}
    if not todo and not drop:
        return text
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    sections = _sections(lines)
    # work from the end so earlier indexes stay valid
    for key, start, end in sorted(sections, key=lambda s: -s[1]):
        if key is None or (key not in todo and key not in drop):
            continue
        end = min(end, len(lines))  # a later table's removal may have taken blank lines
        body = list(range(start + 1, end))
        hash_lines = [i for i in body if _HASH_LINE.match(lines[i])]
        if key in todo:
            new_line = f"trusted_hash = {_toml_string(todo.pop(key))}\n"
            if hash_lines:
                lines[hash_lines[0]] = new_line
            else:
                lines.insert(start + 1, new_line)
            continue
        del drop[key]
        others = [i for i in body if lines[i].strip() and not lines[i].lstrip().startswith("#")
                  and i not in hash_lines]
        if others:
            for i in reversed(hash_lines):
                del lines[i]
        else:
            del lines[start:end]  # with its trailing blank lines: the one before stays
            if start == len(lines):
                while lines and not lines[-1].strip():
                    lines.pop()
    if todo:
        while lines and not lines[-1].strip():
            lines.pop()
        for key, value in todo.items():
            if lines:
                lines.append("\n")
            lines.append(f"[hooks.state.{_toml_string(key)}]\n")
            lines.append(f"trusted_hash = {_toml_string(value)}\n")
    new_text = "".join(lines)
    _verify(new_text, entries, want, drop_keys=set(drop), path=path)
    return new_text


def _verify(text: str, before: dict[str, dict[str, Any]], want: Mapping[str, str],
            drop_keys: set[str], path: str) -> None:
    try:
        after = trust_entries(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        msg = (f"{path}: aipager could not add its hook trust without breaking the file "
               f"({exc}); it left the file alone. Trust aipager's hooks in Codex's /hooks "
               f"instead")
        raise SettingsError(msg) from exc
    bad = [k for k, h in want.items() if after.get(k, {}).get("trusted_hash") != h]
    bad += [k for k in drop_keys if "trusted_hash" in after.get(k, {})]
    if bad:
        msg = (f"{path} holds hook trust for {bad[0]} in a form aipager does not edit "
               f"(an inline table or dotted keys); it left the file alone. Change it into a "
               f'[hooks.state."…"] table, or trust aipager\'s hooks in Codex\'s /hooks')
        raise SettingsError(msg)


def stale_trust(config: dict[str, Any], hooks_path: str, keep: Mapping[str, str],
                hashes: set[str]) -> dict[str, str]:
    """aipager's trust entries not in ``keep``: under ``hooks_path``, holding one of our
    ``hashes`` (key -> hash)."""
    prefix = f"{hooks_path}:"
    return {
        k: v["trusted_hash"] for k, v in trust_entries(config).items()
        if k.startswith(prefix) and k not in keep and v.get("trusted_hash") in hashes
    }


# ---------------------------------------------------------------- check


def problems(doc: dict[str, Any], config: dict[str, Any], hooks_path: str,
             hook_path: str | None) -> list[Problem]:
    """What is missing, stale or untrusted (empty when fully wired).

    With ``hook_path`` None any aipager-hook path counts.
    """
    found: list[Problem] = []
    try:
        table = _table(doc)
    except SettingsError as exc:
        return [Problem(str(exc), f"edit {hooks_path} by hand")]
    entries = trust_entries(config)
    for event in CODEX_EVENTS:
        groups = table.get(event)
        ours = [
            (gi, hi, g, h)
            for gi, g in enumerate(groups if isinstance(groups, list) else [])
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for hi, h in enumerate(g["hooks"])
            if claude_code.is_ours(h)
        ]
        if not ours:
            found.append(Problem(f"{event}: aipager-hook is not wired", _FIX))
            continue
        gi, hi, group, handler = ours[0]
        want = desired_group(event, hook_path or handler.get("command"))
        if len(ours) > 1:
            found.append(Problem(f"{event}: aipager-hook is wired {len(ours)} times", _FIX))
        if hook_path and handler.get("command") != hook_path:
            found.append(Problem(f"{event}: points at {handler.get('command')}, not {hook_path}",
                                 _FIX))
        if group.get("matcher") != want.get("matcher"):
            found.append(Problem(f"{event}: matcher should be {want.get('matcher')!r}", _FIX))
        if handler.get("timeout") != want["hooks"][0].get("timeout"):
            found.append(Problem(f"{event}: timeout should be {want['hooks'][0].get('timeout')}",
                                 _FIX))
        state = entries.get(trust_key(hooks_path, event, gi, hi), {})
        if state.get("enabled") is False:
            found.append(Problem(f"{event}: aipager-hook is disabled in Codex",
                                 "enable it in Codex's /hooks"))
        trusted = state.get("trusted_hash")
        if trusted is None:
            found.append(Problem(f"{event}: aipager-hook is not trusted (Codex skips it)", _FIX))
        elif trusted != trust_hash(event, group, handler):
            found.append(Problem(f"{event}: aipager-hook changed since it was trusted "
                                 "(Codex skips it)", _FIX))
    return found


# ---------------------------------------------------------------- the files


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        raise SettingsError(msg) from exc


def _write_text(path: str, text: str) -> str | None:
    """Back ``path`` up (if present) and replace it atomically; returns the backup.

    A symbolic link stays one: the file it points to is replaced.
    """
    target = os.path.realpath(path) if os.path.islink(path) else path
    backup = None
    mode = 0o600
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.exists(path):
            mode = os.stat(path).st_mode & 0o777
            backup = unused_name(f"{path}.aipager-backup-{time.strftime('%Y%m%dT%H%M%S')}")
            with open(path, "rb") as src, open(backup, "wb") as dst:
                dst.write(src.read())
        fsio.write_atomic(target, text.encode("utf-8"), mode, sync=True)
    except OSError as exc:
        msg = f"cannot write {path}: {exc.strerror}"
        raise SettingsError(msg) from exc
    return backup


def _results(files: Files, hooks_changed: bool, hooks_backup: str | None,
             config_changed: bool, config_backup: str | None) -> Result:
    result = Result(path=files.hooks, changed=hooks_changed or config_changed,
                    backup=hooks_backup)
    if config_changed:
        result.notes.append(f"Trust: {files.config}")
    if config_backup:
        result.notes.append(f"Backup: {config_backup}")
    return result


def install(env: Mapping[str, str], hook_path: str | None = None) -> Result:
    """Wire aipager into Codex's hooks.json and trust its hooks in config.toml (idempotent).

    Raises:
        SettingsError: a file is not valid JSON / TOML (left untouched), holds trust in a
            form aipager does not edit, cannot be written, or aipager-hook is not installed.
    """
    hook_path = hook_path or claude_code.find_binaries(env).hook
    files = Files.of(codex_home(env))
    current = claudefiles.read_settings(files.hooks)
    wanted = plan_hooks(current, hook_path)
    text = _read_text(files.config)
    config = parse_toml(text, files.config)
    want = wanted_trust(wanted, files.hooks)
    stale = stale_trust(config, files.hooks, want, our_hashes([current, wanted], [hook_path]))
    new_text = plan_trust(text, want, stale, files.config)
    hooks_backup = None
    if wanted != current:
        hooks_backup = claudefiles.write_json(files.hooks, wanted)
    config_backup = _write_text(files.config, new_text) if new_text != text else None
    return _results(files, wanted != current, hooks_backup, new_text != text, config_backup)


def uninstall(env: Mapping[str, str]) -> Result:
    """Remove exactly aipager's hooks and their trust entries (idempotent)."""
    files = Files.of(codex_home(env))
    current = claudefiles.read_settings(files.hooks)
    wanted = plan_unhooks(current)
    text = _read_text(files.config)
    config = parse_toml(text, files.config)
    paths = [h.get("command") for *_x, h in our_handlers(current)]
    hashes = our_hashes([current], [p for p in paths if isinstance(p, str)])
    stale = stale_trust(config, files.hooks, {}, hashes)
    new_text = plan_trust(text, {}, stale, files.config)
    hooks_backup = None
    hooks_changed = wanted != current and os.path.exists(files.hooks)
    if hooks_changed:
        hooks_backup = claudefiles.write_json(files.hooks, wanted)
    config_backup = _write_text(files.config, new_text) if new_text != text else None
    return _results(files, hooks_changed, hooks_backup, new_text != text, config_backup)


def check(env: Mapping[str, str], hook_path: str | None = None) -> list[Problem]:
    """Problems with the wiring (empty = wired and trusted).  Never raises."""
    files = Files.of(codex_home(env))
    try:
        doc = claudefiles.read_settings(files.hooks)
    except SettingsError as exc:
        return [Problem(str(exc), f"fix {files.hooks} by hand, then {_FIX}")]
    try:
        config = parse_toml(_read_text(files.config), files.config)
    except SettingsError as exc:
        return [Problem(str(exc), f"fix {files.config} by hand, then {_FIX}")]
    found: list[Problem] = []
    if hook_path is None:
        try:
            hook_path = claude_code.find_binaries(env).hook
        except SettingsError as exc:
            found.append(Problem(str(exc), "reinstall aipager"))
    return found + problems(doc, config, files.hooks, hook_path)
