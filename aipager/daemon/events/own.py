"""aipager's own datagrams: queue pick-ups, safety blocks, refused files, reply timeouts,
memory-cap hits and error reports (see ``aipager.proto.wire``)."""

from __future__ import annotations

import logging

from aipager.proto import wire
from aipager.daemon import audit, limits, replies
from aipager.texts import render
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.events import forms
from aipager.port.model import Session
from aipager.port.outputs import NoticeName, Reaction, RequestUpdate

router = EventRouter("own")

#: a safety block identical to the one told this long before is merged into it (audited, no
#: second message): parallel tool calls of a halted task are blocked all at once
SAFETY_MERGE_SECONDS = 5.0
log = logging.getLogger("aipager.daemon")


def _notes(ev: dict, key: str) -> list[dict]:
    value = ev.get(key)
    return [n for n in value if isinstance(n, dict)] if isinstance(value, list) else []


def _audit(ev: dict, sess: Session | None, ctx: Ctx) -> None:
    record = audit.from_event(ev, sess, ctx.now())
    if record is not None:
        ctx.audit.write(record)


def _id(value: object) -> int | str | None:
    # ids are compared, hashed and saved: a number or a string, nothing else
    return value if value.__class__ in (int, str) else None


def _author(note: dict, sess: Session) -> dict:
    msg_id = _id(note.get("msg_id"))
    author = {"user_id": _id(note.get("author_user_id")), "msg_id": msg_id}
    if note.get("chat_id") not in (None, ""):
        # where the message was sent (a chat, or 0: the local page): an answer replies to it
        # only there
        author["chat_id"] = str(note["chat_id"])
    queued = next((m for m in sess.queue if m.msg_id == str(msg_id)), None)
    if queued is not None and queued.sender:
        author["label"] = queued.sender
    return author


@router.on(wire.QUEUE_PICKUP)
def on_queue_pickup(ev: dict, sess: Session, ctx: Ctx) -> None:
    """Claude took these chat messages: 👀 becomes 👍 (also when joined to a running task).

    The pick-up arrives just before the prompt's UserPromptSubmit: the authors
    wait on the session for the task that prompt opens (the audit names them).
    """
    sess.pickup_authors = [_author(note, sess) for note in _notes(ev, "consumed")]
    for key, emoji in (("consumed", "👍"), ("expired", "🤷")):
        for note in _notes(ev, key):
            msg_id = str(note.get("msg_id", ""))
            if not msg_id:
                continue
            sess.queue[:] = [m for m in sess.queue if m.msg_id != msg_id]
            ctx.emit(Reaction, sess, msg_id=msg_id, chat_id=str(note.get("chat_id", "")), emoji=emoji)
    ctx.registry.touch(sess)


@router.on(wire.PROMPT_BLOCKED)
def on_prompt_blocked(ev: dict, sess: Session, ctx: Ctx) -> None:
    """The hook blocked a prompt (``hookside._unmatched``): the chat messages it gave up
    were never run; each author is told on their message, and the block is audited.
    The blocked prompt's own UserPromptSubmit follows: it opens no task (``prompts``)."""
    _audit(ev, sess, ctx)
    sess.prompt_blocked_at = ctx.now()
    for key in ("given_up", "expired"):
        for note in _notes(ev, key):
            msg_id = str(note.get("msg_id", ""))
            if not msg_id:
                continue
            sess.queue[:] = [m for m in sess.queue if m.msg_id != msg_id]
            ctx.notice(sess, NoticeName.NOT_TAKEN, render.not_taken(sess.label),
                       chat_id=note.get("chat_id"), msg_id=note.get("msg_id"))
    ctx.registry.touch(sess)


@router.on(wire.SAFETY_BLOCKED)
def on_safety_blocked(ev: dict, sess: Session, ctx: Ctx) -> None:
    """Every block is audited and told in the chat; only a block identical to the one told
    just before (same task, same text, within ``SAFETY_MERGE_SECONDS``) adds no message."""
    reason = str(ev.get("reason") or "denied")
    tool = str(ev.get("tool") or "")
    text = render.safety_blocked(sess.label, reason, tool)
    task = sess.task
    last = sess.notices[-1] if sess.notices else {}
    at = last.get("at")
    merged = (last.get("name") == str(NoticeName.SAFETY_BLOCKED) and last.get("text") == text
              and (task is None or task.blocked == reason) and isinstance(at, (int, float))
              and 0 <= ctx.now() - at <= SAFETY_MERGE_SECONDS)
    if task is not None:
        task.blocked = reason
    _audit(ev, sess, ctx)
    if not merged:
        ctx.notice(sess, NoticeName.SAFETY_BLOCKED, text, tool=tool, reason=reason)
    ctx.registry.touch(sess)


@router.on(wire.SEND_FILES_REFUSED)
def on_send_files_refused(ev: dict, sess: Session, ctx: Ctx) -> None:
    files = _notes(ev, "files")
    _audit(ev, sess, ctx)
    ctx.notice(sess, NoticeName.FILES_REFUSED, render.files_refused(sess.label, files),
               tool_use_id=ev.get("tool_use_id"), files=files)


@router.on(wire.PERMISSION_REPLY_TIMEOUT)
def on_reply_timeout(ev: dict, sess: Session, ctx: Ctx) -> None:
    """The hook stopped waiting: a later tap must answer the terminal dialog with keys."""
    request_id = ev.get("aipager_request_id")
    for req in sess.requests:
        if request_id and req.request_id == request_id:
            req.reply_addr = ""
            if req.kind == "form":
                # keys cannot fill a form in: the phone now says it is in the terminal
                forms.show_form(ctx, sess, req)
            else:
                ctx.emit(RequestUpdate, sess, key=req.key, request_id=req.request_id,
                         reply_addr="")
            ctx.registry.touch(sess)
            return
    if isinstance(request_id, str) and request_id:
        # a tap sent as the hook gave up: its dialog is in the terminal after all
        replies.late(ctx, sess, request_id)


@router.on(wire.HOOK_MEMORY_CAP_HIT)
def on_memory_cap(ev: dict, sess: Session, ctx: Ctx) -> None:
    hook = str(ev.get("hook") or "aipager-hook")
    tool = ev.get("tool")
    _audit(ev, sess, ctx)
    ctx.notice(sess, NoticeName.MEMORY_CAP, render.memory_cap(sess.label, hook, tool),
               hook=hook, tool=tool, report=True)


@router.on(wire.REPORT_ERROR)
def on_report_error(ev: dict, sess: Session | None, ctx: Ctx) -> None:
    # Shape only (where, event, tool kind): never payload text.  Kept as counts (the
    # saved state's counters) and audited; the first from each place is logged.
    key = limits.family_key(ctx.counters, "report_error", ev.get("where"))
    first = key not in ctx.counters
    ctx.count(key)
    _audit(ev, sess, ctx)
    if first:
        # a place reporting again is counted, not logged again (junk must not fill the log)
        log.warning("error report from %s: event=%s tool=%s", key.partition(":")[2],
                    ev.get("event"), ev.get("tool"))
