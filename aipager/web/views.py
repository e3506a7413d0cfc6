"""What the page shows, as JSON: pure functions of the sessions and what ``live`` kept.

The words are the daemon's (``aipager.texts.render``), as in the chat: a card is the
text the chat edits in place, a request the text the chat posts.  For a page in another
language (``locales.rendering``, set per request) this machine's cards and requests are
rendered again in it, as the chat does.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Callable, Iterable

from aipager import agents, locales
from aipager.clients import asking
from aipager.clients.people import Sender, refusal
from aipager.texts import render
from aipager.port.model import Request, Session, State
from aipager.port.backend import HostView
from aipager.port.outputs import Form, Permission, Question
from aipager.locales import tr as _

#: the order the page lists sessions in: who waits for you first
_ORDER = {State.WAITING: 0, State.WORKING: 1, State.READY: 2, State.UNKNOWN: 3, State.GONE: 4}


def me(sender: Sender, via: str, private: bool = False) -> dict[str, Any]:
    """Who the page acts as, what they may do (the buttons it shows), and whether private
    mode keeps the content off Telegram (the page's badge)."""
    return {"label": sender.tag, "role": sender.role, "via": via, "private": private,
            "may": {"prompt": sender.may_prompt, "approve": sender.may_approve,
                    "manage": sender.may_manage}}


def session(sess: Session, now: float, card: str | None,
            offline: AbstractSet[str] = frozenset()) -> dict[str, Any]:
    """One session: state, model, context, cost and its live card; ``unreachable`` when it
    runs on a hub's host in ``offline`` (its state is what the host last said)."""
    task = sess.task
    started = task.started_at if task is not None else None
    running = sess.state in (State.WORKING, State.WAITING) and started is not None
    return {
        "name": sess.name, "label": sess.label, "state": str(sess.state),
        "waiting_for": sess.waiting_for() if sess.state == State.WAITING else None,
        "model": sess.model or None,
        "context_pct": sess.context_pct if isinstance(sess.context_pct, (int, float)) else None,
        "cost_usd": sess.cost_usd if isinstance(sess.cost_usd, (int, float)) else None,
        "cwd": sess.cwd, "live": sess.state != State.GONE,
        "elapsed": render.elapsed(now - started) if running and started is not None else None,
        "task": task.seq if task is not None else None,
        "card": card if card is not None and not _again(sess) else (
            render.card(sess, now) if task else ""),
        "queued": sum(1 for m in sess.queue if m.status == "held"),
        "unreachable": sess.name.rpartition("@")[2] in offline if "@" in sess.name else False,
    }


def offline_hosts(hosts: Iterable[HostView]) -> frozenset[str]:
    """The hub's hosts that went quiet (heard from once, not now): nothing reaches their
    sessions."""
    return frozenset(h.name for h in hosts if not h.local and h.last_seen and not h.online)


def _again(sess: Session) -> bool:
    """Render the session's texts again here: the page is not in English and the session is
    this machine's (a hub host's arrives slim: its texts stay as the host rendered them)."""
    return not locales.english() and "@" not in sess.name


def sessions(all_sessions: Iterable[Session], now: float, cards: dict[str, str],
             offline: AbstractSet[str] = frozenset()) -> list[dict]:
    ordered = sorted(all_sessions, key=lambda s: (_ORDER.get(s.state, 9), s.label))
    return [session(s, now, cards.get(s.name), offline) for s in ordered]


def conversation(sess: Session, entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's conversation as the page shows it: a notice in the page's language (its
    facts stay on the server: they were kept only to say it again)."""
    out = []
    for entry in entries:
        public = {k: v for k, v in entry.items() if k not in ("notice", "facts", "verdict")}
        if entry.get("notice") and _again(sess):
            public["text"] = render.notice(entry["notice"], sess.label,
                                           entry.get("facts") or {}) or entry["text"]
        said = entry.get("verdict")
        if isinstance(said, dict):  # (in the page's language, as the chat says it)
            public["text"] = entry["text"] + "\n" + asking.verdict(
                str(said.get("via") or ""), str(said.get("answer") or ""),
                str(said.get("who") or ""), float(entry.get("at") or 0),
                scope=said.get("scope") if isinstance(said.get("scope"), dict) else None,
                edited=str(said.get("edited") or ""))
        out.append(public)
    return out


def request(sess: Session, req: Request, shown: Permission | Question | Form | None,
            sender: Sender) -> dict[str, Any]:
    """An open request with the answers this sender may give (the chat's buttons)."""
    out: dict[str, Any] = {
        "session": sess.name, "label": sess.label, "key": req.key, "kind": req.kind,
        "tool": req.tool, "detail": req.detail, "cwd": req.cwd,
        "answered_by": req.answered_by or None,
        "refused": refusal(sender, "approve", sess, tr=_),
    }
    if req.kind == "question":
        questions = shown.questions if isinstance(shown, Question) and shown.questions else (
            req.questions or [{"question": req.description, "header": "",
                               "options": list(req.options), "multi": False}])
        out["text"] = render.question(sess.label, questions[0].get("question", "")) \
            if questions else req.description
        out["questions"] = [{"question": q.get("question", ""), "header": q.get("header", ""),
                             "options": list(q.get("options") or []),
                             "multi": bool(q.get("multi"))} for q in questions]
        return out
    if req.kind == "form":
        return {**out, **form(sess, req, shown)}
    if isinstance(shown, Permission):
        # the chat's view of it (``clients.asking``): the same words, answers and diff
        out["text"] = asking.words(shown, sess)
        change = asking.change(shown)
        out["change"] = {"shown": change.shown, "more": change.more, "whole": change.whole,
                         "real": change.real} if change.shown else None
        offered = asking.answers(shown, asking.scope_labels(shown, sess), edit=False)
    else:
        out["text"] = render.permission(sess.label, req.tool, req.description, req.detail,
                                        req.cwd)
        out["change"] = None
        offered = asking.answers(Permission(session=sess.name, tool=req.tool), [])
    out["answers"] = [{"act": a.act, "label": a.label} for a in offered]
    return out


def form(sess: Session, req: Request, shown: Permission | Question | Form | None
         ) -> dict[str, Any]:
    """An MCP server's form: its words, the server, its message, and its fields while the
    page can answer it (the hook waits and the fields are plain ones); else only its words,
    which say it is answered at the computer."""
    answerable = bool(req.form and req.reply_addr and not req.terminal_only)
    if isinstance(shown, Form) and not _again(sess) and \
            bool(shown.fields and shown.reply_addr) == answerable:
        text = shown.text  # the daemon's words, as the chat shows them
    else:
        text = render.form(sess.label, req.detail, req.description, answerable)
    return {"text": text, "server": req.detail, "message": req.description,
            "fields": [dict(f) for f in req.form] if answerable else [],
            "answerable": answerable}


def trust(sess: Session, sender: Sender) -> dict[str, Any]:
    """The agent's folder trust dialog (Claude Code's, Codex's), answerable here
    (``actions.trust``)."""
    agent = agents.AGENTS.get(sess.coding_agent, agents.CLAUDE).title
    return {"session": sess.name, "label": sess.label, "key": "trust", "kind": "trust",
            "cwd": sess.cwd, "refused": refusal(sender, "manage", tr=_),
            "text": _("📁 {session} · {agent} asks whether you trust the files in {folder}."
                      " Until you answer, it does nothing.").format(
                session=sess.label, agent=agent, folder=sess.cwd),
            "answers": [{"act": "yes", "label": _("✅ Yes, I trust this folder")},
                        {"act": "no", "label": _("🗑 No, end the session")}]}


def needs(all_sessions: Iterable[Session], asked: dict[tuple[str, str], Any],
          sender: Sender, at_dialog: Callable[[Session], bool] = lambda sess: False,
          only: str = "") -> list[dict[str, Any]]:
    """Every open dialog, request and question, oldest first: what needs a person
    (``only``: of that session)."""
    live = [s for s in all_sessions if s.state != State.GONE and only in ("", s.name)]
    found = [(req.opened_at, sess, req) for sess in live for req in sess.requests]
    found.sort(key=lambda t: t[0])
    return [trust(sess, sender) for sess in live if at_dialog(sess)] + [
        request(sess, req, asked.get((sess.name, req.key)), sender) for _, sess, req in found]


__all__ = ["conversation", "form", "me", "needs", "request", "session", "sessions", "trust"]
