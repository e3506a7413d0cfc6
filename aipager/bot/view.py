"""The chat's words and buttons: pure functions of sessions and settings (no I/O).

Card and notice texts come from the daemon (``aipager.texts.render``); this
module adds what only the chat has: the status line and screen, help, the
answer to a tap, and the question's inline keyboard.  Keyboards are made with
aiogram's ``InlineKeyboardBuilder`` and handed to the outbox as plain dicts
(``markup``), which it keeps across restarts.
"""

from __future__ import annotations

import time
from typing import Sequence

from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup
from aiogram.utils.keyboard import InlineKeyboardBuilder, KeyboardBuilder

from aipager.bot.kept import Ask, FormAsk, QuestionAsk
from aipager.bot.i18n import N_, _, ngettext
from aipager.chatcommands import COMMANDS, RESERVED, TEAM_COMMANDS  # noqa: F401 - re-exported
from aipager.port.model import Session, State
from aipager.port.backend import HostView
from aipager.clients import asking
from aipager.port import forms
from aipager.texts import render
from aipager.texts.render import elapsed

_STATE_ICON = {State.WORKING: "⏳", State.WAITING: "🔐", State.READY: "✅", State.UNKNOWN: "•",
               State.GONE: "🔴"}
_STATE_WORDS = {State.WORKING: N_("working"), State.WAITING: N_("waiting for you"),
                State.READY: N_("ready"), State.UNKNOWN: N_("starting"), State.GONE: N_("ended")}


def markup(builder: KeyboardBuilder[InlineKeyboardButton]) -> dict | None:
    """The builder's ``InlineKeyboardMarkup`` as the plain dict the outbox keeps (None when
    it has no buttons)."""
    rows = builder.export()
    if not rows:
        return None
    return InlineKeyboardMarkup(inline_keyboard=rows).model_dump(exclude_none=True)


def at_desk(sess: Session | None) -> bool:
    """Whether the person is at the computer for this session: a terminal is attached to it,
    or its task was typed there."""
    if sess is None:
        return False
    task = sess.task
    return sess.attached or (task is not None and task.origin == "terminal")


def asked_from_chat(sess: Session | None, task_seq: object) -> bool:
    """Whether task ``task_seq`` was asked from a chat or the page (someone sent it), not
    typed at the computer."""
    task = sess.task if sess is not None else None
    if task is None or task.seq != task_seq:
        return False
    return bool(task.authors) or task.origin in ("telegram", "peer")


def is_live(sess: Session) -> bool:
    return sess.state != State.GONE


def cost(sess: Session) -> str:
    return f" · ${sess.cost_usd:.2f}" if isinstance(sess.cost_usd, (int, float)) else ""


def card_text(card: str, sess: Session | None, *, detail: str = "full") -> str:
    """The card as the chat shows it: the daemon's text, the session's cost on the header,
    only the header and last rows in ``compact`` detail."""
    head, sep, rest = card.partition("\n")
    if sess is not None:
        head += cost(sess)
    if detail == "compact" and rest:
        rows = rest.splitlines()
        rest = "\n".join(rows[-3:])
    return head + (sep + rest if rest else "")


def session_line(sess: Session, now: float, current: bool = False) -> str:
    """``⏳ jim · working · 1m 12s · opus · ctx 41% · $0.04``."""
    words = _STATE_WORDS.get(sess.state)
    parts = [f"{_STATE_ICON.get(sess.state, '•')} {sess.label}", _(words) if words else ""]
    if sess.state == State.WAITING and sess.waiting_for():
        parts[-1] = render.waiting_words(sess.waiting_for())
    task = sess.task
    if sess.state in (State.WORKING, State.WAITING) and task is not None:
        parts.append(elapsed(now - task.started_at))
    if sess.model:
        parts.append(sess.model)
    if isinstance(sess.context_pct, (int, float)):
        parts.append(_("ctx {percent}%").format(percent=f"{sess.context_pct:.0f}"))
    line = " · ".join(p for p in parts if p) + cost(sess)
    return line + ("  " + _("← current") if current else "")


def status_screen(sessions: Sequence[Session], current: str | None, now: float,
                  hosts: Sequence[HostView] = ()) -> str:
    """Every live session, one line each; on a hub, grouped by machine (its own first), a
    machine that went quiet saying since when."""
    live = [s for s in sessions if is_live(s)]
    if not live and not hosts:
        return _("No sessions yet. Start one with /new NAME, or run "
                 "`aipager session NAME` on the computer.")
    lines = [_("Sessions:")]
    if not hosts:
        lines += [session_line(s, now, s.name == current) for s in live]
        return "\n".join(lines)
    for host in hosts:
        mine = [s for s in live if _host_of(s.name) == ("" if host.local else host.name)]
        head = f"🖥 {host.name}" + (" " + _("(this machine)") if host.local else "")
        if not host.local and not host.last_seen:
            head += " · " + _("not joined yet")
        elif not host.online:
            head += " · " + _("offline since {time}").format(
                time=time.strftime('%H:%M', time.localtime(host.last_seen)))
        if host.local and not mine:
            continue
        lines.append(head)
        if not host.local and host.last_seen and not host.online:
            # as the host last said them, but nothing reaches them now
            lines += [f"  ❔ {s.label} · " + _("unreachable") for s in mine] \
                or ["  " + _("(no sessions)")]
            continue
        lines += [f"  {session_line(s, now, s.name == current)}" for s in mine] \
            or ["  " + _("(no sessions)")]
    return "\n".join(lines)


def _host_of(name: str) -> str:
    """The machine of a session named ``claude-jim@box`` ("" for this machine's)."""
    bare, sep, host = name.rpartition("@")
    return host if sep and bare else ""


def status_bar(sessions: Sequence[Session]) -> str:
    """The pinned line: who waits for you first, then who works."""
    live = [s for s in sessions if is_live(s)]
    waiting = [s.label for s in live if s.state == State.WAITING]
    working = [s.label for s in live if s.state == State.WORKING]
    parts = []
    if waiting:
        parts.append(_("🔐 waiting for you: {sessions}").format(sessions=", ".join(waiting)))
    if working:
        parts.append(_("⏳ working: {sessions}").format(sessions=", ".join(working)))
    if not parts:
        parts.append(ngettext("✅ {n} session idle", "✅ {n} sessions idle", len(live)).format(
            n=len(live)) if live else _("no sessions running"))
    return "📟 " + " · ".join(parts)


def on_machines(labels: Sequence[str]) -> list[str]:
    """The /help line for sessions of other machines (a hub), when any runs: the form of
    ``/jim@box`` that every chat delivers (``@box`` reads as another bot's name)."""
    example = next((label for label in labels if "@" in label), None)
    if example is None:
        return []
    return [_("On a machine of the hub: /NAME_HOST text (like /{example}); in a group add "
              "the bot's name: /NAME_HOST@bot.").format(example=example.replace("@", "_"))]


def help_text(sessions: Sequence[Session], current: str | None) -> str:
    live = [s.label for s in sessions if is_live(s)]
    if current:
        where = _("Plain messages go to {session}.").format(session=current.removeprefix('claude-'))
    elif len(live) == 1:
        where = _("Plain messages go to {session}.").format(session=live[0])
    elif live:
        where = _("Plain messages: you pick the session (or reply to one of its messages).")
    else:
        where = _("No session runs yet: /new NAME starts one.")
    return "\n".join([
        _("aipager — Claude Code from your phone."),
        where,
        _("Reply to a session's message to talk to that session; /NAME text sends to NAME."),
        *on_machines(live),
        "",
        *(f"/{name} — {_(words)}" for name, words in COMMANDS),
        "",
        _("Photos and documents go to Claude as files; Claude can send files back."),
        _("👀 handed to Claude · 👍 Claude took it · 🤷 never delivered"),
    ])


def verdict(via: str, answer: str, who: str, at: float, ask: Ask | None = None,
            scope: dict | None = None, edited: str = "") -> str:
    """The line that replaces a request's buttons once it is answered (``asking.verdict``,
    the page's too; a question's answers above it, from the chat's ``ask``)."""
    return asking.verdict(via, answer, who, at, answers_text(ask) if ask else "", scope,
                          edited)


_PICKER = {"use": N_("Which session should get your messages?"),
           "stop": N_("Stop which session?"), "kill": N_("End which session?"),
           "resume": N_("Resume which session?"), "send": N_("Which session is this message for?"),
           "diff": N_("The changes of which session?")}


def picker_text(action: str) -> str:
    return _(_PICKER.get(action) or N_("Which session?"))


def question_view(label: str, ask: QuestionAsk, handle: int) -> tuple[str, dict | None]:
    """The question the chat shows now (one of an AskUserQuestion call), with its buttons.

    ``ask``: ``{"questions": [{question, header, options, multi}], "step": i,
    "toggled": [option indexes]}``; buttons carry ``QuestionTap`` data: one row per
    option (and Submit), then Other… and Decline side by side.
    """
    from aipager.bot.callbacks import QuestionAct, QuestionTap

    qs = ask.questions
    step = ask.step
    q = qs[step]
    count = f" ({step + 1}/{len(qs)})" if len(qs) > 1 else ""
    header = q.get("header") or _("Claude asks")
    lines = [f"❓ {label} · {header}{count}", q["question"]]
    toggled = set(ask.toggled)
    kb = InlineKeyboardBuilder()

    def tap(text: str, act: QuestionAct, i: int = 0) -> None:
        kb.button(text=text[:60], callback_data=QuestionTap(h=handle, act=act, i=i))

    for i, option in enumerate(q["options"]):
        if q.get("multi"):
            tap(f"{'☑' if i in toggled else '☐'} {option}", QuestionAct.TOGGLE, i)
        else:
            tap(f"{i + 1}. {option}", QuestionAct.PICK, i)
    if q.get("multi"):
        tap(_("✅ Next") if step + 1 < len(qs) else _("✅ Submit"), QuestionAct.SUBMIT)
    tap(_("✍️ Other…"), QuestionAct.OTHER)
    tap(_("⏹ Decline"), QuestionAct.DECLINE)
    kb.adjust(*[1] * (len(q["options"]) + bool(q.get("multi"))), 2)
    return "\n".join(lines), markup(kb)


def _form_value(field: forms.Field, value: object) -> str:
    if value is None:
        return "—"
    if field.kind == "boolean":
        return _("yes") if value else _("no")
    return field.label_of(value)


def form_head(label: str, ask: FormAsk) -> list[str]:
    """What a form asks, above its steps; alone once it is answered (its verdict line,
    with the values sent from the chat, replaces the steps and the buttons)."""
    return [_("📋 {session} · {server} asks").format(session=label, server=ask.server),
            ask.message]


def form_view(label: str, ask: FormAsk, handle: int) -> tuple[str, dict | None]:
    """A form the chat fills in one field at a time (``ask``: ``{"form": True, "server",
    "message", "fields", "step", "values"}``), then shows whole with ✅ Send; Decline
    and Cancel on every step.  Buttons carry ``FormTap`` data."""
    from aipager.bot.callbacks import FormAct, FormTap

    fields = [forms.Field.from_json(f) for f in ask.fields]
    step = ask.step
    values = ask.values
    lines = form_head(label, ask)
    kb = InlineKeyboardBuilder()
    rows: list[int] = []

    def tap(text: str, act: FormAct, i: int = 0) -> None:
        kb.button(text=text[:60], callback_data=FormTap(h=handle, act=act, i=i))

    if step < len(fields):
        field = fields[step]
        head = f"{step + 1}/{len(fields)} · {field.title}" + (" *" if field.required else "")
        lines += ["", head]
        if field.description:
            lines.append(field.description)
        if field.kind == "enum":
            for i, option in enumerate(field.labels):
                tap(option, FormAct.PICK, i)
            rows += [1] * len(field.labels)
        elif field.kind == "boolean":
            tap(_("Yes"), FormAct.PICK, 1)
            tap(_("No"), FormAct.PICK, 0)
            rows.append(2)
        else:
            hint = {"integer": _("a whole number"), "number": _("a number")}.get(field.kind, "")
            if field.minimum is not None or field.maximum is not None:
                lo = "…" if field.minimum is None else f"{field.minimum:g}"
                hi = "…" if field.maximum is None else f"{field.maximum:g}"
                hint = f"{hint} {lo}–{hi}".strip()
            if field.format:
                hint = f"{hint} ({field.format})".strip()
            lines.append(_("✍️ Reply to this message with it") + (f": {hint}" if hint else "."))
            tap(_("✍️ Type it"), FormAct.TYPE)
            rows.append(1)
        if not field.required:
            default = "" if field.default is None else _form_value(field, field.default)
            tap(_("⏭ Skip (default: {value})").format(value=default) if default
                else _("⏭ Skip"), FormAct.SKIP)
            rows.append(1)
    else:
        lines.append("")
        lines += [f"{f.title}: {_form_value(f, values.get(f.name))}" for f in fields]
        lines += ["", _("Send this to {server}?").format(server=ask.server)]
        tap(_("✅ Send"), FormAct.SEND)
        tap(_("↩️ Start over"), FormAct.RESTART)
        rows.append(2)
    tap(_("❌ Decline"), FormAct.DECLINE)
    tap(_("✖️ Cancel"), FormAct.CANCEL)
    rows.append(2)
    kb.adjust(*rows)
    return "\n".join(lines), markup(kb)


def ask_view(label: str, ask: Ask, handle: int) -> tuple[str, dict | None]:
    """A question's or a form's message as it is now, and its buttons."""
    match ask:
        case QuestionAsk():
            return question_view(label, ask, handle)
        case FormAsk():
            return form_view(label, ask, handle)


def answers_text(ask: Ask) -> str:
    """``question → answer`` lines for the chat once a question is answered; ``→ answer``
    alone for a lone question, which the message shows just above (it read twice); a
    form's ``field: value`` lines."""
    if isinstance(ask, FormAsk):
        fields = [forms.Field.from_json(f) for f in ask.fields]
        values = ask.values
        return "\n".join(f"{f.title}: {_form_value(f, values.get(f.name))}" for f in fields
                         if f.name in values)
    out = []
    questions = ask.questions
    for q, a in zip(questions, ask.answers, strict=False):
        words = [q["options"][i] for i in a.get("picks", []) if 0 <= i < len(q["options"])]
        if a.get("text"):
            words.append(f"“{a['text']}”")
        head = "" if len(questions) == 1 else f"{q['question']} "
        out.append(f"{head}→ {', '.join(words) or '—'}")
    return "\n".join(out)
