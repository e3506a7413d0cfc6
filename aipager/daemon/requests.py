"""A request's life in one place: opened, answered by keys, closed, and what follows the last.

A permission request or a question opens when Claude Code shows its dialog
(``events.permissions``) and closes when that dialog is over: its tool ran
(``PostToolUse``), a new prompt dismissed it, its agent finished, its task
ended, or a tap went to the hook that waited (``replies``).  Every one of those
closes it here, so what closing means is written once: the ``request_closed``
output (the chat writes the verdict line from it), and after the last request
of a session closes, a waiting session works again and the messages held for
the dialog are released.
"""

from __future__ import annotations

from typing import Callable, Iterable

from aipager.daemon.dispatch import Ctx
from aipager.port.model import Request, Session, State
from aipager.port.outputs import Release, RequestAnswered, RequestClosed

#: open requests kept per session (older ones are closed: their dialogs are long gone)
REQUESTS_CAP = 20


def open_request(ctx: Ctx, sess: Session, req: Request) -> None:
    """``req``'s dialog is on screen: the session waits for an answer."""
    if not sess.requests:
        sess.reminded = False  # a new wait earns one reminder
    req.separate = bool(sess.requests)
    sess.requests.append(req)
    if len(sess.requests) > REQUESTS_CAP:
        close(ctx, sess, sess.requests[:-REQUESTS_CAP], after=False)
    ctx.registry.set_state(sess, State.WAITING)
    ctx.registry.touch(sess)


def close(ctx: Ctx, sess: Session, reqs: Iterable[Request], *, via: str = "", answer: str = "",
          who: str = "", scope: dict | None = None, edited: str = "",
          after: bool = True) -> None:
    """Close ``reqs`` of ``sess``: each gets its ``request_closed`` output (``via``,
    ``answer`` and ``who`` when a tap the hook took closed it; ``edited``: the corrected
    command or path an edited allow ran with).

    Args:
        after: do what follows the last request's close (``after_last``); False when
            the caller settles the session itself (the task ended).
    """
    gone = [r for r in reqs if any(r is o for o in sess.requests)]
    if not gone:
        return
    for req in gone:
        # A request answered by keys closes with that answer, even when its tool ran
        # before the keys were all pressed: one verdict, never "answered in the terminal".
        by_keys = not via and req.answered
        ctx.emit(RequestClosed, sess, key=req.key, request_id=req.request_id,
                 via="keys" if by_keys else via, answer=req.answered if by_keys else answer,
                 who=req.answered_by if by_keys else who,
                 scope={} if by_keys else dict(scope or {}),
                 edited="" if by_keys else edited)
    sess.requests[:] = [r for r in sess.requests if all(r is not g for g in gone)]
    if after:
        after_last(ctx, sess)
    ctx.registry.touch(sess)


def close_where(ctx: Ctx, sess: Session, pred: Callable[[Request], bool]) -> None:
    """Close the open requests ``pred`` picks (answered in the terminal)."""
    close(ctx, sess, [r for r in sess.requests if pred(r)])


def close_all(ctx: Ctx, sess: Session) -> None:
    """The task is over: every dialog with it (its caller settles the session)."""
    close(ctx, sess, list(sess.requests), after=False)


def after_last(ctx: Ctx, sess: Session) -> None:
    """No request is open any more: a waiting session works again (or is ready when its
    task is over), and the messages held for the dialog go in (typing can no longer
    answer it)."""
    if sess.requests:
        return
    if sess.state == State.WAITING:
        task = sess.task
        ctx.registry.set_state(sess, State.WORKING if task and task.ended_at is None
                               else State.READY)
    release_held(ctx, sess, only="dialog")


def release_held(ctx: Ctx, sess: Session, only: str = "") -> None:
    """The messages that waited may now be typed (oldest first); ``only="dialog"``: just
    those that waited for a dialog to close (the task goes on)."""
    for msg in sess.queue:
        if msg.status == "held" and (not only or msg.held_for == only):
            msg.status = "typed"
            ctx.emit(Release, sess, msg.text, msg_id=msg.msg_id, chat_id=msg.chat_id)


def claim_for_keys(ctx: Ctx, sess: Session, req: Request, answer: str, who: str) -> None:
    """A tap answers ``req``'s terminal dialog with keys (pressed next): from now on the
    next tap does nothing, and its close names this answer."""
    req.answered, req.answered_by, req.reply_addr = answer, who, ""
    ctx.registry.touch(sess)


def unclaim(ctx: Ctx, sess: Session, req: Request) -> None:
    """The keys could not be pressed: the request may be answered again."""
    req.answered = req.answered_by = ""
    ctx.registry.touch(sess)


def keys_pressed(ctx: Ctx, sess: Session, req: Request) -> None:
    """The keys answered the dialog: the chat shows who answered (``request_answered``); the
    request stays open until its tool runs (that closes it)."""
    ctx.emit(RequestAnswered, sess, key=req.key, request_id=req.request_id, via="keys",
             answer=req.answered, who=req.answered_by)
