"""PreCompact / PostCompact, and the compacted line from SessionStart or the status line."""

from __future__ import annotations

from aipager.daemon import render
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.model import Session
from aipager.daemon.notifier import NoticeName

router = EventRouter("compaction")


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
    sess.compacting = False
    sess.compact_notice_pending = True
    ctx.registry.touch(sess)


def compacted_by_session_start(ctx: Ctx, sess: Session) -> None:
    """SessionStart(source=compact): report now if its figures already show the drop."""
    if sess.pre_compact_pct is None and not sess.compacting:
        # Both PreCompact and PostCompact were lost: the last reading is the best
        # "before" there is; a later status line with a lower figure settles it.
        sess.pre_compact_pct = sess.context_pct
    sess.compacting = False
    sess.compact_notice_pending = True
    report_if_dropped(ctx, sess)


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
    sess.compact_notice_pending = False
    sess.pre_compact_pct = None
    ctx.registry.touch(sess)
