"""Tool calls: card rows, background commands, diff previews.

A main-loop tool call is a row on the card; a subagent's call folds into that
agent's row (counted, and its summary becomes the agent's activity).
"""

from __future__ import annotations

from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.fields import text_field
from aipager.daemon.events.subagents import AGENT_TOOLS
from aipager.port.model import BgCommand, Row, Session, State, Task
from aipager.port.outputs import Diff
from aipager.texts.summaries import shorten, tool_summary

router = EventRouter("tools")

#: tools whose PostToolUse ends a background command named in their input
STOP_TOOLS = ("TaskStop", "KillShell")
DIFF_TOOLS = ("Write", "Edit", "MultiEdit")
#: lines of a diff preview
DIFF_LINES = 40


def activate(ctx: Ctx, sess: Session, ev: dict) -> Task:
    """The task a main-loop event belongs to; marks the session working when it is new work.

    A late event of a task that already stopped (same prompt_id) is attached to
    it without reopening; a main-loop tool with no open task means the prompt
    event was lost, so a task of unknown origin opens.
    """
    task = sess.task
    if task is not None and task.ended_at is None and sess.state is State.WORKING:
        return task  # the common case: more work of the running task
    reg = ctx.registry
    prompt_id = text_field(ev, "prompt_id")
    if task is not None and task.ended_at is not None and prompt_id and task.prompt_id == prompt_id:
        return task
    if sess.state == State.GONE:
        return task or reg.current_task(sess, prompt_id)
    was_open = task is not None and task.ended_at is None
    task = reg.current_task(sess, prompt_id)
    if not was_open or sess.state in (State.READY, State.UNKNOWN):
        if not sess.requests:
            reg.set_state(sess, State.WORKING)
    return task


def _row_id(ev: dict) -> str:
    # tool_use_id is always present in 2.1.x; the fallback keeps rows apart if not.
    return text_field(ev, "tool_use_id") or f"{text_field(ev, 'tool_name')}:{hash(repr(ev.get('tool_input')))}"


@router.on("PreToolUse")
def on_pre_tool(ev: dict, sess: Session, ctx: Ctx) -> None:
    tool = text_field(ev, "tool_name")
    agent_id = text_field(ev, "agent_id") or None
    task = sess.task if agent_id else activate(ctx, sess, ev)
    if agent_id:
        agent = sess.agents.get(agent_id)
        task_seq = agent.task if agent else (task.seq if task else 0)
    else:
        task_seq = task.seq if task else 0
    rid = _row_id(ev)
    if rid in sess.row_index or (tool in AGENT_TOOLS and not agent_id):
        # Repeats keep the first row; a main-loop Agent call is shown by its agent's row.
        return
    summary = tool_summary(tool, ev.get("tool_input"))
    sess.add_row(Row(id=rid, tool=tool, summary=summary, task=task_seq,
                     started_at=ctx.now(), agent=agent_id), ctx.registry.knobs.rows_cap)
    if agent_id:
        agent = sess.agents.get(agent_id)
        if agent is not None:
            agent.tool_count += 1
            agent.activity = summary
    if tool in DIFF_TOOLS and ctx.registry.knobs.diff_previews:
        diff = diff_preview(tool, ev.get("tool_input"))
        if diff:
            ctx.emit(Diff, sess, diff, tool=tool, row=rid)
    ctx.registry.touch(sess)


def _fix_row(ctx: Ctx, sess: Session, ev: dict, status: str, error: str = "") -> None:
    tool = text_field(ev, "tool_name")
    agent_id = text_field(ev, "agent_id") or None
    if not agent_id:
        activate(ctx, sess, ev)
    rid = _row_id(ev)
    row = sess.row_index.get(rid)
    now = ctx.now()
    if row is None:
        if tool in AGENT_TOOLS and not agent_id:
            return
        # Its PreToolUse was lost or comes later: the row appears already fixed.
        agent = sess.agents.get(agent_id) if agent_id else None
        seq = agent.task if agent else (sess.task.seq if sess.task else 0)
        row = Row(id=rid, tool=tool, summary=tool_summary(tool, ev.get("tool_input")), task=seq,
                  started_at=now, agent=agent_id)
        sess.add_row(row, ctx.registry.knobs.rows_cap)
        if agent is not None:
            agent.tool_count += 1
    row.status, row.ended_at, row.error = status, now, error
    ctx.registry.touch(sess)


def _background_id(response: object) -> str:
    if isinstance(response, dict):
        value = response.get("backgroundTaskId")
        if isinstance(value, str) and value:
            return value
    return ""


@router.on("PostToolUse")
def on_post_tool(ev: dict, sess: Session, ctx: Ctx) -> None:
    _fix_row(ctx, sess, ev, "ok")
    tool = text_field(ev, "tool_name")
    tool_input = ev.get("tool_input")
    if not isinstance(tool_input, dict):
        tool_input = {}
    agent_id = text_field(ev, "agent_id")
    bg_id = _background_id(ev.get("tool_response"))
    if bg_id and tool == "Bash" and not agent_id:
        track_background(ctx, sess, bg_id, str(tool_input.get("command") or ""))
    if tool in STOP_TOOLS:
        target = str(tool_input.get("task_id") or tool_input.get("shell_id") or "")
        cmd = sess.bg.get(target)
        if cmd is not None and cmd.status == "running":
            cmd.status, cmd.ended_at = "stopped", ctx.now()
            ctx.registry.touch(sess)


@router.on("PostToolUseFailure")
def on_post_tool_failure(ev: dict, sess: Session, ctx: Ctx) -> None:
    error = ev.get("error")
    _fix_row(ctx, sess, ev, "failed", error if isinstance(error, str) else "")


def track_background(ctx: Ctx, sess: Session, bg_id: str, command: str) -> None:
    """Follow a background Bash until its end is seen (or the tracking limit)."""
    if bg_id in sess.bg:
        return
    seq = sess.task.seq if sess.task else 0
    sess.bg[bg_id] = BgCommand(id=bg_id, command=shorten(command, 60), task=seq, started_at=ctx.now())
    cap = ctx.registry.knobs.bg_cap
    if len(sess.bg) > cap:
        ended = [b.id for b in sess.bg.values() if b.status != "running"] or list(sess.bg)
        for old in ended[: len(sess.bg) - cap]:
            del sess.bg[old]
    ctx.registry.touch(sess)


def diff_preview(tool: str, tool_input: object) -> str:
    """A short unified-style preview of a Write/Edit (``-`` old, ``+`` new lines)."""
    if not isinstance(tool_input, dict):
        return ""
    path = str(tool_input.get("file_path") or "")
    lines = [f"📝 {tool}: {path}"]
    if tool == "Write":
        lines += ["+ " + line for line in str(tool_input.get("content") or "").splitlines()]
    else:
        edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
        for edit in edits if isinstance(edits, list) else []:
            if not isinstance(edit, dict):
                continue
            lines += ["- " + line for line in str(edit.get("old_string") or "").splitlines()]
            lines += ["+ " + line for line in str(edit.get("new_string") or "").splitlines()]
    if len(lines) > DIFF_LINES + 1:
        lines = lines[: DIFF_LINES + 1] + [f"… {len(lines) - DIFF_LINES - 1} more lines"]
    return "\n".join(lines)
