"""Button payloads: aiogram ``CallbackData`` factories, each packed well under 64 bytes.

Buttons never carry a session name or a request key (either can pass 64 bytes
and both are the daemon's business): they carry a short handle from
``ChatState.handle`` that the tap resolves again.  A handle the state no longer
knows (an old button, forged data) resolves to nothing and the tap gets a toast.
"""

from __future__ import annotations

from aiogram.filters.callback_data import CallbackData

#: Telegram's limit on callback data
MAX_BYTES = 64


class SessionTap(CallbackData, prefix="s"):
    """A button about a session: ``act`` is stop | use | kill | kill_yes | kill_no |
    compact | resume."""

    h: int
    act: str


class RequestTap(CallbackData, prefix="r"):
    """A permission request's button: ``act`` is allow | always | deny | stop."""

    h: int
    act: str


class QuestionTap(CallbackData, prefix="q"):
    """A question's button: ``act`` p (pick option ``i``), t (toggle ``i``), s (submit the
    toggles), o (answer in words), x (decline)."""

    h: int
    act: str
    i: int = 0


class SettingTap(CallbackData, prefix="set"):
    """A /settings button: ``name`` the setting, ``value`` the new value."""

    name: str
    value: str


def packed(data: CallbackData) -> str:
    """``data.pack()``, checked against Telegram's limit (a bug here must fail loudly)."""
    text = data.pack()
    if len(text.encode()) > MAX_BYTES:
        msg = f"callback data over {MAX_BYTES} bytes: {text!r}"
        raise ValueError(msg)
    return text
