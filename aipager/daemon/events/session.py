"""Session lifecycle: SessionStart (start, resume, clear, compact) and SessionEnd."""

from __future__ import annotations

from aipager.texts import render
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.fields import text_field
from aipager.daemon.events import compaction
from aipager.port.model import Session, State
from aipager.port.outputs import NoticeName, Reaction
from aipager.daemon.requests import close_all
from aipager.daemon.tasks import close_rows

router = EventRouter("session")


@router.on("SessionStart")
def on_session_start(ev: dict, sess: Session, ctx: Ctx) -> None:
    reg = ctx.registry
    source = text_field(ev, "source")
    claude_id = text_field(ev, "session_id")
    new_conversation = source == "clear" or (
        source != "compact" and bool(claude_id) and claude_id != sess.claude_session_id
    )
    if claude_id:
        sess.claude_session_id = claude_id
    sess.transcript_path = text_field(ev, "transcript_path") or sess.transcript_path
    sess.cwd = text_field(ev, "cwd") or sess.cwd
    if text_field(ev, "model") and not sess.model:
        sess.model = text_field(ev, "model")  # the status line's display name replaces it later
    if sess.state == State.GONE:
        sess.gone_at, sess.end_reason = None, ""
    if source == "compact":
        compaction.compacted_by_session_start(ctx, sess)
        if sess.state in (State.UNKNOWN, State.GONE):
            reg.set_state(sess, State.READY)
        reg.touch(sess)
        return
    if new_conversation:
        # The context warning comes once per conversation: a new one earns it again.
        sess.context_warned = False
        sess.compact_notice_pending = False
        sess.pre_compact_pct = None
    if sess.task is not None and sess.task.ended_at is None and source in ("startup", "clear"):
        # A fresh conversation ends whatever the old one was doing (its Stop is not coming).
        sess.task.ended_at = ctx.now()
    # Claude Code (re)started or switched conversation: no dialog of before is on screen.
    close_all(ctx, sess)
    if sess.state != State.WORKING or source in ("startup", "clear"):
        reg.set_state(sess, State.READY)
    reg.touch(sess)


@router.on("SessionEnd")
def on_session_end(ev: dict, sess: Session, ctx: Ctx) -> None:
    end_session(ctx, sess, text_field(ev, "reason") or "other")


def end_session(ctx: Ctx, sess: Session, reason: str) -> None:
    """GONE: out of the status bar, into ended sessions; running work is closed."""
    if sess.state == State.GONE:
        return
    now = ctx.now()
    sess.gone_at = now
    sess.end_reason = reason
    # a task cut off by the end: whoever asked for it waits for its answer and is told
    # out loud (``midtask``: the chat buzzes)
    midtask = sess.task is not None and sess.task.ended_at is None
    if sess.task is not None and sess.task.ended_at is None:
        sess.task.ended_at = now
    for cmd in sess.bg.values():
        if cmd.status == "running":
            cmd.status, cmd.ended_at = "ended", now
    for agent in sess.agents.values():
        if agent.status in ("running", "paused", "lapsed"):
            agent.status, agent.ended_at = "dropped", now
    close_rows(sess, now)
    close_all(ctx, sess)
    sess.compacting = False
    for msg in sess.queue:
        # Claude will never take these: tell the sender (🤷).
        ctx.emit(Reaction, sess, msg_id=msg.msg_id, chat_id=msg.chat_id, emoji="🤷")
    sess.queue.clear()
    ctx.registry.set_state(sess, State.GONE)
    ctx.notice(sess, NoticeName.SESSION_END, render.session_ended(sess.label, reason), reason=reason,
               **({"midtask": True} if midtask else {}))
    ctx.registry.touch(sess)
