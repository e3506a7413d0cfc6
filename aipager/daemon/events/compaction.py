"""PreCompact / PostCompact, and the compacted line from SessionStart or the status line
(or, when no reading shows the drop soon, from the tick: said once either way)."""

from __future__ import annotations

from aipager.texts import render
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.port.model import Session
from aipager.port.outputs import NoticeName

router = EventRouter("compaction")

#: seconds after a compaction ends that its line waits for a reading showing the drop
#: (``X% → Y%``); then it is said without figures
FIGURES_WAIT = 10.0


@router.on("PreCompact")
def on_pre_compact(ev: dict, sess: Session, ctx: Ctx) -> None:
    sess.compacting = True
    sess.pre_compact_pct = sess.context_pct
    sess.compact_notice_pending = False
    task = sess.task
    if task is None or task.ended_at is not None:
        # No card is open: say it in a message so the pause does not look like a crash.
        ctx.notice(sess, NoticeName.COMPACTING, render.compacting(sess.label))
    ctx.registry.touch(sess)


@router.on("PostCompact")
def on_post_compact(ev: dict, sess: Session, ctx: Ctx) -> None:
    if sess.pre_compact_pct is None:
        sess.pre_compact_pct = sess.context_pct
    _compacted(ctx, sess)
    ctx.registry.touch(sess)


def compacted_by_session_start(ctx: Ctx, sess: Session) -> None:
    """SessionStart(source=compact): report now if its figures already show the drop."""
    if sess.pre_compact_pct is None and not sess.compacting:
        # Both PreCompact and PostCompact were lost: the last reading is the best
        # "before" there is; a later status line with a lower figure settles it.
        sess.pre_compact_pct = sess.context_pct
    _compacted(ctx, sess)


def _compacted(ctx: Ctx, sess: Session) -> None:
    """The compaction is over (PostCompact, or a SessionStart that says so): the notice is
    due, reported now if the figures already show the drop."""
    sess.compacting = False
    sess.compact_notice_pending = True
    if sess.compacted_at is None:
        sess.compacted_at = ctx.now()
    report_if_dropped(ctx, sess)


def report_overdue(ctx: Ctx, sess: Session, now: float) -> None:
    """The compacted line without figures when no reading showed the drop within
    ``FIGURES_WAIT`` of the end (no status line, or a conversation too small to drop)."""
    if (sess.compact_notice_pending and sess.compacted_at is not None
            and now - sess.compacted_at >= FIGURES_WAIT):
        ctx.notice(sess, NoticeName.COMPACTED, render.compacted_plain(sess.label))
        _reported(ctx, sess)


def _reported(ctx: Ctx, sess: Session) -> None:
    sess.compact_notice_pending = False
    sess.pre_compact_pct = None
    sess.compacted_at = None
    ctx.registry.touch(sess)


def report_if_dropped(ctx: Ctx, sess: Session) -> None:
    """Emit ``📦 name · Conversation compacted: X% → Y%`` once, when a reading shows the drop.

    The reading on SessionStart comes from the status file and may still be the
    pre-compaction figure; then the next statusline datagram settles it.
    """
    before, after = sess.pre_compact_pct, sess.context_pct
    if not sess.compact_notice_pending or before is None or after is None or after >= before:
        return
    ctx.notice(sess, NoticeName.COMPACTED, render.compacted(sess.label, before, after),
               before=before, after=after)
    _reported(ctx, sess)
