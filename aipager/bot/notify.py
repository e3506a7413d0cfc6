"""The daemon's ``Notifier`` for the chat: each ``Output`` becomes outbox ops.

``emit`` runs inside the daemon's event handlers, so it only decides and
queues (no awaits, no Telegram calls).  What each output kind becomes:

- ``card``: the task's live message, edited in place, with a Stop button while
  the task runs; the first one replies to the prompt that started the task.
- ``answer``: Claude's Markdown as Telegram entities (``markdown.format_answer``),
  replying to the prompt; past a few messages the whole answer is attached.
- ``notice``: a short message (a context warning gets "Compact now").
- ``permission``: its own message with the buttons; ``request_closed`` replaces
  them with who answered.  ``question``: the question and its options.
- ``reaction``: 👀 → 👍/🤷 on the person's message (never backwards).
- ``release``: a held message is typed now (through ``Actions.release``).
- ``diff``: a code block, when the chat turned diff previews on.
- ``files``: the daemon's checked copies (``Files.copies``), each under a name of the
  chat's own, uploaded after the task's answer (or its final card when there is no
  answer); refused ones are listed in a notice.

In private mode every output goes through ``private.view`` first, and the chat shows
only what it returns (names, states, counts and buttons to the page; ``_ring``).

After each output the pinned status line is recomputed and, when it changed,
edited.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any, Callable, Coroutine

from aiogram.types import WebAppInfo
from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager.bot.kept import Ask, FormAsk, QuestionAsk
from aipager import locales
from aipager.bot import i18n, private, view
from aipager.bot.callbacks import SCOPES, RequestAct, RequestTap, SessionAct, SessionTap
from aipager.bot.chatstate import ChatState, KillStage, RequestRef
from aipager.bot.i18n import _, ngettext, number
from aipager.bot.markdown import format_answer, to_chunks, u16_len
from aipager.bot.outbox import Live, Outbox, Post, React, Upload
from aipager.clients import asking, sentfiles
from aipager.texts import render
from aipager.port.model import Session, Task
from aipager.port.outputs import (Answer, Card, Diff, Files, Form, Notice, NoticeName, Output,
                                     Permission, Prompted, Question, Reaction, Release,
                                     RequestAnswered, RequestClosed, RequestUpdate,
                                     StateChanged)

log = logging.getLogger("aipager.bot")

STATUS_KEY = "status"
#: answers remembered per notifier (``_answered``)
ANSWERED_KEPT = 200
#: tasks whose files were released, remembered (a file sent after the answer goes at once)
FILES_KEPT = 100


def card_key(session: str, task: Any) -> str:
    return f"card:{session}:{task}"


def request_key(session: str, key: str) -> str:
    return f"req:{session}:{key}"


def kill_key(session: str) -> str:
    """The live message asking whether to end ``session``: its outcome replaces it."""
    return f"kill:{session}"



def _entities(chunk: Any) -> tuple[dict[str, Any], ...]:
    return tuple(e.model_dump(exclude_none=True) for e in chunk.entities)


def _one_button(text: str, tap: SessionTap) -> dict | None:
    kb = InlineKeyboardBuilder()
    kb.button(text=text, callback_data=tap)
    return view.markup(kb)


#: notices that need the person (a failure, a lost tap, a message cut off): they buzz;
#: the rest (context, compaction, a session's end, refused files) arrive silently, and so
#: does a safety refusal: Claude goes on, and the answer that follows buzzes once
BUZZING_NOTICES = frozenset({NoticeName.API_ERROR,
                             NoticeName.LATE_TAP, NoticeName.TYPING_CUT,
                             NoticeName.NOT_TAKEN, NoticeName.STILL_WAITING,
                             NoticeName.HUB_BAD_RECORD, NoticeName.HUB_LINK,
                             NoticeName.AT_COMPUTER, NoticeName.START_DIALOG,
                             NoticeName.HOST_STATE})


class ChatNotifier:
    """Turns outputs into outbox ops for the chat(s) a session reports to.

    Args:
        outbox, state: where ops go, what the chat remembers.
        registry: a callable returning the daemon's registry (read only here).
        chats_for: session name → chat ids it reports to.
        spawn: runs a coroutine in the daemon's loop (held messages are typed by one).
        release: ``Actions.release`` (set once the actions exist).
        started_at: wall-clock start of this daemon: a task that ended before it
            and was never shown gets no card now (the restart would flood the chat).
    """

    def __init__(self, outbox: Outbox, state: ChatState, registry: Callable[[], Any],
                 chats_for: Callable[[str], list[int]],
                 spawn: Callable[[Coroutine[Any, Any, Any]], Any],
                 started_at: float | None = None, env: dict[str, str] | None = None,
                 locale_for: Callable[[int], str] | None = None,
                 types_again: Callable[[int, int], bool] = lambda chat_id, msg_id: False,
                 privacy: Callable[[], private.Mode] = lambda: private.OFF) -> None:
        self.env = env if env is not None else {}
        #: private mode now (the config, read again when it changes)
        self._privacy = privacy
        #: chat id → the language of what the chat says on its own (``i18n.chat_locale``)
        self._locale_for = locale_for or (lambda chat_id: locales.DEFAULT)
        #: whether the chat handles (types) message (chat, id) again after a restart
        self._types_again = types_again
        #: files of a task waiting for its answer: (session, task, chat) → entry
        self._files: dict[tuple[str, Any, int], dict[str, Any]] = {}
        self.outbox = outbox
        self.state = state
        self._registry = registry
        self._chats_for = chats_for
        self._spawn = spawn
        self.release: Callable[..., Coroutine[Any, Any, Any]] | None = None
        self.started_at = time.time() if started_at is None else started_at
        self._status: dict[int, str] = {}
        #: an open request's keyboard once its hook stops waiting (without ✏️ Edit), by key
        self._after_hook: dict[str, dict | None] = {}
        #: (chat, session, task) whose answer went out (a short task's card does not follow it)
        self._answered: deque[tuple[int, str, int]] = deque(maxlen=ANSWERED_KEPT)

    def emit(self, out: Output) -> None:
        if out.origin:
            if out.replayed and out.origin <= self.state.taken:
                log.info("%s output of %s not shown again: the chat took it before the "
                         "daemon was killed", out.kind, out.session)
                return
            # live outputs set it (not max): numbers start over when the state was lost
            self.state.taken = out.origin
        try:
            sess = self._registry().get(out.session)
            mode = self._privacy()
            for chat_id in self._chats_for(out.session):
                # the chat's language, set here: no handler's context reaches a daemon event
                with i18n.use(self._locale_for(chat_id)):
                    if mode.on:
                        self._private(out, sess, chat_id, mode)
                    else:
                        self._show(out, sess, chat_id)
                    if not isinstance(out, StateChanged):
                        # (a state alone, a session that started, posts no status line: it
                        # moves with the cards and requests it sums up, as it always did)
                        self._status_line(chat_id)
        except Exception:  # noqa: BLE001 - a rendering bug must not break event handling
            log.exception("showing a %s output in the chat failed", out.kind)

    def _show(self, out: Output, sess: Session | None, chat_id: int) -> None:
        """One output in one chat, by its kind."""
        match out:
            case Card():
                self._on_card(out, sess, chat_id)
            case Prompted():
                self._on_prompted(out, sess, chat_id)
            case Answer():
                self._on_answer(out, sess, chat_id)
            case Notice():
                self._on_notice(out, sess, chat_id)
            case Permission():
                self._on_permission(out, sess, chat_id)
            case RequestUpdate():
                self._on_request_update(out, sess, chat_id)
            case Question():
                self._on_question(out, sess, chat_id)
            case Form():
                self._on_form(out, sess, chat_id)
            case RequestClosed():
                self._on_request_closed(out, sess, chat_id)
            case RequestAnswered():
                self._on_request_answered(out, sess, chat_id)
            case Reaction():
                self._on_reaction(out, sess, chat_id)
            case Release():
                self._on_release(out, sess, chat_id)
            case Diff():
                self._on_diff(out, sess, chat_id)
            case Files():
                self._on_files(out, sess, chat_id)
            case StateChanged():
                self._on_state(out, sess, chat_id)

    # -- private mode ----------------------------------------------------------------

    def _private(self, out: Output, sess: Session | None, chat_id: int,
                 mode: private.Mode) -> None:
        """The one way an output reaches the chat in private mode: through
        ``private.view``, never through the output's own text."""
        label = sess.label if sess is not None else out.session.removeprefix("claude-")
        clock = getattr(self._registry(), "clock", time.time)
        match private.view(out, label, sess, clock()):
            case private.Show(out=shown):
                self._show(shown, sess, chat_id)
            case private.Bell() as bell:
                self._ring(bell, out, sess, chat_id, mode.public_url)
            case private.Quiet():
                pass

    def _ring(self, bell: private.Bell, out: Output, sess: Session | None, chat_id: int,
              public: str) -> None:
        """A bell as outbox ops: a card edited in place, a request's message (its verdict
        replaces it), or a new message; with the page's button and ⏹ Stop."""
        if bell.edit_only:
            self.state.asks.pop(bell.key, None)
            if self.state.shown.pop(bell.key, None) is not None:
                self.outbox.put(Live(chat_id, bell.text, key=bell.key, session=out.session))
            return
        task = getattr(out, "task", None)
        if isinstance(out, Card) and self._card_needless(out, sess, chat_id):
            return
        kb = InlineKeyboardBuilder()
        text = bell.text
        if bell.door is not None and public:
            url = bell.door.url(public)
            # Telegram opens a Mini App from a private chat only: a group gets the address
            if chat_id > 0:
                kb.button(text=_("📟 Open on the page"), web_app=WebAppInfo(url=url))
            else:
                kb.button(text=_("📟 Open on the page"), url=url)
        elif bell.door is not None and not bell.live:
            text += "\n" + private.page_note(public, asks=isinstance(out, (Permission, Question, Form)))
        if bell.stop:
            handle = self.state.handle("session", out.session)
            kb.button(text=_("⏹ Stop"), callback_data=SessionTap(h=handle, act=SessionAct.STOP))
        markup = view.markup(kb)
        reply_to = _prompt_msg(sess, task, self.state, chat_id) if bell.reply_prompt else None
        if bell.live:
            if not self.state.show(bell.key, text, "stop" if bell.stop else ""):
                return
            self.outbox.put(Live(chat_id, text, key=bell.key, markup=markup,
                                 session=out.session, reply_to=reply_to, final=bell.final))
            return
        buzz = bell.buzz
        if isinstance(out, Answer):
            self._answered.append((chat_id, out.session, out.task))
            buzz = buzz and not (self.state.prefs_of(chat_id).quiet
                                 and view.at_desk(sess))
        if bell.key:
            self.state.forget_live(bell.key)  # shown again (late answer): a new message
            self.state.show(bell.key, text)
        self.outbox.put(Post(chat_id, text, markup=markup, key=bell.key,
                             session=out.session, reply_to=reply_to, buzz=buzz), urgent=True)

    # -- kinds ---------------------------------------------------------------------

    def _card_needless(self, out: Card, sess: Session | None, chat_id: int) -> bool:
        """Whether a final card would only be noise: its task ended while nobody showed it
        (a restart), or so soon that its answer went out first."""
        key = card_key(out.session, out.task)
        task = sess.task if sess is not None else None
        if (out.final and self.state.live_id(key, chat_id) is None and task is not None
                and task.ended_at is not None and task.ended_at < self.started_at):
            return True  # ended while nobody showed it: the answer says what matters
        if out.final and key not in self.state.shown \
                and (chat_id, out.session, out.task) in self._answered:
            # A task too short for its card to be shown before its answer: a card arriving
            # after the answer would only push it up; the answer says what matters.
            self._release_files(out.session, out.task, chat_id)
            return True
        return False

    def _on_card(self, out: Card, sess: Session | None, chat_id: int) -> None:
        key = card_key(out.session, out.task)
        final = out.final
        if self._card_needless(out, sess, chat_id):
            return
        prefs = self.state.prefs_of(chat_id)
        text = view.card_text(self._card_words(out, sess), sess, detail=prefs.detail)
        markup = None
        if not final:
            handle = self.state.handle("session", out.session)
            markup = _one_button(_("⏹ Stop"), SessionTap(h=handle, act=SessionAct.STOP))
        if final:
            self._release_files(out.session, out.task, chat_id)
        if not self.state.show(key, text, "" if final else "stop"):
            return
        self.outbox.put(Live(chat_id, text, key=key, markup=markup, session=out.session,
                             reply_to=_prompt_msg(sess, out.task, self.state, chat_id),
                             final=final))

    def _card_words(self, out: Card, sess: Session | None) -> str:
        """The card in the chat's language: the daemon renders it in English; a card of this
        machine's session, for the task it shows, is rendered again here (``render.card`` is
        pure; the locale is the one ``emit`` set).  A hub host's session arrives slim (no
        rows): its card stays as the host rendered it."""
        if sess is None or _own_task(sess, out.task) is None:
            return out.text
        clock = getattr(self._registry(), "clock", time.time)
        return render.card(sess, clock())

    def _on_prompted(self, out: Prompted, sess: Session | None, chat_id: int) -> None:
        # silent (the person is at the computer); the card and the answer reply to it
        self.outbox.put(Post(chat_id, self._prompted_words(out, sess),
                             key=private.prompt_key(out.session, out.task), session=out.session))

    def _prompted_words(self, out: Prompted, sess: Session | None) -> str:
        """The typed prompt's header in the chat's language (as ``_card_words``): rendered
        again from this machine's task; the prompt itself as it was typed."""
        task = _own_task(sess, out.task) if sess is not None else None
        if sess is None or task is None:
            return out.text
        if out.by:
            return render.sent_from_page(sess.label, out.by, task.prompt)
        return render.typed_at_computer(sess.label, task.prompt)

    def _on_answer(self, out: Answer, sess: Session | None, chat_id: int) -> None:
        label = sess.label if sess is not None else out.session
        self._answered.append((chat_id, out.session, out.task))
        formatted = format_answer(label, out.text)
        reply_to = _prompt_msg(sess, out.task, self.state, chat_id)
        # the answer buzzes once, on its first part, unless the person is at the computer and
        # asked there: what was asked from the phone is answered out loud, terminal or not
        quiet = (self.state.prefs_of(chat_id).quiet and view.at_desk(sess)
                 and not view.asked_from_chat(sess, out.task))
        for i, chunk in enumerate(formatted.messages):
            self.outbox.put(Post(chat_id, chunk.text, entities=_entities(chunk),
                                 reply_to=reply_to if i == 0 else None, session=out.session,
                                 buzz=i == 0 and not quiet), urgent=True)
        if formatted.attachment is not None:
            self.outbox.put(Upload(chat_id, formatted.attachment_name or f"{label}-answer.md",
                                   caption=_("The whole answer"), data=formatted.attachment,
                                   session=out.session), urgent=True)
        self._release_files(out.session, out.task, chat_id)

    def _notice_words(self, out: Notice, sess: Session | None) -> str:
        """The notice in the chat's language: the daemon renders it in English; one whose
        output carries what it says is rendered again here (``render.notice``)."""
        if i18n.current() == locales.DEFAULT:
            return out.text
        label = sess.label if sess is not None else out.session.removeprefix("claude-")
        return render.notice(out.notice, label, out.extra) or out.text

    def _on_notice(self, out: Notice, sess: Session | None, chat_id: int) -> None:
        if out.notice == NoticeName.SESSION_END and self._ended_from_chat(out.session):
            return
        markup = None
        if out.notice == NoticeName.CONTEXT_WARNING:
            handle = self.state.handle("session", out.session)
            markup = _one_button(_("📦 Compact now"), SessionTap(h=handle, act=SessionAct.COMPACT))
        reply_to = None
        if (out.notice in (NoticeName.TYPING_CUT, NoticeName.NOT_TAKEN)
                and str(out.extra.get("chat_id")) == str(chat_id)
                and str(out.extra.get("msg_id", "")).isdigit()):
            # said on the message that was cut off (never a message id of another chat)
            reply_to = int(out.extra["msg_id"])
            if out.notice == NoticeName.TYPING_CUT and self._types_again(chat_id, reply_to):
                log.info("message %s was cut off before its Enter; it is typed again", reply_to)
                return
            if self.state.advance_reaction(chat_id, reply_to, "🤷"):
                self.outbox.put(React(chat_id, reply_to, "🤷"))
        self.outbox.put(Post(chat_id, self._notice_words(out, sess), markup=markup,
                             session=out.session, reply_to=reply_to,
                             buzz=out.notice in BUZZING_NOTICES
                             or bool(out.extra.get("midtask"))), urgent=True)

    def _ended_from_chat(self, session: str) -> bool:
        """Whether the chat's own kill question says this session ended (and by whom);
        taken once, so a later end of a session of the same name is said as usual."""
        if self.state.kills.get(session) != KillStage.BY_CHAT:
            return False
        del self.state.kills[session]
        return True

    def _on_permission(self, out: Permission, sess: Session | None, chat_id: int) -> None:
        key = request_key(out.session, out.key)
        # the words, the answers and the change are the page's too (``clients.asking``)
        labels = asking.scope_labels(out, sess)
        offered = asking.answers(out, labels)
        markup = self._request_markup(out, offered)
        if any(a.act == "edit" for a in offered):
            # ✏️ Edit works only while the hook waits: its buttons once the hook gives up
            self._after_hook[key] = self._request_markup(
                out, asking.answers(out, labels, edit=False))
        text = asking.words(out, sess)
        entities = list(_code_entity(text, out.detail))
        if out.tool == "ExitPlanMode" and out.detail and out.detail in text:
            # a plan is Markdown: shown formatted, as Claude wrote it, not as a code block
            text, entities = _formatted_plan(text, out.detail)
        # what the call would change, always shown with the request (the setting "diff
        # previews" is for the edits that run without asking)
        shown = asking.change(out)
        body = shown.shown
        if shown.more:
            # too long to read in a message: its head here, the whole as a .diff file
            body += "\n" + ngettext("… {n} more line in the .diff file",
                                    "… {n} more lines in the .diff file", shown.more).format(
                                        n=number(shown.more))
        if body:
            start = u16_len(text) + 1
            text += "\n" + body
            entities.append({"type": "pre", "offset": start, "length": u16_len(body),
                             "language": "diff"})
        attach = shown.whole
        self.state.forget_live(key)  # shown again (late answer): a new message
        self.state.show(key, text)
        self.outbox.put(Post(chat_id, text, entities=tuple(entities), markup=markup,
                             key=key, session=out.session, buzz=True), urgent=True)
        if attach:
            label = sess.label if sess is not None else out.session
            self.outbox.put(Upload(chat_id, f"{label}-{out.tool.lower()}.diff",
                                   caption=_("The whole diff"), data=attach.encode("utf-8"),
                                   session=out.session), urgent=True)

    def _request_markup(self, out: Permission, offered: list[asking.Answer]) -> dict | None:
        """A request's keyboard from its answers (``clients.asking``): Allow and Deny on one
        row, each scoped button on its own (long labels), the rest on the last."""
        handle = self.state.handle("request", RequestRef(out.session, out.key))
        kb = InlineKeyboardBuilder()
        for answer in offered:
            kb.button(text=answer.label, callback_data=RequestTap(h=handle, act=RequestAct(answer.act)))
        scoped = sum(1 for a in offered if a.act in SCOPES)
        pair = sum(1 for a in offered if a.act in ("allow", "deny"))
        kb.adjust(*([pair] if pair else []), *[1] * scoped, len(offered) - pair - scoped)
        return view.markup(kb)

    def _on_request_update(self, out: RequestUpdate, sess: Session | None,
                           chat_id: int) -> None:
        """The hook stopped waiting: a request still open loses its ✏️ Edit button (an
        edited call needs the waiting hook; a tap now types the dialog's keys)."""
        key = request_key(out.session, out.key)
        markup = self._after_hook.get(key)
        shown = self.state.shown_text(key)
        if out.reply_addr or markup is None or shown is None:
            return
        self.outbox.put(Live(chat_id, shown, key=key, markup=markup, session=out.session))

    def _on_question(self, out: Question, sess: Session | None, chat_id: int) -> None:
        questions = [q for q in out.questions if q.get("options")]
        if not questions:
            questions = [{"question": out.text, "header": "", "options": out.options,
                          "multi": out.multi_select}]
        key = request_key(out.session, out.key)
        self._post_ask(QuestionAsk(out.session, out.key, chat_id, questions), sess, key)

    def _on_form(self, out: Form, sess: Session | None, chat_id: int) -> None:
        """An MCP server's form: filled in here step by step (``view.form_view``) while the
        hook waits; once it no longer does, the message says it is in the terminal and its
        buttons go."""
        key = request_key(out.session, out.key)
        if not out.fields or not out.reply_addr:
            # the words alone: in place of a form shown here, else a message of its own
            self.state.asks.pop(key, None)
            shown = self.state.shown_text(key) is not None
            self.state.show(key, out.text)
            if shown:
                self.outbox.put(Live(chat_id, out.text, key=key, session=out.session))
            else:
                self.outbox.put(Post(chat_id, out.text, key=key, session=out.session,
                                     buzz=True), urgent=True)
            return
        self._post_ask(FormAsk(out.session, out.key, chat_id, out.server, out.message,
                               list(out.fields)), sess, key)

    def _post_ask(self, ask: Ask, sess: Session | None, key: str) -> None:
        """A question or a form asked in the chat: kept while it is answered there, and
        posted as a message of its own."""
        handle = self.state.handle("ask", RequestRef(ask.session, ask.key))
        self.state.asks[key] = ask
        label = sess.label if sess is not None else ask.session
        text, markup = view.ask_view(label, ask, handle)
        self.state.forget_live(key)
        self.state.show(key, text)
        self.outbox.put(Post(ask.chat, text, markup=markup, key=key, session=ask.session,
                             buzz=True), urgent=True)

    def _on_request_closed(self, out: RequestClosed, sess: Session | None, chat_id: int) -> None:
        self._verdict(out, chat_id)

    def _on_request_answered(self, out: RequestAnswered, sess: Session | None,
                             chat_id: int) -> None:
        self._verdict(out, chat_id)

    def _verdict(self, out: RequestClosed | RequestAnswered, chat_id: int) -> None:
        """The one writer of a request's verdict line, which replaces its buttons.  A request
        answered by keys gets it when the keys are pressed (``request_answered``) or, when
        its tool ran first, when it closes: whichever comes first takes the shown text, so
        the other adds nothing."""
        key = request_key(out.session, out.key)
        ask = self.state.asks.pop(key, None)
        shown = self.state.shown_text(key)
        self.state.shown.pop(key, None)
        self._after_hook.pop(key, None)
        if shown is None:
            return
        if ask is not None and isinstance(ask, FormAsk):
            # the step on screen (or the whole form and "Send this?") is over: what the
            # form asked stays, the verdict says what was sent
            shown = "\n".join(view.form_head(out.session.removeprefix("claude-"), ask))
        line = view.verdict(out.via, out.answer, out.who, time.time(), ask, out.scope,
                            out.edited)
        self.outbox.put(Live(chat_id, f"{shown}\n{line}", key=key, session=out.session))

    def _on_reaction(self, out: Reaction, sess: Session | None, chat_id: int) -> None:
        msg_id, emoji = out.msg_id, out.emoji
        target = int(out.chat_id or chat_id)
        if target != chat_id or not str(msg_id).lstrip("-").isdigit():
            return
        if self.state.advance_reaction(chat_id, int(msg_id), emoji):
            self.outbox.put(React(chat_id, int(msg_id), emoji))

    def _on_release(self, out: Release, sess: Session | None, chat_id: int) -> None:
        msg_id = out.msg_id
        target = int(out.chat_id or chat_id)
        if target != chat_id or self.release is None or not str(msg_id).lstrip("-").isdigit():
            return
        self._spawn(self.release(out.session, chat_id, int(msg_id), out.text))

    def _on_state(self, out: StateChanged, sess: Session | None, chat_id: int) -> None:
        """Nothing: a state with no card is for clients that list sessions (the page)."""

    def _on_diff(self, out: Diff, sess: Session | None, chat_id: int) -> None:
        if not self.state.prefs_of(chat_id).diffs:
            return
        label = sess.label if sess is not None else out.session
        body = out.text.replace("```", "'''")
        for chunk in to_chunks(f"📝 {label}\n```diff\n{body}\n```")[:2]:
            self.outbox.put(Post(chat_id, chunk.text, entities=_entities(chunk),
                                 session=out.session))

    def _on_files(self, out: Files, sess: Session | None, chat_id: int) -> None:
        """The daemon's checked copies, each under a name of this chat's own (the outbox
        removes it once uploaded), held until the task's answer; the refusals said."""
        entry = self._files.setdefault((out.session, out.task, chat_id),
                                       {"ops": [], "released": False})
        mine, refused = sentfiles.own_copies(out)
        for copy, path in mine:
            first = not any(isinstance(op, Upload) for op in entry["ops"])
            entry["ops"].append(Upload(chat_id, copy.filename, caption=out.text if first else "",
                                       path=path, photo=copy.photo, session=out.session))
        if refused:
            label = out.session.removeprefix("claude-")
            reasons = "; ".join(f"{r.path}: {r.reason}" for r in refused)
            entry["ops"].append(Post(chat_id, _("📎 {session} · not sent: {reasons}").format(
                                         session=label, reasons=reasons),
                                     session=out.session))
        self._flush_files(out.session, out.task, chat_id)

    def _release_files(self, session: str, task: Any, chat_id: int) -> None:
        entry = self._files.setdefault((session, task, chat_id), {"ops": [], "released": False})
        entry["released"] = True
        self._flush_files(session, task, chat_id)

    def _flush_files(self, session: str, task: Any, chat_id: int) -> None:
        key = (session, task, chat_id)
        entry = self._files.get(key)
        if entry is None or not entry["released"]:
            return
        ops, entry["ops"] = entry["ops"], []
        for op in ops:
            self.outbox.put(op, urgent=True)
        # the entry stays, released: files sent after the answer (a subagent's) go at once;
        # the oldest released ones are forgotten
        released = [k for k, e in self._files.items() if e["released"] and not e["ops"]]
        for old in released[:max(0, len(released) - FILES_KEPT)]:
            del self._files[old]

    # -- the pinned status line ----------------------------------------------------

    def _status_line(self, chat_id: int) -> None:
        text = view.status_bar(list(self._registry()))
        if self._status.get(chat_id) == text:
            return
        self._status[chat_id] = text
        # the same text shown elsewhere (the chat moved) still needs its own line here
        if not self.state.show(STATUS_KEY, text) and self.state.live_id(STATUS_KEY, chat_id):
            return
        self.outbox.put(Live(chat_id, text, key=STATUS_KEY, pin=True))


def _formatted_plan(text: str, plan: str) -> tuple[str, list[dict[str, Any]]]:
    """The request's text with its plan converted from Markdown to Telegram entities."""
    head = text[:text.find(plan)]
    chunks = to_chunks(plan, limit=3600)
    if not chunks:
        return text, []
    first = chunks[0]
    shift = u16_len(head)
    entities = [{**e, "offset": e["offset"] + shift} for e in _entities(first)]
    body = first.text if len(chunks) == 1 else first.text + "\n" + _("… (the rest in the terminal)")
    return head + body, entities


def _prompt_msg(sess: Session | None, task_seq: Any, state: ChatState | None = None,
                chat_id: int | None = None) -> int | None:
    """The chat message that started the task (the answer and card reply to it): the
    sender's message, or the chat's copy of a prompt it has no message of (typed at the
    computer, sent from the page: ``Prompted``)."""
    task = sess.task if sess is not None else None
    if sess is None or task is None or task.seq != task_seq:
        return None
    if not task.authors or (chat_id is not None
                            and str(task.authors[0].get("chat_id", chat_id)) != str(chat_id)):
        # the chat's copy; none when the prompt was sent in another chat (the chat moved)
        return (state.live_id(private.prompt_key(sess.name, task_seq), chat_id)
                if state is not None else None)
    msg_id = task.authors[0].get("msg_id")
    try:
        return int(msg_id)  # type: ignore[arg-type]  # None or junk: the except below
    except (TypeError, ValueError):
        return None


def _own_task(sess: Session, seq: Any) -> Task | None:
    """The task ``seq`` of this machine's session, when a text about it is to be rendered again
    in the chat's language (none in English: the daemon's text is already right; none for a
    hub host's session: it arrives slim, so its texts stay as the host rendered them)."""
    task = sess.task
    if i18n.current() == locales.DEFAULT or task is None or task.seq != seq or "@" in sess.name:
        return None
    return task


def _code_entity(text: str, detail: str) -> list[dict[str, Any]]:
    """The request's command or path as a code block (it is what the person judges)."""
    if not detail:
        return []
    start = text.find(detail)
    if start < 0:
        return []
    return [{"type": "pre", "offset": u16_len(text[:start]), "length": u16_len(detail)}]
