"""Type checks at ingest: a datagram's text fields are text, or they are gone.

Handlers read these fields as strings (ids used as dict keys, paths opened,
names compared and formatted).  Anything else — a list as ``agent_id`` is
unhashable, an integer ``transcript_path`` would be opened as a file
descriptor — is removed from the event before any handler runs, so each
handler sees the field as absent; the rest of the event still counts.
``null`` stays (handlers treat it as absent already).

Structured fields (``tool_input``, ``tool_response``, ``sl_tokens``,
``error``, the statusline's ``model`` …) keep any type: the handlers reading
them check what they get.
"""

from __future__ import annotations

import logging

log = logging.getLogger("aipager.daemon")

#: top-level fields read as text by the event handlers, the audit and replies
TEXT_FIELDS = frozenset({
    # routing and identity
    "session", "hook_event_name", "notification_type", "type",
    "session_id", "transcript_path", "cwd", "permission_mode",
    # prompts and turns
    "prompt", "prompt_id", "turn_id", "last_assistant_message", "source", "reason",
    "error_type", "error_details", "message", "message_id", "delta",
    # tools and agents
    "tool_name", "tool_use_id", "agent_id", "agent_type", "model_name",
    # aipager's own datagrams
    "aipager_request_id", "aipager_reply_addr", "tool", "hook", "where", "event",
    "kind", "place",
})


def text_field(ev: dict, key: str) -> str:
    """A text field of an event as the handlers read it: its string, or "" (absent, null,
    or removed by ``FieldCheck``)."""
    value = ev.get(key)
    return value if isinstance(value, str) else ""


class FieldCheck:
    """Drops mistyped text fields; counts them and names each field once in the log.

    Args:
        counters: where ``mistyped_fields`` is counted (the daemon's diagnostics).
    """

    def __init__(self, counters: dict[str, int]) -> None:
        self.counters = counters
        self._named: set[str] = set()

    def clean(self, ev: dict) -> None:
        """Remove every text field of ``ev`` whose value is not a string (or null); a turn
        Codex names by ``turn_id`` (it sends no ``prompt_id``) is named so for the handlers,
        which tell turns apart by ``prompt_id``."""
        if "turn_id" in ev and "prompt_id" not in ev and ev["turn_id"].__class__ is str:
            ev["prompt_id"] = ev["turn_id"]
        bad = None
        for key, value in ev.items():
            # the common case costs one class test per field
            if value.__class__ is not str and value is not None and key in TEXT_FIELDS:
                if bad is None:
                    bad = []
                bad.append(key)
        if bad is None:
            return
        for key in bad:
            del ev[key]
            if key not in self._named:
                self._named.add(key)
                log.warning("datagram field %r is not text; dropped (only the first is logged, "
                            "all are counted as mistyped_fields)", key)
        self.counters["mistyped_fields"] = self.counters.get("mistyped_fields", 0) + len(bad)
