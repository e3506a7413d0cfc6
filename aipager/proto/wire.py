"""The datagram vocabulary shared by the hook, the status line and the daemon.

A forwarded hook event is Claude Code's own JSON object with two keys added by
the hook: ``session`` (``claude-<name>``) and, except on MessageDisplay,
``sl_tokens`` (an object with the SL_TOKEN_KEYS, numbers or null).

aipager's own datagrams are JSON objects too.  Those that stand in for hook
events carry ``hook_event_name``; the status line and error reports carry
``type``.  The daemon dispatches on ``notification_type or hook_event_name or
type`` (see ``aipager.daemon.dispatch``).

Builtins only: the pure-Python hook twin imports this module.

The compiled side (``_fasthook/``) never spells these values itself: setup.py
generates ``wire_constants.h`` from this module (and the few hook-side modules
that own a limit, such as ``hookpy/reply.py``) at build time, and
``_fasthook/wire.pxi`` declares what it holds.  Change a value here and rebuild.
"""

from __future__ import annotations

#: the 17 Claude Code hook events aipager wires into settings.json
HOOK_EVENTS = (
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "Elicitation",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "MessageDisplay",
    "PreModelSwitch",
)

#: events whose hook waits for the chat's answer (``hookpy.reply``)
REPLY_EVENTS = ("PermissionRequest", "Elicitation")

#: events that get ``"matcher": "*"`` in settings.json
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PermissionRequest")

#: handled locally by the hook, never forwarded
NOT_FORWARDED = ("PreModelSwitch",)

#: events that do not get sl_tokens (Claude Code waits on it while drawing)
NO_SL_TOKENS = ("MessageDisplay",)

SL_TOKEN_KEYS = (
    "context_pct",
    "total_output",
    "total_input",
    "current_output",
    "lines_added",
    "lines_removed",
)

# aipager's own datagrams, keyed by hook_event_name
QUEUE_PICKUP = "queue_pickup"
#: a UserPromptSubmit the hook blocked (a message glued to other text, or forged)
PROMPT_BLOCKED = "prompt_blocked"
SAFETY_BLOCKED = "safety_blocked"
SEND_FILES_REFUSED = "send_files_refused"
PERMISSION_REPLY_TIMEOUT = "permission_reply_timeout"

# aipager's own datagrams, keyed by type
STATUSLINE = "statusline"
HOOK_MEMORY_CAP_HIT = "hook_memory_cap_hit"
REPORT_ERROR = "report_error"

OWN_DATAGRAMS = (
    QUEUE_PICKUP,
    PROMPT_BLOCKED,
    SAFETY_BLOCKED,
    SEND_FILES_REFUSED,
    PERMISSION_REPLY_TIMEOUT,
    STATUSLINE,
    HOOK_MEMORY_CAP_HIT,
    REPORT_ERROR,
)

#: the largest datagram the hook sends.  Stock kernels cap a Unix datagram at
#: the sender's SO_SNDBUF (212992 by default, wmem_max may be as low); staying
#: under it means no event depends on a tuned kernel.
MAX_DATAGRAM = 200_000

#: the most the drain reads of one datagram (the daemon's receiving thread reads as
#: much): MAX_DATAGRAM plus slack, so nothing a sender built is ever cut short
RECV_MAX = MAX_DATAGRAM + 1024

#: the reply wait (``hookpy/reply``, ``daemon/replies``): larger reply datagrams are ignored
#: (their decision would not fit the C side's output buffer) …
REPLY_MAX = 32768
#: … and so are replies with more '{' and '[' bytes than this
MAX_BRACKETS = 256

#: marker put where the hook shortened a string to fit MAX_DATAGRAM
TRUNCATION_MARKER = "…[truncated by aipager: {n} bytes dropped]"

#: string fields the hook shortens first, largest first, when an event is too big
SHRINKABLE = ("tool_response", "tool_input", "prompt", "last_assistant_message")


def dispatch_key(msg: dict) -> str | None:
    """The name the daemon routes a datagram by."""
    return msg.get("notification_type") or msg.get("hook_event_name") or msg.get("type")
