"""What the page shows, as JSON: pure functions of the sessions and what ``live`` kept.

The words are the daemon's (``aipager.daemon.render``), as in the chat: a card is the
text the chat edits in place, a request the text the chat posts.  For a page in another
language (``locales.rendering``, set per request) this machine's cards and requests are
rendered again in it, as the chat does.
"""

from __future__ import annotations

from typing import Any, Iterable

from aipager import locales
from aipager.clients.people import Sender, refusal
from aipager.daemon import render
from aipager.daemon.model import Request, Session, State
from aipager.daemon.notifier import Permission, Question
from aipager.locales import tr as _

#: the order the page lists sessions in: who waits for you first
_ORDER = {State.WAITING: 0, State.WORKING: 1, State.READY: 2, State.UNKNOWN: 3, State.GONE: 4}


def me(sender: Sender, via: str, private: bool = False) -> dict[str, Any]:
    """Who the page acts as, what they may do (the buttons it shows), and whether private
    mode keeps the content off Telegram (the page's badge)."""
    return {"label": sender.tag, "role": sender.role, "via": via, "private": private,
            "may": {"prompt": sender.may_prompt, "approve": sender.may_approve,
                    "manage": sender.may_manage}}


def session(sess: Session, now: float, card: str | None) -> dict[str, Any]:
    """One session: state, model, context, cost and its live card."""
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
    }


def _again(sess: Session) -> bool:
    """Render the session's texts again here: the page is not in English and the session is
    this machine's (a hub host's arrives slim: its texts stay as the host rendered them)."""
    return not locales.english() and "@" not in sess.name


def sessions(all_sessions: Iterable[Session], now: float, cards: dict[str, str]) -> list[dict]:
    ordered = sorted(all_sessions, key=lambda s: (_ORDER.get(s.state, 9), s.label))
    return [session(s, now, cards.get(s.name)) for s in ordered]


def conversation(sess: Session, entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's conversation as the page shows it: a notice in the page's language (its
    facts stay on the server: they were kept only to say it again)."""
    out = []
    for entry in entries:
        public = {k: v for k, v in entry.items() if k not in ("notice", "facts")}
        if entry.get("notice") and _again(sess):
            public["text"] = render.notice(entry["notice"], sess.label,
                                           entry.get("facts") or {}) or entry["text"]
        out.append(public)
    return out


def request(sess: Session, req: Request, shown: Permission | Question | None,
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
    plan = req.tool == render.PLAN_TOOL
    answers = [("allow", _("✅ Approve plan") if plan else _("✅ Allow")),
               ("deny", _("✍️ Keep planning") if plan else _("❌ Deny"))]
    if isinstance(shown, Permission):
        out["text"] = render.request(sess.label, req) if _again(sess) else shown.text
        out["preview"] = shown.preview or None
        buttons = shown.buttons or ["allow", "deny", "stop"]
        if "always" in buttons:
            answers.append(("always", _("🟢 Always allow")))
        scopes = render.scope_labels(req) if _again(sess) else []
        if len(scopes) != len(shown.scopes):
            scopes = shown.scopes  # the labels as they came (each keeps its sN)
        answers += [(f"s{i}", label) for i, label in enumerate(scopes) if f"s{i}" in buttons]
    else:
        out["text"] = render.permission(sess.label, req.tool, req.description, req.detail,
                                        req.cwd)
        out["preview"] = None
    answers.append(("stop", _("⏹ Stop")))
    out["answers"] = [{"act": act, "label": label} for act, label in answers]
    return out


def needs(all_sessions: Iterable[Session], asked: dict[tuple[str, str], Any],
          sender: Sender) -> list[dict[str, Any]]:
    """Every open request and question, oldest first: what needs a person."""
    found = [(req.opened_at, sess, req) for sess in all_sessions if sess.state != State.GONE
             for req in sess.requests]
    found.sort(key=lambda t: t[0])
    return [request(sess, req, asked.get((sess.name, req.key)), sender) for _, sess, req in found]


__all__ = ["conversation", "me", "needs", "request", "session", "sessions"]
