"""Ending a task: state, answer delivery (exactly once), the messages that waited.

Shared by Stop, StopFailure and an idle_prompt that stands in for a lost Stop;
``catch_up`` (at start) and ``catch_interrupts`` (every tick) end tasks whose
end only the saved conversation shows.
"""

from __future__ import annotations

import hashlib
from typing import Callable

from aipager.daemon import requests
from aipager.texts import render
from aipager.daemon.dispatch import Ctx
from aipager.port.model import Session, State
from aipager.port.outputs import Answer


def answer_keys(sess: Session, prompt_id: str, text: str) -> tuple[str, str]:
    """(task key, text key) recorded for a delivered answer.

    The task key (``p:<prompt_id>``) stops a second delivery for the same turn
    even when the transcript text differs slightly from ``last_assistant_message``;
    the text key covers events without a prompt_id.
    """
    digest = hashlib.sha256(f"{sess.claude_session_id}\0{text}".encode()).hexdigest()[:20]
    return (f"p:{prompt_id}" if prompt_id else "", f"t:{digest}")


def deliver_answer(ctx: Ctx, sess: Session, text: str | None, prompt_id: str, *,
                   said: bool = False) -> bool:
    """Emit Claude's answer unless this turn's answer already went out.

    Args:
        said: ``text`` is what a Stop said (its ``last_assistant_message``), not read from
            the transcript.  A turn whose answer a Stop already said, and that a Stop ends
            again with other words, is a new turn under the same prompt (the lead of an
            agent team answering a teammate's report: Claude Code 2.1.328 fires no
            UserPromptSubmit for it): its answer goes out too.

    Returns:
        True when an ``answer`` output was emitted.
    """
    if not text or not text.strip():
        return False
    task_key, text_key = answer_keys(sess, prompt_id, text)
    said_key = f"s:{prompt_id}" if prompt_id and said else ""
    again = bool(said_key) and said_key in sess.delivered and text_key not in sess.delivered
    if not again and ((task_key and task_key in sess.delivered)
                      or (not task_key and text_key in sess.delivered)):
        return False
    body = text
    status = render.live_status(sess)
    if status:
        body = f"{text}\n\n{status}"
    seq = sess.task.seq if sess.task else 0
    ctx.emit(Answer, sess, body, digest=text_key, task=seq, prompt_id=prompt_id)
    cap = ctx.registry.knobs.delivered_cap
    for key in (task_key, text_key, said_key):
        if key and key not in sess.delivered:
            sess.delivered.append(key)
    while len(sess.delivered) > cap:
        sess.delivered.popleft()
    # A delivered answer must reach disk before anything else happens: after a
    # restart it must neither be lost nor sent twice.
    ctx.registry.save_now = True
    return True


def close_rows(sess: Session, now: float) -> None:
    """The main loop's tool calls still running when its task ends never finished (denied,
    stopped, blocked, or their end was lost): they show as ended, not ⏳, on the final card.
    An agent's rows are left to the agent, which may outlive the turn."""
    for row in sess.rows:
        if row.status == "running" and row.agent is None:
            row.status, row.ended_at = "ended", now


def finish_task(ctx: Ctx, sess: Session, ev: dict, answer: str | None, error: str = "",
                *, said: bool = False) -> None:
    """The task ended: READY, card fixed, answer once, held messages released."""
    reg = ctx.registry
    now = ctx.now()
    task = sess.task
    if task is not None and task.ended_at is None:
        task.ended_at = now
    if task is not None and error:
        task.error = error
    close_rows(sess, now)
    # The lead's dialogs end with its turn; a teammate's (an agent team's, a background
    # agent's) outlives it and stays open, answerable, until its own tool runs.
    requests.close(ctx, sess, [r for r in sess.requests if r.agent is None], after=False)
    if sess.state != State.GONE:
        reg.set_state(sess, State.WAITING if sess.requests else State.READY)
    reg.touch(sess)
    if task is not None and answer and task.commentary.strip() \
            and answer.strip().endswith(task.commentary.strip()):
        # Claude's latest words are the answer: it says them under the card, which would
        # otherwise quote them just above it.
        task.commentary = ""
    deliver_answer(ctx, sess, answer, ev.get("prompt_id") or (task.prompt_id if task else ""),
                   said=said)
    # a message held for a dialog still open stays held: typed, it would answer it
    requests.release_held(ctx, sess, only="task" if sess.requests else "")
    # The final card follows its answer at once instead of at the next tick.
    reg.flush_now = True


def catch_up(ctx: Ctx, finished_answer: Callable[[str], str | None],
             still_open: Callable[[str], bool]) -> list[str]:
    """At start: finish tasks whose Stop came while the daemon was down.

    Both signs are required: the hook removed the session's open-task mark
    (it does at Stop) and the saved conversation ends with Claude's answer.
    Either alone can mislead (a mark left by a crash; an answer block written
    just before a tool call).

    Args:
        finished_answer: transcript path → the answer if that conversation's
            turn ended (``transcript.finished_answer``), else None.
        still_open: session name → whether its open-task mark exists.

    Returns:
        Names of the sessions whose task was finished.
    """
    done = []
    for sess in list(ctx.registry):
        task = sess.task
        if sess.state not in (State.WORKING, State.UNKNOWN) or task is None or task.ended_at is not None:
            continue
        if still_open(sess.name):
            continue
        answer = finished_answer(sess.transcript_path)
        if answer:
            finish_task(ctx, sess, {"prompt_id": task.prompt_id}, answer)
            done.append(sess.name)
    return done


def catch_interrupts(ctx: Ctx, interrupted_at: Callable[[str], float | None],
                     changed: Callable[[Session], bool]) -> list[str]:
    """End tasks that Esc cut short (in the terminal, or ``/stop`` from the chat).

    Claude Code fires no hook for an interrupted turn: no Stop, no answer; only
    its saved conversation shows it.  A running or waiting task ends marked
    interrupted (as AX Code's Interrupt event does) when the transcript's last
    turn is an interruption written after the task started.

    Args:
        interrupted_at: transcript path → when the last turn was interrupted
            (``transcript.interrupted_at``), else None.
        changed: whether the session's transcript changed since last asked
            (unchanged ones are not read again).

    Returns:
        Names of the sessions whose task was ended.
    """
    done = []
    for sess in list(ctx.registry):
        task = sess.task
        if (sess.state not in (State.WORKING, State.WAITING) or task is None
                or task.ended_at is not None or not sess.transcript_path or not changed(sess)):
            continue
        at = interrupted_at(sess.transcript_path)
        if at is not None and at >= task.started_at:
            finish_task(ctx, sess, {"prompt_id": task.prompt_id}, None, error=render.INTERRUPTED)
            done.append(sess.name)
    return done
