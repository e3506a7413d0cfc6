"""AX Code's hook invocation, spoken as Claude Code's (twin of _fasthook/axcode.pxi).

AX Code runs a hook command with ``$HOOK_EVENT``, ``$HOOK_TOOL`` and
``$HOOK_SESSION_ID`` in its environment, in the project folder, and writes
only the event's own JSON on stdin: a tool's *arguments* for a tool event,
``{"prompt": ...}`` for UserPromptSubmit, ``{"sessionID", "title", "time"}``
for SessionStart, ``{}`` for Stop (seen on the real AX Code 7.7.8; the
7.24.4 documentation, spec seeds/004, describes the same variables).  Both of
its hook forms do that: the legacy one (every 7.x) and the ``"protocol":
"claude-code"`` one (7.24.4).

``ax_adapt`` turns that stdin into the object Claude Code would have sent, so
forwarding, the daemon and the policy see normal events::

    tool event: {"hook_event_name":E,"tool_name":T,"tool_input":<stdin verbatim>,"cwd":C[,"session_id":S]}
    any other:  <stdin object up to its "}">[,]"hook_event_name":E,"cwd":C[,"session_id":S]}

``T`` is Claude Code's name for AX's tool (``TOOL_NAMES``: ``bash`` -> ``Bash``),
so rules, summaries and diffs written for Claude Code's tools apply; other
ids pass unchanged.  Strings are encoded as ``jsonlite.dumps`` does (ASCII-only),
which the compiled twin reproduces.

``ax_refusal`` is the other direction: both forms read exit 2 with the reason
on stderr as a refusal, and the legacy form reads nothing else (its stdout is
never a decision), so every refusal the policy writes as Claude Code JSON is
given to AX Code that way.
"""

from __future__ import annotations

import posix

from aipager.proto import jsonlite
from aipager.hookpy import common

#: the $HOOK_EVENT values whose stdin is a tool's arguments
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})

#: AX Code's tool ids -> Claude Code's tool names (the ones with a Claude Code
#: twin taking the same kind of input; ``apply_patch`` and the rest keep AX's id)
TOOL_NAMES = {
    "bash": "Bash",
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "multiedit": "MultiEdit",
    "glob": "Glob",
    "grep": "Grep",
    "list": "LS",
    "notebook_edit": "NotebookEdit",
    "webfetch": "WebFetch",
    "websearch": "WebSearch",
    "todowrite": "TodoWrite",
    "bash_output": "BashOutput",
    "kill_shell": "KillShell",
}

#: what AX Code shows when a refusal's reason cannot be written as UTF-8 text
REFUSED = "aipager refused this call"


def _string(text: str) -> bytes:
    return jsonlite.dumps(text).encode()


def _where(env) -> list:
    """``,"cwd":C[,"session_id":S]`` as parts (cwd left out when unreadable)."""
    parts: list = []
    try:
        parts += [b',"cwd":', _string(posix.getcwd())]
    except OSError:
        pass
    session_id = env.get("HOOK_SESSION_ID")
    if session_id:
        parts += [b',"session_id":', _string(session_id)]
    return parts


def ax_adapt(raw: bytes, env) -> bytes:
    """Claude Code's shape for AX Code's stdin; else ``raw`` unchanged.

    A tool event is adapted when ``$HOOK_TOOL`` is non-empty and stdin is a
    JSON object with neither ``hook_event_name`` nor ``tool_name``; any other
    event when ``$HOOK_EVENT`` is a valid name and stdin is a JSON object
    without ``hook_event_name`` (a Claude-shaped payload is never touched).
    ``cwd`` is left out when the working directory cannot be read (relative
    paths then fail the policy's check); ``session_id`` only when
    ``$HOOK_SESSION_ID`` is non-empty.  Env values that are not UTF-8 keep
    Python's surrogate escapes (the compiled twin declines on them, so only
    this spelling exists).

    Args:
        raw: stdin as read.
        env: the process environment.

    Returns:
        The bytes every later step reads as stdin.
    """
    event = env.get("HOOK_EVENT")
    tool = env.get("HOOK_TOOL")
    is_tool = event in TOOL_EVENTS
    if (is_tool and not tool) or not common.env_event_valid(event):
        return raw
    body = raw.strip(common.WS)
    try:
        args = jsonlite.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return raw  # not AX's object: the usual checks decide
    if not isinstance(args, dict) or "hook_event_name" in args or (is_tool and "tool_name" in args):
        return raw
    if is_tool:
        parts = [b'{"hook_event_name":', _string(event), b',"tool_name":',
                 _string(TOOL_NAMES.get(tool, tool)), b',"tool_input":', body]
        parts += _where(env)
        parts.append(b"}")
        return b"".join(parts)
    parts = [body[:-1], b"," if args else b"", b'"hook_event_name":', _string(event)]
    parts += _where(env)
    parts.append(b"}")
    return b"".join(parts)


def ax_invoked(env) -> bool:
    """AX Code ran this hook (it names the event in ``$HOOK_EVENT``; Claude Code never does)."""
    return common.env_event_valid(env.get("HOOK_EVENT"))


def ax_refusal(stdout: str, exit_code: int) -> tuple[str, bytes, int]:
    """A step's output as AX Code takes it: ``(stdout, stderr, exit code)``.

    A refusal in Claude Code's words -- ``hookSpecificOutput.permissionDecision``
    ``"deny"`` (PreToolUse) or ``"decision": "block"`` (UserPromptSubmit) --
    becomes exit 2 with its reason and a newline on stderr and nothing on
    stdout; anything else is returned unchanged.  A reason that is not a
    non-empty string, holds a NUL or cannot be UTF-8 (a lone surrogate) is
    given as ``REFUSED`` (the compiled twin decodes strictly).
    """
    if not stdout:
        return stdout, b"", exit_code
    try:
        doc = jsonlite.loads(stdout)
    except (ValueError, RecursionError):
        return stdout, b"", exit_code
    if not isinstance(doc, dict):
        return stdout, b"", exit_code
    nested = doc.get("hookSpecificOutput")
    if isinstance(nested, dict) and nested.get("permissionDecision") == "deny":
        reason = nested.get("permissionDecisionReason")
    elif doc.get("decision") == "block":
        reason = doc.get("reason")
    else:
        return stdout, b"", exit_code
    try:
        text = reason.encode("utf-8") if isinstance(reason, str) and reason and "\0" not in reason else b""
    except UnicodeEncodeError:
        text = b""
    return "", (text or REFUSED.encode()) + b"\n", 2
