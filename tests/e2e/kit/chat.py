"""The owner's phone: what the chat shows, read from the fake Bot API (``fakes.telegram_api``).

The fake runs in a thread (the daemon is another process), so everything here reads a
``snapshot()`` of its state (a deep copy taken on its loop) or blocks in ``wait_call``.
Bot messages are read as they are *now* (after edits); calls as the bot made them.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from e2e.kit.daemon import CHAT_ID
from fakes.telegram_api import FakeBotAPI


class Phone:
    """The owner's private chat with the bot."""

    def __init__(self, fake: FakeBotAPI, chat_id: int = CHAT_ID) -> None:
        self.fake = fake
        self.chat_id = chat_id

    # -- the person acts ---------------------------------------------------------------

    def say(self, text: str, **kw: Any) -> dict[str, Any]:
        """The owner sends ``text``; returns the stored message (``message_id``)."""
        return self.fake.say(text, **kw)

    def tap(self, message: dict[str, Any], label: str) -> str:
        """The owner taps the button labelled ``label`` on ``message``; returns the query id."""
        data = buttons(message).get(label)
        assert data, f"no button {label!r} on message: {message}"
        return self.fake.tap(message["message_id"], data)

    # -- reading the chat --------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return self.fake.snapshot()

    def messages(self, snap: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The bot's messages in the chat as they are now, in order."""
        snap = snap or self.snapshot()
        return [m for (chat, _), m in sorted(snap["messages"].items())
                if chat == self.chat_id and m.get("from", {}).get("is_bot")]

    def message(self, message_id: int) -> dict[str, Any] | None:
        return self.snapshot()["messages"].get((self.chat_id, message_id))

    def calls(self, method: str, snap: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Params of the *succeeded* calls of ``method``, in order."""
        snap = snap or self.snapshot()
        failed = {id(p) for _, p, _, _ in snap["failed_calls"]}
        return [p for m, p in snap["calls"] if m.lower() == method.lower() and id(p) not in failed]

    def failed(self, snap: dict[str, Any] | None = None) -> list[tuple[str, int]]:
        """(method, code) of the refused calls."""
        snap = snap or self.snapshot()
        return [(m, code) for m, _, code, _ in snap["failed_calls"]]

    def sent_texts(self, snap: dict[str, Any] | None = None) -> list[str]:
        """Texts of the messages the bot sent (sendMessage that succeeded), in order."""
        return [str(p.get("text", "")) for p in self.calls("sendMessage", snap)
                if int(p.get("chat_id", 0)) == self.chat_id]

    def reactions(self, message_id: int, snap: dict[str, Any] | None = None) -> list[str]:
        """The reactions set on the person's message, in order (one emoji each)."""
        snap = snap or self.snapshot()
        return ["".join(emoji) for chat, msg, emoji in snap["reaction_history"]
                if chat == self.chat_id and msg == message_id]

    def replies_to(self, message_id: int, snap: dict[str, Any] | None = None) -> list[dict]:
        """sendMessage calls (succeeded) that reply to ``message_id``."""
        return [p for p in self.calls("sendMessage", snap)
                if int((p.get("reply_parameters") or {}).get("message_id", 0)) == message_id]

    def toast(self, query_id: str, timeout: float = 15.0) -> dict[str, Any]:
        """The answerCallbackQuery of a tap (``text`` is the toast, None for none)."""
        return self.fake.wait_call("answerCallbackQuery",
                                   lambda p: str(p.get("callback_query_id")) == query_id, timeout)

    # -- waiting -----------------------------------------------------------------------

    def wait_message(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 30.0,
                     what: str = "") -> dict[str, Any]:
        """The first bot message (as it is now) matching ``pred``."""
        return self.wait(lambda snap: next((m for m in self.messages(snap) if pred(m)), None),
                         timeout, what)

    def wait(self, pred: Callable[[dict[str, Any]], Any], timeout: float = 30.0,
             what: str = "") -> Any:
        """Poll snapshots until ``pred(snapshot)`` is truthy; return it."""
        deadline = time.monotonic() + timeout
        while True:
            snap = self.snapshot()
            found = pred(snap)
            if found:
                return found
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        shown = "\n".join(f"  #{m['message_id']}: {m.get('text', '')[:160]!r}"
                          for m in self.messages(snap)[-15:])
        msg = (f"the chat never showed {what or 'the expected'} within {timeout} s; bot messages:\n"
               f"{shown}\nrecent calls:\n{self.fake.call_log()}")
        raise AssertionError(msg)


def buttons(message: dict[str, Any]) -> dict[str, str]:
    """A message's inline buttons: label → callback data."""
    rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
    return {b["text"]: b.get("callback_data", "") for row in rows for b in row}


def text_of(message: dict[str, Any]) -> str:
    return str(message.get("text") or message.get("caption") or "")
