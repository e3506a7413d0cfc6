"""What the phone showed, as a person reads it: the walk's transcript.

``Transcript.step(title)`` takes what the bot did since the last step (messages sent, with
whether they buzzed, their buttons and what they reply to; edits, reactions, toasts, refused
calls) and keeps it as lines; ``str(transcript)`` is the whole story, for assertion messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from e2e.kit.chat import Phone, buttons, text_of

#: calls that show nothing (or that ``step`` reads from ``sent`` instead)
_UNSEEN = {"getupdates", "getme", "setmycommands", "deletemycommands", "getmycommands",
           "getchat", "sendchataction", "sendmessage", "senddocument", "sendphoto"}


@dataclass
class Shown:
    """One message the bot sent, as it arrived."""

    chat: int
    message_id: int
    text: str
    buzz: bool
    reply_to: int | None
    buttons: list[str]


@dataclass(repr=False)
class Transcript:
    phone: Phone
    lines: list[str] = field(default_factory=list)
    sent: list[Shown] = field(default_factory=list)
    _calls: int = 0
    _seen: int = 0

    def step(self, title: str) -> list[Shown]:
        """Read what the bot did since the last step; returns the messages it sent."""
        snap = self.phone.snapshot()
        failed = {id(p): (code, desc) for _m, p, code, desc in snap["failed_calls"]}
        sends = [p for m, p in snap["calls"]
                 if m.lower() in ("sendmessage", "senddocument", "sendphoto") and id(p) not in failed]
        self.lines.append(f"== {title}")
        new: list[Shown] = []
        for msg, params in zip(snap["sent"][self._seen:], sends[self._seen:], strict=False):
            reply = (params.get("reply_parameters") or {}).get("message_id")
            shown = Shown(msg["chat"]["id"], msg["message_id"], text_of(msg),
                          str(params.get("disable_notification", "")).lower() not in ("true", "1"),
                          int(reply) if reply else None, list(buttons(msg)))
            new.append(shown)
            self.lines.append(f"  + #{shown.message_id} (chat {shown.chat}) "
                              f"{'BUZZ' if shown.buzz else 'silent'}"
                              f"{f' reply to #{shown.reply_to}' if shown.reply_to else ''}: "
                              f"{shown.text!r} {shown.buttons or ''}")
        self._seen = len(snap["sent"])
        for method, params in snap["calls"][self._calls:]:
            name = method.lower()
            if id(params) in failed:
                what = {k: params.get(k) for k in ("message_id", "text") if k in params}
                self.lines.append(f"  ! refused {method} {what}: {failed[id(params)]}")
            elif name not in _UNSEEN:
                shown = {k: params.get(k) for k in ("message_id", "text", "reaction")
                         if params.get(k) is not None}
                self.lines.append(f"  ~ {method} {shown}")
        self._calls = len(snap["calls"])
        self.sent.extend(new)
        return new

    def __str__(self) -> str:
        return "\n".join(self.lines)

    __repr__ = __str__  # what an assertion message shows: the story, not the fields


def buzzing(shown: list[Shown]) -> list[str]:
    return [s.text for s in shown if s.buzz]


def texts(shown: list[Shown]) -> list[str]:
    return [s.text for s in shown]


__all__ = ["Shown", "Transcript", "buzzing", "texts"]

