"""What a person does from the page: a command for the service, its result in words.

Every action is one ``aipager.port`` command handed to the one door
(``port.door.Port.ask``, the service ``main`` composed), which checks the person's rights and does the work
exactly as it does for the chat; this module adds only what is the page's own: its
message ids, a repeated Send typing nothing more, the conversation entries, and the
result as one sentence (``clients.words``) in the page user's language (the request's
``locales.rendering``, set by ``routes``).
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Coroutine, Mapping, Sequence

from aipager import agents
from aipager.clients import asking, prompts, sentfiles
from aipager.clients.people import Sender
from aipager.clients.words import ok as words_ok
from aipager.clients.words import MODE_NAMES, agent_label, changes_head, words
from aipager.port.model import Session
from aipager.port.outputs import Files, Release
from aipager.port.door import Port
from aipager.locales import N_
from aipager.locales import tr as _
from aipager.port.commands import (AnswerForm, AnswerKind, AnswerQuestion, AnswerRequest,
                                   KeepFiles, KillSession, Mode, QuestionAnswer, SendPrompt,
                                   ShowChanges, StartSession, StopTask, TrustFolder)
from aipager.port.forms import FormAction
from aipager.port.results import (ByHook, Changes, Declined, Failed, FileNotKept, FilesKept, Held,
                                  Typed)
from aipager.port.rights import Reason, check
from aipager.port.results import Result as PortResult
from aipager.port.who import NOBODY
from aipager.proto.errors import AipagerError
from aipager.web.live import WEB_CHAT, WebNotifier

log = logging.getLogger("aipager.web")

#: what the page's answer buttons mean (``act`` → the port's kind); ``sN``: suggestion N
KINDS: dict[str, AnswerKind] = {"allow": "allow", "always": "allow_always", "deny": "deny",
                                "stop": "stop"}
_DONE = {"allow": N_("Allowed."), "always": N_("Always allowed."), "deny": N_("Denied."),
         "stop": N_("Denied and stopped.")}


#: message keys remembered for a repeated Send (``WebActions.prompt``)
SENT_KEPT = 512
#: downloads of files Claude sent kept (their copies are swept after a day: files.MAX_AGE)
DOWNLOADS_KEPT = 256


@dataclass(frozen=True)
class Result:
    """How an action went: ``ok`` and one sentence for the person."""

    ok: bool
    message: str
    #: prompts: typed | held | refused | failed
    outcome: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "message": self.message, "outcome": self.outcome or None}


class WebActions:
    """The page's operations.

    Args:
        port: the one door ``main`` composed (``port.door.Port``).
        live: the page's notifier (the conversation; it hands back released messages).
        spawn: runs a coroutine in the daemon's loop (a released message is typed by one).
    """

    def __init__(self, port: Port, live: WebNotifier,
                 spawn: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
        self.port = port
        self.env = port.env
        self.live = live
        self._spawn = spawn
        #: the results of the page's last messages by their key (None: still being sent)
        self._sent: OrderedDict[tuple[str, str], Result | None] = OrderedDict()
        # message ids the page makes: past any Telegram message id, unique in a run
        self._ids = itertools.count(int(time.time() * 1000))
        live.on_release = self._released
        live.on_files = self._files
        #: the page's copies of the files Claude sent: id → (path, file name)
        self.downloads: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def find(self, name: str) -> Session | None:
        """A session by internal name (``claude-jim``) or label (``jim``)."""
        return self.port.find(name)

    def at_trust_dialog(self, sess: Session) -> bool:
        return self.port.at_trust_dialog(sess)

    # -- prompts -----------------------------------------------------------------------

    async def prompt(self, sess: Session, text: str, sender: Sender, once: str = "") -> Result:
        """Hand ``text`` to ``sess`` through the service: refused, held or typed.

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
        msg_id = next(self._ids)
        shown = prompts.words(text)
        # the conversation shows it at once, "sending", unless it is refused outright
        said = self.live.say(sess.name, "sent", shown, msg_id=str(msg_id), who=sender.tag,
                             status="sending") if shown and check(sender, SendPrompt.right) is None \
            else None
        asked = await self.port.ask(SendPrompt(sender, sess.name, text, msg_id, WEB_CHAT))
        return self._shown(asked, said)

    def _shown(self, result: PortResult, said: dict[str, Any] | None) -> Result:
        """The page's record of a prompt's result (its conversation entry's status)."""
        match result:
            case Held():
                status, outcome = "held", "held"
            case Typed():
                status, outcome = "typed", "typed"
            case Failed():
                status, outcome = "not delivered", "failed"
                log.warning("typing a message from the page failed: %s", result.error)
            case _:
                status, outcome = "", "refused"
        if said is not None:
            if not status:
                self.live.unsay(said)
            elif said["status"] != "taken":
                said["status"] = status
        return Result(words_ok(result), words(result, _), outcome)

    def _released(self, out: Release) -> None:
        """A held message of the page may go in now (the daemon's ``release`` output)."""
        try:
            msg_id = int(out.msg_id)
        except ValueError:
            return
        said = next((e for e in self.live.talk.get(out.session, ())
                     if e.get("msg_id") == str(msg_id)), None)

        async def typed() -> None:
            # the daemon types it with the author it kept with it
            result = await self.port.ask(SendPrompt(NOBODY, out.session, out.text, msg_id,
                                                    WEB_CHAT, queued=True))
            self._shown(result, said)
        self._spawn(typed())

    # -- files Claude sends ------------------------------------------------------------

    def _files(self, out: Files, entry: dict[str, Any]) -> None:
        """The daemon's checked copies (``Files.copies``), each under a name of the page's
        own (the chat removes its own once uploaded), offered for download; the
        conversation entry lists the downloads and the refusals."""
        mine, refused = sentfiles.own_copies(out)
        for copy, path in mine:
            key = secrets.token_urlsafe(16)
            self.downloads[key] = (path, copy.filename)
            entry["sent"].append({"id": key, "name": copy.filename})
        while len(self.downloads) > DOWNLOADS_KEPT:
            self.downloads.popitem(last=False)
        entry["refused"] = [{"name": os.path.basename(r.path), "reason": r.reason}
                            for r in refused]
        self.live.seq += 1
        self.live.publish({"kind": "files", "session": out.session, "seq": self.live.seq})

    def download(self, key: str) -> tuple[str, str] | None:
        """The copy of a file Claude sent (its path and name), while it is kept."""
        found = self.downloads.get(key)
        return found if found is not None and os.path.isfile(found[0]) else None

    # -- requests ----------------------------------------------------------------------

    async def answer(self, sess: Session | None, key: str, act: str, sender: Sender,
                     reason: str = "") -> Result:
        """Answer a permission request as its button (or a reply with a reason) would."""
        scoped = act.startswith("s") and act[1:].isdigit()
        if sess is None or (not scoped and act not in KINDS):
            return Result(False, _("This request is no longer open."))
        kind: AnswerKind = "allow_always" if scoped else KINDS[act]
        result = await self.port.ask(AnswerRequest(
            sender, sess.name, key, kind, reason=reason,
            suggestion=int(act[1:]) if scoped else None))
        done = _(_DONE.get(act, N_("Always allowed.")))
        if isinstance(result, ByHook) and result.scope:
            # what Claude Code was handed to remember, and for how long (as the chat says it)
            done = asking.granted(result.scope) or done
        return Result(words_ok(result), words(result, _, done))

    async def answer_question(self, sess: Session | None, key: str, sender: Sender,
                              answers: Sequence[dict[str, Any]] | None) -> Result:
        """Answer every question of an AskUserQuestion dialog (None declines it)."""
        if sess is None:
            return Result(False, _("This question is no longer open."))
        picked = None if answers is None else [
            QuestionAnswer([int(i) for i in a.get("picks") or []], str(a.get("text") or ""))
            for a in answers]
        result = await self.port.ask(AnswerQuestion(sender, sess.name, key, picked))
        return Result(words_ok(result),
                      words(result, _, _("Declined.") if answers is None else _("Answered."),
                            about="question"))

    async def answer_form(self, sess: Session | None, key: str, sender: Sender,
                          action: FormAction, content: Mapping[str, Any]) -> Result:
        """Answer an MCP server's form: ``accept`` with ``content`` (field → value; the
        daemon checks it against the form), or ``decline`` / ``cancel`` it."""
        if sess is None:
            return Result(False, _("This form is no longer open."))
        result = await self.port.ask(AnswerForm(
            sender, sess.name, key, action, dict(content) if action == "accept" else {}))
        done = {"accept": _("Sent."), "decline": _("Declined."), "cancel": _("Cancelled.")}
        return Result(words_ok(result), words(result, _, done[action], about="form"))

    # -- sessions ----------------------------------------------------------------------

    def folders(self) -> dict[str, Any]:
        """Where a new session may start: the trusted folders first, and the default."""
        return {"trusted": self.port.trusted(), "default": self.port.default_folder(),
                "modes": [{"value": mode.value, "label": _(label)}
                          for mode, label in MODE_NAMES.items()],
                # the agents a session may run, Claude Code first (its folder trust is what
                # "trusted" lists)
                "agents": [{"value": a.name, "label": agent_label(a, self.env, _)}
                           for a in agents.AGENTS.values()]}

    async def trust(self, sess: Session, sender: Sender, yes: bool) -> Result:
        """Answer the folder trust dialog (``yes``), or end the session (its "No, exit")."""
        return self._said(await self.port.ask(TrustFolder(sender, sess.name, yes)))

    async def start(self, name: str, sender: Sender, folder: str = "", mode: str = "",
                    agent: str = "") -> Result:
        """Start session ``name`` in ``folder`` (an absolute folder on this computer; ""
        is the default one) in permission ``mode`` ("": the agent's own), running ``agent``
        ("": Claude Code)."""
        try:
            chosen = Mode(mode)
        except ValueError:
            return self._said(Declined(Reason.NO_MODE, mode))
        try:
            result = await self.port.ask(StartSession(
                sender, name, folder, mode=chosen,
                agent="" if agent == agents.CLAUDE.name else agent))
        except AipagerError as exc:  # a name that is none
            return Result(False, _("Cannot start the session: {error}").format(error=exc))
        return self._said(result)

    async def upload(self, sess: Session, sender: Sender,
                     got: Sequence[tuple[str, bytes]]) -> tuple[Result, list[str]]:
        """Keep files the page sent for a prompt to ``sess`` (``KeepFiles``: in the sender's
        own folder, as the chat keeps a document); the prompt that names their paths goes
        through the service as any other.  Returns the words and the paths kept."""
        result = await self.port.ask(KeepFiles(sender, tuple(got), sess.name, "page"))
        kept = result.paths if isinstance(result, FilesKept) else \
            result.kept if isinstance(result, FileNotKept) else ()
        return self._said(result), list(kept)

    async def changes(self, sess: Session, sender: Sender) -> dict[str, Any]:
        """What the session changed in its folder, as far as ``sender`` may read: the
        words for it, and the diff (``ok`` false: refused, and why)."""
        result = await self.port.ask(ShowChanges(sender, sess.name))
        if not isinstance(result, Changes):
            return {"ok": False, "message": words(result, _)}
        return {"ok": True, "message": changes_head(result, _), "diff": result.diff,
                "files": list(result.files), "hidden": result.hidden, "cut": result.cut,
                "repo": result.repo}

    async def stop(self, sess: Session, sender: Sender) -> Result:
        return self._said(await self.port.ask(StopTask(sender, sess.name)))

    async def kill(self, sess: Session, sender: Sender) -> Result:
        return self._said(await self.port.ask(KillSession(sender, sess.name)))

    @staticmethod
    def _said(result: PortResult) -> Result:
        return Result(words_ok(result), words(result, _))


__all__ = ["KINDS", "Result", "WebActions"]
