"""The task lifecycle: UserPromptSubmit (incl. task-notification wake-ups), Stop, StopFailure,
and AX Code's Interrupt."""

from __future__ import annotations

import re

from aipager.daemon import requests
from aipager.texts import render
from aipager.policy import chatprompt
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.events.subagents import finish_agent
from aipager.port.model import PAGE_CHAT_ID, Session, State
from aipager.port.outputs import NoticeName, Prompted
from aipager.daemon.tasks import deliver_answer, finish_task

router = EventRouter("prompts")

TASK_NOTIFICATION = "<task-notification>"
#: a UserPromptSubmit this soon after ``prompt_blocked`` is the blocked prompt's own (the hook
#: sends the two back to back); later, the block was not followed by its event and is old
BLOCKED_PROMPT_SECONDS = 5.0
_TASK_ID = re.compile(r"<task-id>\s*([^<\s]+)\s*</task-id>")
_STATUS = re.compile(r"<status>\s*([^<\s]+)\s*</status>")

#: known API failures (StopFailure) in plain words, by error type; marked for translation in
#: ``render`` (where the catalogs are extracted from), which says them in the chat's language
API_ERRORS = render.API_ERRORS


def origin_of(prompt: str) -> str:
    """Who typed a prompt: telegram (an encoded message), peer (another session) or
    terminal."""
    head = prompt.lstrip()[:64]
    if head.startswith(chatprompt.PREFIX):
        return "telegram"
    if head.startswith("<cross-session-message"):
        return "peer"
    return "terminal"


def parse_task_notification(prompt: str) -> tuple[str, str] | None:
    """(task id, status) of a ``<task-notification>`` prompt, or None."""
    ident = _TASK_ID.search(prompt)
    if not ident:
        return None
    status = _STATUS.search(prompt)
    return ident.group(1), (status.group(1) if status else "")


def end_background(ctx: Ctx, sess: Session, task_id: str, status: str) -> bool:
    """A background command or agent reported its end; returns True if it was known."""
    now = ctx.now()
    cmd = sess.bg.get(task_id)
    if cmd is not None:
        if cmd.status == "running":
            cmd.status = status if status in ("completed", "failed", "killed") else "completed"
            cmd.ended_at = now
        ctx.registry.touch(sess)
        return True
    agent = sess.agents.get(task_id)
    if agent is not None:
        if agent.status in ("running", "paused", "lapsed"):
            # The notification fires when the agent stopped with no children of its own.
            finish_agent(ctx, sess, agent)
        return True
    return False


@router.on("UserPromptSubmit")
def on_user_prompt(ev: dict, sess: Session, ctx: Ctx) -> None:
    reg = ctx.registry
    prompt = ev.get("prompt")
    if not isinstance(prompt, str):
        prompt = ""
    prompt_id = ev.get("prompt_id")
    if not isinstance(prompt_id, str):
        prompt_id = ""
    if isinstance(ev.get("permission_mode"), str):
        sess.permission_mode = ev["permission_mode"]
    if sess.state == State.GONE:
        sess.gone_at, sess.end_reason = None, ""
    sess.compacting = False
    if prompt.lstrip().startswith(TASK_NOTIFICATION):
        # Claude waking up because background work ended: the same work continues.
        parsed = parse_task_notification(prompt)
        if parsed:
            end_background(ctx, sess, *parsed)
        task = sess.task
        if task is None:
            task = reg.open_task(sess, prompt_id=prompt_id, origin="continuation")
        task.ended_at = None
        task.prompt_id = prompt_id or task.prompt_id
        reg.set_state(sess, State.WAITING if sess.requests else State.WORKING)
        reg.touch(sess)
        return
    task = sess.task
    if task is not None and prompt_id and task.prompt_id == prompt_id:
        # A repeated datagram for the task already open: nothing new.
        return
    blocked_at, sess.prompt_blocked_at = sess.prompt_blocked_at, None
    if blocked_at is not None and 0 <= ctx.now() - blocked_at <= BLOCKED_PROMPT_SECONDS:
        # The hook blocked this prompt: nothing runs and no Stop comes, so it is no task
        # (and no "typed at the computer" echo of text a member sent).
        reg.touch(sess)
        return
    # A new prompt means the main loop's open dialogs were dismissed.
    requests.close(ctx, sess, [r for r in sess.requests if r.agent is None], after=False)
    origin = origin_of(prompt)
    if sess.pickup_authors and origin == "terminal":
        # The hook matched chat messages to this prompt just before forwarding it.
        origin = "telegram"
    # shown as the person wrote it: an encoded message without its first line
    task = reg.open_task(sess, prompt=chatprompt.words(prompt), prompt_id=prompt_id, origin=origin)
    task.authors, sess.pickup_authors = sess.pickup_authors, []
    reg.set_state(sess, State.WAITING if sess.requests else State.WORKING)
    who = _from_page(task.authors) if origin == "telegram" else ""
    if origin == "terminal" and sess.claude_session_id:
        # (a session that never started is junk on the control socket: nothing to show)
        ctx.emit(Prompted, sess, render.typed_at_computer(sess.label, prompt), task=task.seq)
    elif who:
        # the page's message is not in the chat: its copy there is what the answer replies to
        ctx.emit(Prompted, sess, render.sent_from_page(sess.label, who, task.prompt),
                 task=task.seq, by=who)


def _from_page(authors: list[dict]) -> str:
    """Who sent a task's prompt from the page (``@web``, a Mini App's member), when its
    first author did (the one the chat's answer replies to); "" when nobody did."""
    if not authors or str(authors[0].get("chat_id")) != str(PAGE_CHAT_ID):
        return ""
    names = []
    for author in authors:
        if str(author.get("chat_id")) == str(PAGE_CHAT_ID):
            name = str(author.get("label") or author.get("user_id") or "?")
            names.append(name if name.startswith("@") else "@" + name)
    return ", ".join(dict.fromkeys(names))


def _answer_from(ev: dict, sess: Session, ctx: Ctx) -> str | None:
    text = ev.get("last_assistant_message")
    if isinstance(text, str) and text.strip():
        return text
    path = ev.get("transcript_path") or sess.transcript_path
    if path:
        return ctx.read_answer(path)
    # AX Code keeps no transcript file and its Stop carries no text: its own store
    ident = ev.get("session_id") or sess.claude_session_id
    return ctx.read_ax_answer(ident) if isinstance(ident, str) and ident else None


def _late_stop(ev: dict, sess: Session) -> bool:
    # A Stop naming an earlier turn than the open task (events reordered):
    # its answer still counts, but it must not close the task now running.
    pid = ev.get("prompt_id")
    task = sess.task
    return bool(pid and task and task.ended_at is None and task.prompt_id and task.prompt_id != pid
                and task.origin != "continuation")


def _ends_seen_in_transcript(ev: dict, sess: Session, ctx: Ctx) -> None:
    # A background command that ended mid-task shows only in the saved conversation.
    # (Agents are left to their own events: a resumed agent may notify twice.)
    if not sess.running_bg():
        return
    for text in ctx.read_notifications(ev.get("transcript_path") or sess.transcript_path):
        parsed = parse_task_notification(text)
        if parsed and parsed[1] and parsed[0] in sess.bg:
            end_background(ctx, sess, *parsed)


@router.on("Stop")
def on_stop(ev: dict, sess: Session, ctx: Ctx) -> None:
    _ends_seen_in_transcript(ev, sess, ctx)
    answer = _answer_from(ev, sess, ctx)
    said = isinstance(ev.get("last_assistant_message"), str) and bool(
        ev["last_assistant_message"].strip())
    if _late_stop(ev, sess):
        deliver_answer(ctx, sess, answer, ev["prompt_id"], said=said)
        return
    finish_task(ctx, sess, ev, answer, said=said)


def _api_error(ev: dict) -> tuple[str, str]:
    """A StopFailure's error: (its type, its message)."""
    raw = ev.get("error")
    kind = ""
    detail = ""
    if isinstance(raw, dict):
        kind = str(raw.get("type") or raw.get("error_type") or "")
        detail = str(raw.get("message") or "")
    elif isinstance(raw, str):
        kind = raw
    kind = str(ev.get("error_type") or kind)
    detail = detail or str(ev.get("error_details") or ev.get("message") or "")
    return kind, detail


def api_error_key(ev: dict) -> str:
    """The ``API_ERRORS`` key of a StopFailure's error; "" for one aipager has no words for."""
    kind, detail = _api_error(ev)
    for key in API_ERRORS:
        if key in kind.lower() or key in detail.lower().replace(" ", "_"):
            return key
    return ""


def api_error_words(ev: dict) -> str:
    """A StopFailure's error in plain words (unknown ones keep their own text)."""
    key = api_error_key(ev)
    if key:
        return API_ERRORS[key]
    kind, detail = _api_error(ev)
    return f"The API returned an error: {detail or kind or 'unknown'}"


@router.on("Interrupt")
def on_interrupt(ev: dict, sess: Session, ctx: Ctx) -> None:
    """AX Code's and Codex's (Claude Code fires none): the person cut the turn short; no
    Stop and no answer follow.

    The task ends marked interrupted (its card says so), open dialogs close so a
    late tap types nothing, and messages held for the task go out.  An
    Interrupt with no task running (a second one, or one replayed after a
    restart) changes nothing.
    """
    task = sess.task
    if task is None or task.ended_at is not None:
        return
    finish_task(ctx, sess, ev, None, error=render.INTERRUPTED)


@router.on("StopFailure")
def on_stop_failure(ev: dict, sess: Session, ctx: Ctx) -> None:
    words = api_error_words(ev)
    finish_task(ctx, sess, ev, _answer_from(ev, sess, ctx), error=words)
    # a known error's key lets the chat and the page say it in their language (render.notice)
    key = api_error_key(ev)
    ctx.notice(sess, NoticeName.API_ERROR, render.api_error(sess.label, words),
               **({"error": key} if key else {}))
