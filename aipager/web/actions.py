"""What a person does from the page, through the daemon's port, with the chat's rules.

Each action first asks ``clients.people.refusal`` (the same question a tap asks);
a message goes in through ``clients.prompts`` (checked, held or typed with its
permission note, audited), so a prompt from the page carries exactly the rights of
the person who sent it.  Results are short sentences the page shows, in the page user's
language (the request's ``locales.rendering``, set by ``routes``).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Coroutine, Sequence

from aipager import dtach
from aipager.chatcommands import RESERVED
from aipager.clients import prompts
from aipager.clients.people import Sender, refusal
from aipager.daemon.dialogkeys import Answer as QuestionAnswer
from aipager.daemon.model import Session, State
from aipager.daemon.notifier import Release
from aipager.locales import N_
from aipager.locales import tr as _
from aipager.daemon.port import (Already, AnswerKind, ByHook, ByKeys, DaemonPort, Gone,
                                 InTerminal, KeysFailed, Outcome, Who)
from aipager.proto.errors import AipagerError
from aipager.web import folders
from aipager.web.live import WEB_CHAT, WebNotifier

log = logging.getLogger("aipager.web")

#: what the page's answer buttons mean (``act`` → the port's kind); ``sN``: suggestion N
KINDS: dict[str, AnswerKind] = {"allow": "allow", "always": "allow_always", "deny": "deny",
                                "stop": "stop"}
_DONE = {"allow": N_("Allowed."), "always": N_("Always allowed."), "deny": N_("Denied."),
         "stop": N_("Denied and stopped.")}


#: message keys remembered for a repeated Send (``WebActions.prompt``)
SENT_KEPT = 512


@dataclass(frozen=True)
class Result:
    """How an action went: ``ok`` and one sentence for the person."""

    ok: bool
    message: str
    #: prompts: typed | held | refused | failed
    outcome: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "message": self.message, "outcome": self.outcome or None}


def outcome_words(outcome: Outcome, done: str) -> Result:
    """An answer's typed outcome, in words (as the chat's toasts say it)."""
    match outcome:
        case Already():
            return Result(False, _("Already answered."))
        case Gone():
            return Result(False, _("This request is no longer open."))
        case InTerminal():
            return Result(False, _("The plan waits in the terminal now: answer it there."))
        case KeysFailed(reason=reason):
            return Result(False, _("Could not answer: {reason}").format(reason=reason))
        case ByHook() | ByKeys():
            return Result(True, done)
    return Result(False, _("Nothing was done."))


class WebActions:
    """The page's operations.

    Args:
        port: the daemon, as its clients see it.
        live: the page's notifier (the conversation; it hands back released messages).
        default_folder: where new sessions start (asked each time: the config can change).
        spawn: runs a coroutine in the daemon's loop (a released message is typed by one).
    """

    def __init__(self, port: DaemonPort, live: WebNotifier, default_folder: Callable[[], str],
                 spawn: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
        self.port = port
        self.env = port.env
        #: the folders Claude Code trusts (read again each time: it trusts more as it runs)
        self.trusted: Callable[[], list[str]] = lambda: folders.read(self.env)
        self.live = live
        self._default_folder = default_folder
        self._spawn = spawn
        #: the results of the page's last messages by their key (None: still being sent)
        self._sent: OrderedDict[tuple[str, str], Result | None] = OrderedDict()
        #: the page's messages waiting in the daemon: msg id → their author (rights)
        self.held: dict[int, dict[str, Any]] = {}
        # message ids the page makes: past any Telegram message id, unique in a run
        self._ids = itertools.count(int(time.time() * 1000))
        live.on_release = self._released

    def find(self, name: str) -> Session | None:
        """A session by internal name (``claude-jim``) or label (``jim``)."""
        for sess in self.port.sessions:
            if name in (sess.name, sess.label):
                return sess
        return None

    # -- prompts -----------------------------------------------------------------------

    async def prompt(self, sess: Session, text: str, sender: Sender, once: str = "") -> Result:
        """Hand ``text`` to ``sess`` as the chat would: refused, held or typed.

        ``once`` is the page's key for this message: a second Send of it (a double click,
        a retry on a slow network) gets the first one's result and types nothing."""
        if once:
            key = (sender.tag, once)
            if key in self._sent:
                return self._sent[key] or Result(True, _("Already sending."), "sending")
            self._sent[key] = None
            while len(self._sent) > SENT_KEPT:
                self._sent.popitem(last=False)
            result = await self.prompt(sess, text, sender)
            self._sent[key] = result
            return result
        why = refusal(sender, "prompt", tr=_)
        if why:
            return Result(False, why, "refused")
        text = prompts.words(text)
        if not text:
            return Result(False, _("An empty message: nothing to send."), "refused")
        if sess.state == State.GONE:
            return Result(False, _("{session} is not running.").format(session=sess.label), "failed")
        if self.at_trust_dialog(sess):
            # a prompt's keys would answer the dialog (its Enter picks an option, or "No, exit")
            return Result(False, _("{session} waits for you to trust its folder first.").format(
                session=sess.label), "refused")
        msg_id = next(self._ids)
        who = prompts.author(sender)
        entry = self.live.say(sess.name, "sent", text, msg_id=str(msg_id),
                              who=sender.tag, status="sending")
        held = prompts.hold(sess, sender, tr=_)
        if held is not None:
            why, held_for = held
            self.held[msg_id] = who
            self.port.queue_chat_message(sess.name, msg_id, text, chat_id=WEB_CHAT,
                                         sender=sender.label, held=True, held_for=held_for)
            entry["status"] = "held"
            return Result(True, why, "held")
        return await self._type(sess.name, msg_id, text, who, entry)

    async def _type(self, session: str, msg_id: int, text: str, who: dict[str, Any],
                    entry: dict[str, Any] | None, *, queued: bool = False) -> Result:
        label = session.removeprefix("claude-")
        try:
            await prompts.type_with_note(self.port, session, msg_id, WEB_CHAT, text, who,
                                         queued=queued)
        except (AipagerError, ValueError, OSError) as exc:
            log.warning("typing a message from the page into %s failed: %s", session, exc)
            if entry is not None:
                entry["status"] = "not delivered"
            return Result(False, _("🤷 Not delivered to {session}: {reason}").format(
                session=label, reason=exc), "failed")
        if entry is not None and entry["status"] != "taken":
            entry["status"] = "typed"
        return Result(True, _("👀 Typed into {session}.").format(session=label), "typed")

    def _released(self, out: Release) -> None:
        """A held message of the page may go in now (the daemon's ``release`` output)."""
        try:
            msg_id = int(out.msg_id)
        except ValueError:
            return
        # its author, with their rights; unknown (an older run held it): the floor applies
        who = self.held.pop(msg_id, None) or {"user_id": None, "label": "", "role": "user"}
        entry = next((e for e in self.live.talk.get(out.session, ())
                      if e.get("msg_id") == str(msg_id)), None)
        self._spawn(self._type(out.session, msg_id, out.text, who, entry, queued=True))

    # -- requests ----------------------------------------------------------------------

    async def answer(self, sess: Session | None, key: str, act: str, sender: Sender,
                     reason: str = "") -> Result:
        """Answer a permission request as its button (or a reply with a reason) would."""
        scoped = act.startswith("s") and act[1:].isdigit()
        if sess is None or (not scoped and act not in KINDS):
            return Result(False, _("This request is no longer open."))
        why = refusal(sender, "approve", sess, tr=_)
        if why:
            return Result(False, why)
        kind: AnswerKind = "allow_always" if scoped else KINDS[act]
        try:
            outcome = await self.port.answer_request(
                sess.name, key, kind, sender.who, reason=reason if kind == "deny" else "",
                suggestion=int(act[1:]) if scoped else None)
        except ValueError:
            return Result(False, _("This request is no longer open."))
        return outcome_words(outcome, _(_DONE.get(act, N_("Always allowed."))))

    async def answer_question(self, sess: Session | None, key: str, sender: Sender,
                              answers: Sequence[dict[str, Any]] | None) -> Result:
        """Answer every question of an AskUserQuestion dialog (None declines it)."""
        if sess is None:
            return Result(False, _("This question is no longer open."))
        why = refusal(sender, "approve", sess, tr=_)
        if why:
            return Result(False, why)
        picked = None if answers is None else [
            QuestionAnswer([int(i) for i in a.get("picks") or []], str(a.get("text") or ""))
            for a in answers]
        try:
            outcome = await self.port.answer_question(sess.name, key, sender.who, picked)
        except ValueError as exc:
            return Result(False, str(exc))
        return outcome_words(outcome, _("Declined.") if answers is None else _("Answered."))

    # -- sessions ----------------------------------------------------------------------

    def at_trust_dialog(self, sess: Session) -> bool:
        """Whether ``sess`` is likely stopped at Claude Code's folder trust dialog: this
        machine's session, started in a folder Claude Code does not trust, that has not
        started (no hook runs before the dialog is answered)."""
        return (sess.state == State.UNKNOWN and not sess.claude_session_id and bool(sess.cwd)
                and "@" not in sess.name and not folders.is_trusted(sess.cwd, self.trusted()))

    def folders(self) -> dict[str, Any]:
        """Where a new session may start: the trusted folders first, and the default."""
        return {"trusted": self.trusted(), "default": self._default_folder()}

    async def trust(self, sess: Session, sender: Sender, yes: bool) -> Result:
        """Answer the folder trust dialog: Enter on its first choice ("Yes, I trust this
        folder"; an Enter that comes late lands in an empty input box and does nothing),
        or end the session (its "No, exit")."""
        if not yes:
            return await self.kill(sess, sender)
        why = refusal(sender, "manage", tr=_)
        if why:
            return Result(False, why)
        if not self.at_trust_dialog(sess):
            return Result(False, _("{session} does not ask about its folder.").format(
                session=sess.label))
        try:
            await self.port.type_text(sess.name, "")
        except AipagerError as exc:
            return Result(False, _("Could not answer: {reason}").format(reason=exc))
        self.port.audit_action("folder_trusted", _audited(sender), session=sess.name,
                               folder=sess.cwd)
        return Result(True, _("📁 {session} may use {folder}.").format(session=sess.label,
                                                                     folder=sess.cwd))

    async def start(self, name: str, sender: Sender, folder: str = "") -> Result:
        """Start session ``name`` in ``folder`` (an absolute folder on this computer; ""
        is the default one)."""
        why = refusal(sender, "manage", tr=_)
        if why:
            return Result(False, why)
        if folder and (not os.path.isabs(folder) or not os.path.isdir(folder)):
            return Result(False, _("There is no folder {folder} on this computer.").format(
                folder=folder))
        try:
            bare = dtach.check_name(name)
            if bare.lower() in RESERVED:
                return Result(False, _("{name} is the name of a chat command; pick another name").format(
                    name=bare))
            existing = self.find(bare)
            if existing is not None and existing.state != State.GONE and existing.socket_seen:
                return Result(False, _("{name} is already running.").format(name=bare))
            folder = os.path.normpath(folder) if folder else self._default_folder()
            session = await self.port.start_session(bare, cwd=folder)
        except AipagerError as exc:
            return Result(False, _("Cannot start the session: {error}").format(error=exc))
        self.port.audit_action("session_new", _audited(sender), session=session)
        return Result(True, _("🆕 {name} started in {folder}.").format(name=bare, folder=folder))

    async def stop(self, sess: Session, sender: Sender) -> Result:
        why = refusal(sender, "stop", sess, tr=_)
        if why:
            return Result(False, why)
        if sess.state not in (State.WORKING, State.WAITING):
            return Result(False, _("{session} is not working on anything.").format(
                session=sess.label))
        try:
            pressed = await self.port.stop_session(sess.name)
        except AipagerError as exc:
            return Result(False, _("Cannot stop {session}: {error}").format(session=sess.label,
                                                                           error=exc))
        return Result(True, _("⏹ Stop sent to {session}.").format(session=sess.label) if pressed
                      else _("Stop sent already."))

    async def kill(self, sess: Session, sender: Sender) -> Result:
        why = refusal(sender, "manage", tr=_)
        if why:
            return Result(False, why)
        try:
            ended = await self.port.kill_session(sess.label)
        except AipagerError as exc:
            return Result(False, _("Cannot end {session}: {error}").format(session=sess.label,
                                                                          error=exc))
        self.port.audit_action("session_kill", _audited(sender), session=sess.name)
        return Result(ended, _("🗑 {session} ended.").format(session=sess.label) if ended
                      else _("{session} was not running.").format(session=sess.label))


def _audited(sender: Sender) -> Who:
    """As the chat's audit records name a person: label, id, role."""
    return Who(sender.label, sender.user_id, sender.role)


def default_folder(env: dict[str, str], cfg_folder: Callable[[], Any]) -> Callable[[], str]:
    """Where new sessions start: the config's ``new_session_folder``, else HOME."""
    def folder() -> str:
        chosen = cfg_folder()
        if isinstance(chosen, str) and os.path.isdir(chosen):
            return chosen
        return env.get("HOME") or os.path.expanduser("~")
    return folder


__all__ = ["KINDS", "Result", "WebActions", "default_folder", "outcome_words"]
