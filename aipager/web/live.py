"""The daemon's outputs, as the page sees them: remembered and streamed.

``WebNotifier`` is a ``Notifier`` (``aipager.port.outputs``): the composition
root fans the daemon's outputs out to it and to the chat.  ``emit`` runs on the
daemon's event loop and never blocks: it remembers what the page shows (the latest
card of each session, the open requests as the daemon worded them, a short
conversation per session) and puts one small event per output into each open
stream's queue (``subscribe``); the page then reads what changed through the API.
A stream that does not keep up is closed (the page reconnects and reads afresh).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any, Callable, Iterator

from aipager.port.model import PAGE_CHAT_ID
from aipager.port.outputs import (Answer, Card, Files, Form, Notice, Output, Permission,
                                     Prompted, Question, Reaction, Release, RequestAnswered,
                                     RequestClosed)
from aipager.port.backend import SessionsView

log = logging.getLogger("aipager.web")

#: conversation entries kept per session
TALK_KEPT = 200
#: events a stream may fall behind before it is closed
QUEUE_LEN = 256
#: the chat id the web's own messages carry (Telegram never uses 0)
WEB_CHAT = PAGE_CHAT_ID


class WebNotifier:
    """What the page shows of the daemon's outputs.

    Args:
        sessions: the port's sessions view, once the daemon exists (None before).
        clock: wall-clock seconds.
    """

    def __init__(self, sessions: Callable[[], SessionsView | None] = lambda: None,
                 clock: Callable[[], float] = time.time) -> None:
        self._sessions = sessions
        self._clock = clock
        self._streams: set[asyncio.Queue[dict[str, Any] | None]] = set()
        #: session → its latest card
        self.cards: dict[str, Card] = {}
        #: (session, key) → the request as the daemon worded it
        self.asked: dict[tuple[str, str], Permission | Question | Form] = {}
        #: session → conversation entries, oldest first
        self.talk: dict[str, deque[dict[str, Any]]] = {}
        #: session → the task of its last card: a task's first card adds its prompt
        self._last_task: dict[str, int] = {}
        #: the web's held messages may go in now (``actions.WebActions.release``)
        self.on_release: Callable[[Release], None] | None = None
        #: a file Claude sent is checked and copied for download (``WebActions.files``)
        self.on_files: Callable[[Files, dict[str, Any]], None] | None = None
        #: called when the conversations changed (``keep``: saved across a restart)
        self.on_change: Callable[[], None] = lambda: None
        self.seq = 0

    # -- the Notifier ------------------------------------------------------------------

    def emit(self, out: Output) -> None:
        try:
            self._remember(out)
        except Exception:  # noqa: BLE001 - a rendering bug must not break event handling
            log.exception("remembering a %s output for the page failed", out.kind)
        self.seq += 1
        self.publish({"kind": out.kind, "session": out.session, "seq": self.seq})
        self.on_change()

    def _remember(self, out: Output) -> None:
        match out:
            case Card():
                self.cards[out.session] = out
                self._task_seen(out.session, out.task)
            case Prompted():
                # the task's prompt at once (its first card waits for the daemon's tick)
                self._task_seen(out.session, out.task)
            case Answer():
                # its prompt first (a short task's answer comes before its first card)
                self._task_seen(out.session, out.task)
                self.say(out.session, "answer", out.text, task=out.task)
            case Notice():
                # what it says in facts too: each page renders it again in its language
                self.say(out.session, "notice", out.text, notice=str(out.notice),
                         facts=dict(out.extra))
            case Permission() | Question() | Form():
                self.asked[(out.session, out.key)] = out
            case Files():
                # what Claude sent with SendUserFile waits here (in private mode the chat
                # only says there is a file); ``on_files`` offers the daemon's checked
                # copies, filling the entry's ``sent`` (downloads) and ``refused``
                entry = self.say(out.session, "file", "\n".join(out.files), task=out.task,
                                 files=list(out.files), caption=out.text, sent=[],
                                 refused=[])
                if self.on_files is not None:
                    self.on_files(out, entry)
            case RequestClosed() | RequestAnswered():
                asked = self.asked.pop((out.session, out.key), None)
                if asked is not None:  # who answered it, in the conversation as in the chat
                    # (its first line without the 🔐: the entry's header shows that)
                    self.say(out.session, "verdict",
                             asked.text.split("\n", 1)[0].removeprefix("🔐").strip(),
                             verdict={"via": out.via, "answer": out.answer, "who": out.who,
                                      "scope": dict(out.scope), "edited": out.edited})
            case Release() if out.chat_id == str(WEB_CHAT) and self.on_release is not None:
                self.on_release(out)
            case Reaction():
                if out.chat_id == str(WEB_CHAT):
                    self._react(out.session, out.msg_id, out.emoji)
                if out.emoji == "👍":  # a message taken: its task began, its prompt shows now
                    view = self._sessions()
                    sess = view.get(out.session) if view is not None else None
                    if sess is not None and sess.task is not None:
                        self._task_seen(out.session, sess.task.seq)

    def _task_seen(self, session: str, seq: int) -> None:
        """A task's first output here adds its prompt to the conversation (once)."""
        if self._last_task.get(session) != seq:
            self._last_task[session] = seq
            self._prompt_of(session, seq)

    def _prompt_of(self, session: str, seq: int) -> None:
        """Add task ``seq``'s prompt, unless the conversation has it: typed from this page,
        or said before a restart (the restarted daemon shows its sessions' cards again and
        this run has not seen their tasks: the kept conversation has)."""
        view = self._sessions()
        sess = view.get(session) if view is not None else None
        task = sess.task if sess is not None else None
        if task is None or task.seq != seq or not task.prompt:
            return
        ids = {str(a.get("msg_id")) for a in task.authors}
        talk = self.talk.get(session, ())
        sent = [e for e in talk if e["kind"] == "sent" and e["msg_id"] in ids]
        if sent:  # typed from this page: already in the conversation
            for entry in sent:
                entry.update(status="taken", task=seq)
            return
        if any(e["kind"] == "prompt" and e.get("task") == seq
               and e.get("started", task.started_at) == task.started_at for e in talk):
            return  # said already (a task of this session's next life has another start)
        authors = [str(a.get("label") or a.get("user_id") or "") for a in task.authors]
        who = ", ".join(a for a in authors if a) or (
            "the terminal" if task.origin == "terminal" else task.origin)
        self.say(session, "prompt", task.prompt, task=seq, who=who, started=task.started_at)

    def _react(self, session: str, msg_id: str, emoji: str) -> None:
        for entry in self.talk.get(session, ()):
            if entry.get("msg_id") == str(msg_id):
                entry["status"] = {"👍": "taken", "🤷": "not taken"}.get(emoji, entry["status"])

    # -- the conversation --------------------------------------------------------------

    def say(self, session: str, kind: str, text: str, **extra: Any) -> dict[str, Any]:
        """Add a conversation entry (``prompt``, ``answer``, ``notice``, ``sent``)."""
        entries = self.talk.setdefault(session, deque(maxlen=TALK_KEPT))
        self.seq += 1
        entry = {"id": self.seq, "kind": kind, "text": text, "at": self._clock(), **extra}
        entries.append(entry)
        self.on_change()
        return entry

    def unsay(self, entry: dict[str, Any]) -> None:
        """Take back an entry said too early (a message the service declined)."""
        for entries in self.talk.values():
            if entry in entries:
                entries.remove(entry)
                return

    def conversation(self, session: str) -> list[dict[str, Any]]:
        return list(self.talk.get(session, ()))

    def restore(self, talk: Any) -> None:
        """The conversations a previous run kept (``keep``), before this run says anything:
        entries that are not a conversation's are left out."""
        if not isinstance(talk, dict):
            return
        for session, entries in talk.items():
            if not isinstance(session, str) or not isinstance(entries, list):
                continue
            kept = [e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), int)
                    and isinstance(e.get("kind"), str) and isinstance(e.get("text"), str)
                    and isinstance(e.get("at"), (int, float))]
            if kept:
                self.talk[session] = deque(kept[-TALK_KEPT:], maxlen=TALK_KEPT)
                self.seq = max(self.seq, *(e["id"] for e in kept))

    # -- streams -----------------------------------------------------------------------

    def publish(self, event: dict[str, Any]) -> None:
        for queue in list(self._streams):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                # too far behind: closed; the page reconnects and reads everything afresh
                self._streams.discard(queue)
                queue.get_nowait()
                queue.put_nowait(None)

    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(QUEUE_LEN)
        self._streams.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        self._streams.discard(queue)

    def close(self) -> None:
        """End every stream (the daemon stops)."""
        for queue in list(self._streams):
            self._streams.discard(queue)
            try:
                queue.put_nowait(None)
            except asyncio.QueueFull:
                queue.get_nowait()
                queue.put_nowait(None)

    def __iter__(self) -> Iterator[asyncio.Queue[dict[str, Any] | None]]:
        return iter(self._streams)


__all__ = ["WEB_CHAT", "WebNotifier"]
