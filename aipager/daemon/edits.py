"""Edit then allow: a request's tool call with one field corrected by a person.

A person who would allow a call with a small change (another command, another
path) sends the correction; the decision allows the call with ``updatedInput``.
Claude Code runs the edited call without another PreToolUse, so the daemon
decides it first exactly as the hook would have: against the task's own rules
(its snapshot, which carries the floor for anyone but the owner) and against
the editor's role with the floor.  An edit can never carry a call the policy
would have denied.  Anything that cannot be decided is refused (fail closed).
"""

from __future__ import annotations

from typing import Mapping

import orjson

from aipager.proto import paths
from aipager.proto.errors import AipagerError

#: the field a person may correct, per tool
EDIT_FIELDS = {"Bash": "command", "Read": "file_path", "Write": "file_path",
               "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path",
               "WebFetch": "url"}
#: a tool input kept on its request for an edit, at most (JSON bytes; a reply must fit too)
KEPT_MAX = 12_000
#: the longest correction taken
TEXT_MAX = 4000


def keep(tool: str, tool_input: object) -> dict:
    """What a request keeps of its tool input for an edit: all of it when the tool has an
    editable field and it is small, else nothing (no ✏️ offered)."""
    field = EDIT_FIELDS.get(tool)
    if field is None or not isinstance(tool_input, dict) \
            or not isinstance(tool_input.get(field), str):
        return {}
    try:
        size = len(orjson.dumps(tool_input))
    except TypeError:
        return {}
    return dict(tool_input) if size <= KEPT_MAX else {}


#: the fields the policy judges a call by (a path, a command, a URL)
SUBJECT_FIELDS = ("file_path", "notebook_path", "path", "command", "url")


def subject(tool_input: object) -> dict:
    """What the policy reads of a call, kept on its request whatever its size, so that an
    approver's own rights can be checked on it (``approver_refusal``)."""
    if not isinstance(tool_input, dict):
        return {}
    return {k: v for k in SUBJECT_FIELDS if isinstance(v := tool_input.get(k), str)
            and len(v) <= TEXT_MAX}


def approver_refusal(env: Mapping[str, str], role: str, tool: str, call: dict,
                     cwd: str) -> str | None:
    """Why a person of ``role`` may not allow this call, or None: the call as their own
    task would have been judged (their role's rules and, unless the role is exempt, the
    floor).  A ``user`` never lets through what the floor refuses to a ``user``; a policy
    that cannot be read allows nothing (fail closed)."""
    from aipager.policy import _match_py, model

    try:
        policy = model.current_policy(env)
        if policy.role(role or "user").exempt:
            return None
        snap = model.task_snapshot(policy, role or "user", env)
        decision, reason = _match_py.decide(snap, tool, call, cwd, paths.home(env))
    except (AipagerError, OSError, ValueError, _match_py.BadInput) as exc:
        return f"the policy cannot be read ({exc})"
    return reason if decision == _match_py.DENY else None


def edited(tool: str, tool_input: Mapping[str, object], text: str) -> dict:
    """``tool_input`` with its editable field replaced by ``text``.

    Raises:
        ValueError: nothing to edit, or the correction is empty or too long.
    """
    field = EDIT_FIELDS.get(tool)
    if field is None or not tool_input:
        msg = f"a {tool or 'request'} call cannot be edited"
        raise ValueError(msg)
    text = text.strip()
    if not text:
        msg = "the correction is empty"
        raise ValueError(msg)
    if len(text) > TEXT_MAX:
        msg = f"the correction is longer than {TEXT_MAX} characters"
        raise ValueError(msg)
    if "\0" in text or (field != "command" and "\n" in text):
        msg = "the correction holds a character a path or URL cannot"
        raise ValueError(msg)
    return {**tool_input, field: text}


def refusal(env: Mapping[str, str], session: str, role: str, tool: str, tool_input: dict,
            cwd: str) -> str | None:
    """Why the edited call may not run, or None: decided by the daemon's twin of the hook's
    matcher against the task's snapshot and the editor's role (each with the floor)."""
    from aipager.policy import _match_py, model, snapshot

    home = paths.home(env)
    try:
        snaps = [model.task_snapshot(model.current_policy(env), role or "user", env)]
        task = snapshot.read(env, session)
    except (AipagerError, OSError, ValueError) as exc:
        return f"the policy cannot be read ({exc})"
    if task is not None:
        snaps.append(task)
    for snap in snaps:
        try:
            decision, reason = _match_py.decide(snap, tool, tool_input, cwd, home)
        except (_match_py.BadInput, OSError, ValueError) as exc:
            return f"it cannot be checked ({exc})"
        if decision == _match_py.DENY:
            return reason
    return None
