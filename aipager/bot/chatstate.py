"""What the chat side remembers: pure records, saved with the daemon's other state.

No I/O here except ``load``/``save``.  The registry knows sessions; this knows
Telegram: which message shows which card, which bot message belongs to which
session (reply routing), each chat's current session, the short handles that
buttons carry, per-chat settings, reactions already shown (they only move
forward), who sent the messages that wait, what the outbox has not sent yet, and the
last Telegram update handled.

Saved as ``paths.chat_state_file`` (0600, atomic); an unreadable file gives a
fresh state and a log line, never a crash; a damaged one is renamed next to itself
(``<file>.damaged-<UTC stamp>``) and said once in the chat.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Mapping

import orjson

from aipager import locales
from aipager.bot import ops
from aipager.bot.ops import Op
from aipager.bot.kept import Ask, Prefs, ask_from_json, ask_to_json
from aipager.proto import paths
from aipager.proto.fsnames import keep_aside, write_private

log = logging.getLogger("aipager.bot")

VERSION = 1
#: bot messages remembered for reply routing
ROUTES_KEPT = 2000
#: short handles remembered for buttons (older buttons answer "this button expired")
HANDLES_KEPT = 1000
#: reactions remembered (so a late 👀 never replaces a 👍)
REACTIONS_KEPT = 2000
#: live-message ids remembered (cards of older tasks are never edited again)
LIVE_KEPT = 500

#: reaction order: a message's reaction only moves to a higher rank
REACTION_RANK = {"👀": 1, "👍": 2, "🤷": 2}

#: reply styles offered in /settings (empty: Claude's own)
STYLES = {"": "Claude's own", "brief": "Reply briefly, in a few sentences.",
          "detailed": "Reply in detail, with the reasoning."}


def msg_key(chat_id: int | str, message_id: int | str) -> str:
    return f"{chat_id}:{message_id}"


@dataclass(frozen=True)
class RequestRef:
    """What a request's or a question's buttons stand for: its session and its key."""

    session: str
    key: str


class KillStage(StrEnum):
    """Where the chat's "End session?" question of a session is."""

    #: asked: its buttons answer it
    ASKED = "asked"
    #: a tap took it (a second tap, even one racing the first, finds it answered)
    TAKEN = "taken"
    #: ended (or being ended) from the chat, and the question says so: the session's end
    #: notice that follows would say it a second time
    BY_CHAT = "by_chat"


@dataclass
class ChatState:
    """The chat side's memory (see the module docstring)."""

    #: live message key (``card:<session>:<seq>``, ``status``, ``req:<key>``) → [chat, message]
    live: OrderedDict[str, list[int]] = field(default_factory=OrderedDict)
    #: ``chat:message`` of a bot message → session it belongs to
    routes: OrderedDict[str, str] = field(default_factory=OrderedDict)
    #: chat id (str) → the session plain messages go to
    current: dict[str, str] = field(default_factory=dict)
    #: button handle → what it stands for: [kind, value] (``session``, ``new``, ``voice``)
    #: or [kind, session, key] (``request``, ``ask``: a ``RequestRef``)
    handles: OrderedDict[str, list[str]] = field(default_factory=OrderedDict)
    next_handle: int = 1
    #: chat id (str) → its settings
    prefs: dict[str, Prefs] = field(default_factory=dict)
    #: ``chat:message`` → reaction shown
    reactions: OrderedDict[str, str] = field(default_factory=OrderedDict)
    #: user id (str) → when the "this bot is private" reply went out
    strangers: dict[str, float] = field(default_factory=dict)
    #: the outbox's unsent work, oldest first (saved as ``Op.to_json`` gives it)
    pending: list[Op] = field(default_factory=list)
    #: live message key → [the text it shows, its buttons' name ("" none, "stop")] (a restart
    #: re-emits cards: the same text and buttons, no edit)
    shown: OrderedDict[str, list[str]] = field(default_factory=OrderedDict)
    #: session name → where the chat's "End session?" question of it is
    kills: dict[str, KillStage] = field(default_factory=dict)
    #: session name → the key of its open folder-trust question: one question per start of
    #: the session (an older one, of an earlier session of that name, answers nothing)
    trusting: dict[str, str] = field(default_factory=dict)
    #: questions and forms being answered from the chat: request key → what is asked
    asks: dict[str, Ask] = field(default_factory=dict)
    #: the session names last put in the command menu
    menu: list[str] = field(default_factory=list)
    #: the journal number of the last datagram whose outputs the chat took
    #: (``Output.origin``): after a hard kill the replayed ones up to it are not shown again
    taken: int = 0
    #: every Telegram update up to this id is handled (``inbox``): one Telegram delivers
    #: again, or the update journal still holds, is not acted on again
    handled: int = 0
    #: user id (str) → the language they chose in /settings (``aipager.locales``)
    langs: dict[str, str] = field(default_factory=dict)
    #: chat id (str) → the language of the member who last wrote there (``i18n.chat_locale``)
    chat_langs: dict[str, str] = field(default_factory=dict)
    #: not saved: what was wrong with the saved file this state replaces ("" when nothing)
    damaged: str = ""

    # -- live messages -------------------------------------------------------

    def live_id(self, key: str, chat_id: int | None = None) -> int | None:
        """The message shown under ``key``; with ``chat_id``, only if it is in that chat
        (after the chat moved, an id of the old chat must never be edited in the new one)."""
        pair = self.live.get(key)
        if not pair or (chat_id is not None and pair[0] != int(chat_id)):
            return None
        return pair[1]

    def set_live(self, key: str, chat_id: int, message_id: int) -> None:
        self.live[key] = [int(chat_id), int(message_id)]
        self.live.move_to_end(key)
        _trim(self.live, LIVE_KEPT)

    def show(self, key: str, text: str, buttons: str = "") -> bool:
        """Record that live message ``key`` shows ``text`` with ``buttons`` (a name: "stop");
        False when it already did."""
        if self.shown.get(key) == [text, buttons]:
            return False
        self.shown[key] = [text, buttons]
        self.shown.move_to_end(key)
        _trim(self.shown, LIVE_KEPT)
        return True

    def shown_text(self, key: str) -> str | None:
        """The text live message ``key`` shows (None: none is recorded)."""
        pair = self.shown.get(key)
        return pair[0] if pair else None

    def forget_live(self, key: str) -> None:
        self.live.pop(key, None)

    # -- reply routing -------------------------------------------------------

    def route(self, chat_id: int, message_id: int, session: str) -> None:
        key = msg_key(chat_id, message_id)
        self.routes[key] = session
        self.routes.move_to_end(key)
        _trim(self.routes, ROUTES_KEPT)

    def session_of(self, chat_id: int, message_id: int) -> str | None:
        return self.routes.get(msg_key(chat_id, message_id))

    # -- button handles --------------------------------------------------------

    def handle(self, kind: str, value: str | RequestRef) -> int:
        """A short number standing for ``(kind, value)`` in callback data (≤ 64 bytes)."""
        entry = [kind, value.session, value.key] if isinstance(value, RequestRef) \
            else [kind, value]
        for key, known in reversed(self.handles.items()):
            if known == entry:
                return int(key)
        number = self.next_handle
        self.next_handle += 1
        self.handles[str(number)] = entry
        _trim(self.handles, HANDLES_KEPT)
        return number

    def resolve(self, kind: str, number: int) -> str | None:
        """What handle ``number`` stands for, if it is of ``kind`` and still known."""
        entry = self.handles.get(str(number))
        return entry[1] if entry and len(entry) == 2 and entry[0] == kind else None

    def resolve_request(self, kind: str, number: int) -> RequestRef | None:
        """The request (``kind`` ``request``) or question (``ask``) handle ``number`` stands
        for, if still known."""
        entry = self.handles.get(str(number))
        if not entry or len(entry) != 3 or entry[0] != kind:
            return None
        return RequestRef(entry[1], entry[2])

    # -- reactions -------------------------------------------------------------

    def advance_reaction(self, chat_id: int, message_id: int, emoji: str) -> bool:
        """Record ``emoji`` if it moves the message's reaction forward; False: keep the old one."""
        key = msg_key(chat_id, message_id)
        old = self.reactions.get(key)
        if old is not None and REACTION_RANK.get(emoji, 0) <= REACTION_RANK.get(old, 0):
            return False
        self.reactions[key] = emoji
        self.reactions.move_to_end(key)
        _trim(self.reactions, REACTIONS_KEPT)
        return True

    # -- settings --------------------------------------------------------------

    def prefs_of(self, chat_id: int) -> Prefs:
        return self.prefs.get(str(chat_id)) or Prefs()

    def set_pref(self, chat_id: int, name: str, value: Any) -> None:
        self.prefs[str(chat_id)] = self.prefs_of(chat_id).with_(name, value)

    # -- persistence -----------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION, "live": self.live, "routes": self.routes,
            "current": self.current, "handles": self.handles, "next_handle": self.next_handle,
            "prefs": {chat: dataclasses.asdict(p) for chat, p in self.prefs.items()},
            "reactions": self.reactions, "strangers": self.strangers,
            "pending": [op.to_json() for op in self.pending], "menu": self.menu,
            "shown": self.shown, "kills": self.kills,
            "asks": {k: ask_to_json(a) for k, a in self.asks.items()}, "taken": self.taken, "handled": self.handled,
            "langs": self.langs, "chat_langs": self.chat_langs, "trusting": self.trusting,
        }

    @classmethod
    def from_json(cls, doc: Any) -> ChatState:
        """Rebuild from ``to_json`` output; anything of the wrong shape is left out."""
        state = cls()
        if not isinstance(doc, dict):
            return state
        for name in ("live", "routes", "reactions"):
            value = doc.get(name)
            if isinstance(value, dict):
                setattr(state, name, OrderedDict(value))
        if isinstance(doc.get("handles"), dict):
            state.handles = OrderedDict((k, _handle_entry(v)) for k, v in doc["handles"].items()
                                        if isinstance(v, list) and v)
        if isinstance(doc.get("shown"), dict):
            state.shown = OrderedDict((k, _shown_entry(v)) for k, v in doc["shown"].items())
        if isinstance(doc.get("kills"), dict):
            state.kills = {str(k): KillStage(v) for k, v in doc["kills"].items()
                           if v in KillStage.__members__.values()}
        if isinstance(doc.get("trusting"), dict):
            state.trusting = {str(k): v for k, v in doc["trusting"].items()
                              if isinstance(v, str)}
        if isinstance(doc.get("asks"), dict):
            state.asks = {str(k): a for k, v in doc["asks"].items()
                          if (a := ask_from_json(v)) is not None}
        if isinstance(doc.get("prefs"), dict):
            state.prefs = {str(chat): Prefs.read(p) for chat, p in doc["prefs"].items()}
        for name in ("current", "strangers"):
            value = doc.get(name)
            if isinstance(value, dict):
                setattr(state, name, dict(value))
        for name in ("langs", "chat_langs"):
            value = doc.get(name)
            if isinstance(value, dict):
                setattr(state, name, {str(k): v for k, v in value.items()
                                      if isinstance(v, str) and v in locales.LOCALES})
        if isinstance(doc.get("pending"), list):
            state.pending = [op for op in map(ops.from_json, doc["pending"]) if op is not None]
        if isinstance(doc.get("menu"), list):
            state.menu = [str(n) for n in doc["menu"]]
        for name in ("next_handle", "taken", "handled"):
            if isinstance(doc.get(name), int) and not isinstance(doc.get(name), bool):
                setattr(state, name, doc[name])
        return state


def _handle_entry(entry: list[Any]) -> list[str]:
    """A saved handle; one of an older version names a request as ``session\\0key``."""
    if len(entry) == 2 and isinstance(entry[1], str) and "\0" in entry[1]:
        return [str(entry[0]), *entry[1].split("\0", 1)]
    return [str(v) for v in entry]


def _shown_entry(value: Any) -> list[str]:
    """A saved shown text; an older version kept the buttons (``\\0stop``) and the kill
    question's stage (an invisible first character) inside the text itself."""
    if isinstance(value, list) and len(value) == 2:
        return [str(value[0]), str(value[1])]
    text, _, buttons = str(value).partition("\0")
    return [text.lstrip("\u2060\u2063"), buttons]


def _trim(od: OrderedDict, cap: int) -> None:
    while len(od) > cap:
        od.popitem(last=False)


def load(env: Mapping[str, str]) -> ChatState:
    """The saved chat state; a fresh one when missing or unreadable (logged)."""
    path = paths.chat_state_file(env)
    try:
        with open(path, "rb") as fh:
            doc = orjson.loads(fh.read())
        if isinstance(doc, dict):
            return ChatState.from_json(doc)
        why = "not the chat-state shape"
    except FileNotFoundError:
        return ChatState()
    except OSError as exc:
        log.error("cannot read the chat state %s (%s); starting with a fresh one", path, exc)
        return ChatState()
    except orjson.JSONDecodeError as exc:
        why = f"not valid JSON ({exc})"
    state = ChatState()
    state.damaged = f"the chat state was damaged ({why}); {_keep_aside(path)}; starting with a fresh one"
    log.error("%s", state.damaged)
    return state


def _keep_aside(path: str) -> str:
    """Rename a damaged chat state next to itself, as the daemon does its saved state."""
    try:
        kept = keep_aside(path)
    except OSError as exc:
        return f"not kept: cannot rename it ({exc.strerror})"
    return f"kept as {kept}"


def save(env: Mapping[str, str], state: ChatState) -> None:
    """Write the chat state atomically, owner-only.

    Not fsynced: it is written before every answer goes out, and an fsync there
    (tens to hundreds of ms on a busy disk) would sit between Claude's Stop and
    the phone; a daemon crash keeps it either way (the page cache survives it).
    """
    write_private(paths.chat_state_file(env), orjson.dumps(state.to_json()), sync=False)
