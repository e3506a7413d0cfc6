"""Private mode: the chat is the doorbell, the content stays on the person's machines.

One rule at one place.  In private mode (config ``"private": true``) ``ChatNotifier.emit``
hands every output to ``view`` before anything of it is rendered for Telegram, and shows
only what ``view`` returns:

- ``Bell``: a line made of the session's name, its state, counts, time and cost and the
  kind of thing that waits ("🔐 jim needs you"), with buttons: open the page there, and
  ⏹ Stop (it reveals nothing).  Its words come from here, never from the output's text.
- ``Show``: an output whose usual rendering carries nothing of the work (a reaction on the
  person's own message, their held message released), or a copy of it stripped to such
  facts (a notice keeps its name, the message it is about and a percentage).
- ``Quiet``: nothing (a diff preview, a prompt typed at the computer; one sent from the
  page says only who sent it there, as the message its answer replies to).

Kinds are named one by one; any other kind, including one added later, rings a bell of
its session's name and its kind and nothing else: a new output cannot leak by default.
What the person types into Telegram is theirs to send and is not this module's concern
(``privacywatch`` tells them so once).

Pure: no I/O; the words are the chat's (``i18n``), in the locale the caller set.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aipager.bot.i18n import N_, _, ngettext
from aipager.port.model import Session, State
from aipager.port.outputs import (Answer, Card, Diff, Files, Notice, NoticeName, Output,
                                     Form, Permission, Prompted, Question, Reaction, Release,
                                     RequestAnswered, RequestClosed, RequestUpdate, StateChanged)
from aipager.texts.render import PLAN_TOOL, elapsed


@dataclass(frozen=True)
class Mode:
    """Whether private mode is on, and the page's public address ("" when it has none:
    then the messages say the page is on the computer)."""

    on: bool = False
    public_url: str = ""


OFF = Mode()


@dataclass(frozen=True)
class Door:
    """Where the page opens: a session, and one of its requests ("" for none)."""

    session: str
    request: str = ""

    def url(self, public: str) -> str:
        """The Mini App's address at this door (``public``: ``config.web_public_url``).
        A query, not a fragment: Telegram puts its own launch data in the fragment."""
        query = {"session": self.session, **({"request": self.request} if self.request else {})}
        return f"{public}/?{urlencode(query)}"


@dataclass(frozen=True)
class Bell:
    """What the chat says instead of an output.

    Attributes:
        text: the whole message.
        door: the page at the session or request (None: no button to it).
        buzz: the phone rings (one per prompt, as outside private mode).
        key: a live message this one is (a card's, a request's); "" for a new message.
        edit_only: change ``key``'s message, never post one (a request's verdict).
        live: edited in place while it changes (a card).
        final: the card's last state (its Stop button goes).
        reply_prompt: replies to the message that started the task.
        stop: has the ⏹ Stop button.
    """

    text: str
    door: Door | None = None
    buzz: bool = False
    key: str = ""
    edit_only: bool = False
    live: bool = False
    final: bool = False
    reply_prompt: bool = False
    stop: bool = False


@dataclass(frozen=True)
class Show:
    """Show ``out`` (the output, or a copy stripped to facts) as outside private mode."""

    out: Output


@dataclass(frozen=True)
class Quiet:
    """Nothing goes to the chat."""


Private = Bell | Show | Quiet

#: a notice's facts that say nothing of the work: the person's own message it is about,
#: a percentage
_NOTICE_FACTS = ("chat_id", "msg_id", "pct")

#: what each notice says in private mode (no reason, path, host or error text)
_NOTICE_WORDS = {
    NoticeName.COMPACTING: N_("🔄 {session} · compacting"),
    NoticeName.COMPACTED: N_("📦 {session} · compacted"),
    NoticeName.CONTEXT_WARNING: N_("⚠️ {session} · context nearly full"),
    NoticeName.STILL_WAITING: N_("⬆️ {session} · still waiting for you"),
    NoticeName.SESSION_END: N_("🔴 {session} · ended"),
    NoticeName.SAFETY_BLOCKED: N_("🛑 {session} · blocked by a safety rule"),
    NoticeName.FILES_REFUSED: N_("📎 {session} · a file was not sent"),
    NoticeName.FILES_ON_HOST: N_("📎 {session} · sent a file that stays on its machine"),
    NoticeName.MEMORY_CAP: N_("🧠 {session} · a hook hit its memory limit"),
    NoticeName.API_ERROR: N_("⚠️ {session} · Claude Code reported an error"),
    NoticeName.LATE_TAP: N_("⌛ {session} · a tap came too late"),
    NoticeName.TYPING_CUT: N_("✂️ {session} · this message was cut off by a restart; send "
                              "it again"),
    NoticeName.NOT_TAKEN: N_("🤷 {session} · this message was not taken; send it again"),
    NoticeName.AT_COMPUTER: N_("🖥 {session} · a teammate waits for an answer at the computer"),
    NoticeName.START_DIALOG: N_("🖥 {session} · asks something at the computer before it "
                                "starts"),
    NoticeName.HUB_BAD_RECORD: N_("⚠️ a host sent a record the hub cannot read"),
    NoticeName.HUB_LINK: N_("🔌 the hub's link to its hosts changed"),
    NoticeName.HOST_STATE: N_("🖥 a host went offline or came back"),
}

_STATE_WORDS = {State.WORKING: N_("⏳ {session} · working"),
                State.WAITING: N_("🔐 {session} · waiting for you"),
                State.READY: N_("✅ {session} · done"),
                State.UNKNOWN: N_("• {session} · starting"),
                State.GONE: N_("🔴 {session} · ended")}


def view(out: Output, label: str, sess: Session | None, now: float) -> Private:
    """What private mode lets the chat show of ``out``.

    Args:
        out: the daemon's output.
        label: its session's name as the chat writes it.
        sess: the session (None when the registry no longer has it).
        now: wall-clock seconds (how long a task took).
    """
    door = Door(out.session)
    match out:
        case Card():
            return Bell(card_line(label, sess, now, out.task), door, key=card_key(out),
                        live=True, final=out.final, reply_prompt=True, stop=not out.final)
        case Answer():
            took = _took(sess, out.task, now)
            text = _("✅ {session} · done").format(session=label) + took + _cost(sess)
            return Bell(text, door, buzz=True, reply_prompt=True)
        case Permission(tool=tool) if tool == PLAN_TOOL:
            return _asks(_("📋 {session} has a plan for you").format(session=label), out)
        case Permission():
            return _asks(_("🔐 {session} needs you").format(session=label), out)
        case Question():
            return _asks(_("❓ {session} asks").format(session=label), out)
        case Form():
            return _asks(_("📋 {session} asks you to fill in a form").format(session=label), out)
        case RequestClosed() | RequestAnswered():
            # its own words only: the message it edits may hold a request shown before
            # private mode was on, and an edit sends the whole text again
            line = verdict_line(out.via, out.answer, out.who, edited=bool(out.edited))
            return Bell(f"{label} · {line}", key=f"req:{out.session}:{out.key}",
                        edit_only=True)
        case Files():
            return Bell(_("📎 {session} has a file for you").format(session=label), door)
        case Notice():
            words = _NOTICE_WORDS.get(out.notice)
            text = _(words).format(session=label) if words else f"ℹ️ {label} · {out.notice}"
            facts = {k: out.extra[k] for k in _NOTICE_FACTS if k in out.extra}
            return Show(dataclasses.replace(out, text=text, extra=facts))
        case Prompted(by=by) if by:
            # sent from the page: who asked there, not what (the answer replies to it)
            return Bell(_("🌐 {session} · a prompt from {who} on the page").format(
                session=label, who=by), key=prompt_key(out.session, out.task))
        case Reaction() | Release() | RequestUpdate() | StateChanged():
            return Show(out)
        case Diff() | Prompted():
            return Quiet()
    return Bell(f"• {label} · {out.kind}", door)


def _asks(text: str, out: Permission | Question | Form) -> Bell:
    return Bell(text, Door(out.session, out.key), buzz=True,
                key=f"req:{out.session}:{out.key}", stop=True)


def card_key(out: Card) -> str:
    return f"card:{out.session}:{out.task}"


#: how the key of a prompt's copy begins (``prompt_key``)
PROMPT_KEY_PREFIX = "typed:"


def prompt_key(session: str, task_seq: Any) -> str:
    """The live-message key of the chat's copy of a prompt it has no message of (typed at
    the computer, sent from the page): the task's card and answer reply to it."""
    return f"{PROMPT_KEY_PREFIX}{session}:{task_seq}"


def card_line(label: str, sess: Session | None, now: float, seq: int) -> str:
    """``⏳ jim · working · 1m 12s · 3 tool calls · $0.04``: the state, how long, how many
    tool calls and agents, the cost."""
    if sess is None:
        return f"• {label}"
    words = _STATE_WORDS.get(sess.state, N_("• {session}"))
    parts = [_(words).format(session=label) + _took(sess, seq, now)]
    calls = sum(1 for row in sess.rows if row.task == seq)
    if calls:
        parts.append(ngettext("{n} tool call", "{n} tool calls", calls).format(n=calls))
    agents = sum(1 for agent in sess.agents.values() if agent.task == seq)
    if agents:
        parts.append(ngettext("{n} agent", "{n} agents", agents).format(n=agents))
    return " · ".join(parts) + _cost(sess)


def verdict_line(via: str, answer: str, who: str, *, edited: bool = False) -> str:
    """Who answered a request, without what was asked or answered (``edited``: allowed as a
    person corrected it, which is not named either)."""
    if via in ("", "terminal"):
        return _("⌨️ answered in the terminal")
    if answer == "allow" and edited:
        return _("✏️ edited and allowed by {who}").format(who=who)
    words = {"allow": N_("✅ allowed by {who}"), "allow_always": N_("🟢 always allowed by {who}"),
             "deny": N_("❌ denied by {who}"), "stop": N_("⏹ stopped by {who}"),
             "question_decline": N_("⏹ declined by {who}")}.get(answer,
                                                               N_("✅ answered by {who}"))
    return _(words).format(who=who)


def page_note(public: str, asks: bool = False) -> str:
    """What a message without a button to the page says instead ("" when it has one):
    ``asks``, something there waits for an answer; else only something to read."""
    if public:
        return ""
    if asks:
        return _("Read and answer it on the page on your computer (`aipager page` prints a "
                 "link).")
    return _("Read it on the page on your computer (`aipager page` prints a link).")


def _took(sess: Session | None, seq: Any, now: float) -> str:
    task = sess.task if sess is not None else None
    if task is None or task.seq != seq:
        return ""
    return " · " + elapsed((task.ended_at or now) - task.started_at)


def _cost(sess: Session | None) -> str:
    cost = sess.cost_usd if sess is not None else None
    return f" · ${cost:.2f}" if isinstance(cost, (int, float)) else ""


__all__ = ["OFF", "Bell", "Door", "Mode", "Private", "Quiet", "Show", "card_line", "page_note",
           "verdict_line", "view"]
