"""AX Code's tool-hook stdin, reshaped into Claude Code's (twin of _fasthook/axcode.pxi).

AX Code (``"protocol": "claude-code"``, spec seeds/004) writes only the tool's
JSON arguments on a tool hook's stdin; the event, tool id and session id come
in ``$HOOK_EVENT``, ``$HOOK_TOOL`` and ``$HOOK_SESSION_ID``, and the hook runs
in the project folder.  ``ax_adapt`` turns that into the object Claude Code
would have sent, so forwarding and the policy see a normal event::

    {"hook_event_name":E,"tool_name":T,"tool_input":<stdin verbatim>,"cwd":C[,"session_id":S]}

The stdin object is embedded byte for byte; the strings are encoded as
``jsonlite.dumps`` does (ASCII-only), which the compiled twin reproduces.
"""

from __future__ import annotations

import posix

from aipager.proto import jsonlite
from aipager.hookpy import common

#: the $HOOK_EVENT values whose stdin is a tool's arguments
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})


def _string(text: str) -> bytes:
    return jsonlite.dumps(text).encode()


def ax_adapt(raw: bytes, env) -> bytes:
    """Claude Code's shape for AX Code's arguments-only stdin; else ``raw`` unchanged.

    Adapts only when ``$HOOK_EVENT`` is a tool event, ``$HOOK_TOOL`` is
    non-empty and stdin is a JSON object with neither ``hook_event_name`` nor
    ``tool_name`` (a Claude-shaped payload is never touched).  ``cwd`` is left
    out when the working directory cannot be read (relative paths then fail
    the policy's check); ``session_id`` only when ``$HOOK_SESSION_ID`` is
    non-empty.  Env values that are not UTF-8 keep Python's surrogate escapes
    (the compiled twin declines on them, so only this spelling exists).

    Args:
        raw: stdin as read.
        env: the process environment.

    Returns:
        The bytes every later step reads as stdin.
    """
    event = env.get("HOOK_EVENT")
    tool = env.get("HOOK_TOOL")
    if event not in TOOL_EVENTS or not tool:
        return raw
    body = raw.strip(common.WS)
    try:
        args = jsonlite.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return raw  # not the arguments: the usual checks decide
    if not isinstance(args, dict) or "hook_event_name" in args or "tool_name" in args:
        return raw
    parts = [b'{"hook_event_name":', _string(event), b',"tool_name":', _string(tool),
             b',"tool_input":', body]
    try:
        parts += [b',"cwd":', _string(posix.getcwd())]
    except OSError:
        pass
    session_id = env.get("HOOK_SESSION_ID")
    if session_id:
        parts += [b',"session_id":', _string(session_id)]
    parts.append(b"}")
    return b"".join(parts)
