"""Permission requests, questions (AskUserQuestion) and the Notification hook.

The card becomes the request: ``permission`` / ``question`` outputs carry what
the chat needs (buttons, the hook's reply address).  A request stays open until
the tool's PostToolUse (or the task's end) shows it was answered; then a
``request_closed`` output tells the chat that a late tap must type nothing.
"""

from __future__ import annotations

import hashlib

import orjson

from aipager.daemon import diffs, edits, requests
from aipager.texts import render
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.fields import text_field
from aipager.port.model import Request, Session, State
from aipager.port.outputs import NoticeName, Permission, Question, RequestUpdate
from aipager.texts.summaries import request_detail, shorten
from aipager.daemon.tasks import finish_task

router = EventRouter("permissions")

QUESTION_TOOL = "AskUserQuestion"


def input_digest(tool: str, tool_input: object) -> str:
    """Stable digest of a tool call's input: "the same dialog" test."""
    try:
        raw = orjson.dumps(tool_input, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        raw = repr(tool_input).encode()
    return hashlib.sha256(tool.encode() + b"\0" + raw).hexdigest()[:16]


def questions_of(ev: dict) -> list[dict]:
    """Every question of an AskUserQuestion call: ``{question, header, options, multi}``."""
    tool_input = ev.get("tool_input")
    if not isinstance(tool_input, dict):
        tool_input = {}
    raw = tool_input.get("questions")
    out = []
    for q in raw if isinstance(raw, list) else []:
        if not isinstance(q, dict):
            continue
        options = q.get("options")
        if not isinstance(options, list):
            options = []
        out.append({
            "question": str(q.get("question") or ""),
            "header": str(q.get("header") or ""),
            "options": [str(o.get("label", "")) if isinstance(o, dict) else str(o) for o in options],
            "multi": q.get("multiSelect") is True,
        })
    return out


def _question_from(ev: dict) -> tuple[str, list[str], bool]:
    qs = questions_of(ev)
    if not qs:
        return "", [], False
    first = qs[0]
    return first["question"], first["options"], first["multi"]


def _show_question(ctx: Ctx, sess: Session, ev: dict) -> None:
    agent_id = text_field(ev, "agent_id") or None
    task = sess.task
    if agent_id and (task is None or task.ended_at is not None):
        # A helper agent of Claude Code asking while no task runs: not Claude asking you.
        return
    digest = input_digest(QUESTION_TOOL, ev.get("tool_input"))
    shown = next((r for r in sess.requests if r.kind == "question" and r.input_digest == digest),
                 None)
    if shown is not None:
        if text_field(ev, "hook_event_name") == "PermissionRequest" and not shown.dialog_at:
            shown.dialog_at = ctx.now()  # the picker is on screen now
            ctx.registry.touch(sess)
        return
    text, options, multi = _question_from(ev)
    tool_use_id = text_field(ev, "tool_use_id")
    req = Request(key=f"q:{tool_use_id or digest}", kind="question", tool=QUESTION_TOOL,
                  opened_at=ctx.now(), tool_use_id=tool_use_id, agent=agent_id,
                  input_digest=digest, description=text, options=options,
                  questions=[q for q in questions_of(ev) if q["options"]])
    requests.open_request(ctx, sess, req)
    ctx.emit(Question, sess, render.question(sess.label, text), key=req.key, options=options,
             multi_select=multi, separate=req.separate, agent_id=agent_id,
             questions=questions_of(ev))


@router.on("PreToolUse")
def on_pre_tool(ev: dict, sess: Session, ctx: Ctx) -> None:
    if text_field(ev, "tool_name") == QUESTION_TOOL:
        _show_question(ctx, sess, ev)


def _suggests_rule(ev: dict) -> bool:
    # "Allow always" only when Claude Code offers a real rule to remember.
    suggestions = ev.get("permission_suggestions")
    return isinstance(suggestions, list) and any(
        isinstance(s, dict) and s.get("type") == "addRules" for s in suggestions
    )


def _answers(req: Request) -> tuple[list[str], list[str]]:
    """The request's buttons and the labels of its per-suggestion ones (``s0``…,
    ``render.scope_labels``): a lone rule is the one "Always allow"."""
    if req.terminal_only:
        return ["stop"], []
    buttons = ["allow", "deny", "stop"]
    if req.tool_input and req.reply_addr:
        buttons.append("edit")  # only the waiting hook takes an edited call
    if render.lone_rule(req):
        return buttons + ["always"], []
    scopes = render.scope_labels(req)
    return buttons + [f"s{i}" for i in range(len(scopes))], scopes


@router.on("PermissionRequest")
def on_permission_request(ev: dict, sess: Session, ctx: Ctx) -> None:
    tool = text_field(ev, "tool_name")
    if tool == QUESTION_TOOL:
        # Its PreToolUse already showed the question; show it only if that was lost.
        _show_question(ctx, sess, ev)
        return
    tool_input = ev.get("tool_input")
    digest = input_digest(tool, tool_input)
    agent_id = text_field(ev, "agent_id") or None
    tool_use_id = text_field(ev, "tool_use_id")
    request_id = text_field(ev, "aipager_request_id")
    reply_addr = text_field(ev, "aipager_reply_addr")
    for req in sess.requests:
        same_call = bool(tool_use_id) and req.tool_use_id == tool_use_id and req.agent == agent_id
        if req.kind == "permission" and req.tool == tool and (same_call or req.input_digest == digest):
            # The same dialog again: shown once; a new hook waiting takes over the reply.
            if request_id and request_id != req.request_id:
                req.request_id, req.reply_addr = request_id, reply_addr
                ctx.emit(RequestUpdate, sess, key=req.key, request_id=request_id,
                         reply_addr=reply_addr)
            return
    description = ""
    if isinstance(tool_input, dict):
        description = str(tool_input.get("description") or "")
    detail = request_detail(tool, tool_input)
    always = _suggests_rule(ev)
    suggestions = ev.get("permission_suggestions")
    req = Request(key=f"p:{tool_use_id or digest}:{agent_id or ''}", kind="permission", tool=tool,
                  opened_at=ctx.now(), tool_use_id=tool_use_id, agent=agent_id,
                  input_digest=digest, description=description, detail=detail,
                  always_available=always, request_id=request_id, reply_addr=reply_addr,
                  suggestions=suggestions if isinstance(suggestions, list) else [],
                  cwd=text_field(ev, "cwd") if tool == "Bash" else "",
                  tool_input=edits.keep(tool, tool_input),
                  subject=edits.subject(tool_input),
                  agent_name=text_field(ev, "agent_type")[:64] if agent_id else "")
    requests.open_request(ctx, sess, req)
    from aipager.daemon.events.tools import DIFF_TOOLS, diff_preview

    if tool not in DIFF_TOOLS:
        _emit_permission(ctx, sess, req)
        return
    # What a Write/Edit would change: the real diff against the file (made off the event
    # loop: up to 512 KB read and diffed), else its own lines.
    preview = diff_preview(tool, tool_input)
    out = _permission(ctx, sess, req, **({"preview": preview} if preview else {}))
    cwd, read = text_field(ev, "cwd") or sess.cwd, ctx.read_text

    def with_diff() -> dict[str, str]:
        diff = diffs.unified(tool, tool_input, cwd, read)
        return {"diff": diff} if diff else {}

    ctx.emit_completed(out, with_diff)


def reopen(ctx: Ctx, sess: Session, req: Request, **data: object) -> None:
    """Open ``req`` again and show it again (``data`` joins the ``permission`` output)."""
    requests.open_request(ctx, sess, req)
    _emit_permission(ctx, sess, req, **data)


def _emit_permission(ctx: Ctx, sess: Session, req: Request, **data: object) -> None:
    ctx.notifier.emit(_permission(ctx, sess, req, **data))


def _permission(ctx: Ctx, sess: Session, req: Request, **data: object) -> Permission:
    text = render.request(sess.label, req)
    buttons, scopes = _answers(req)
    return ctx.output(Permission, sess, text, key=req.key, tool=req.tool, detail=req.detail,
                      buttons=buttons, scopes=scopes, separate=req.separate,
                      request_id=req.request_id, reply_addr=req.reply_addr, agent_id=req.agent,
                      **data)


def _close_answered(ev: dict, sess: Session, ctx: Ctx) -> None:
    if not sess.requests:
        return
    tool = text_field(ev, "tool_name")
    tool_use_id = text_field(ev, "tool_use_id")
    agent_id = text_field(ev, "agent_id") or None
    digest = input_digest(tool, ev.get("tool_input"))

    def answered(req: Request) -> bool:
        return bool(
            (tool_use_id and req.tool_use_id == tool_use_id)
            or (req.tool == tool and req.input_digest == digest)
            # A request known only from a Notification: the next tool result of
            # the same requester shows the dialog was answered in the terminal.
            or (not req.tool and req.agent == agent_id)
        )

    requests.close_where(ctx, sess, answered)


router.on("PostToolUse", "PostToolUseFailure")(_close_answered)


# agent_needs_input: Claude Code 2.1.328 sends it when its auto mode stops to ask
# (seen in the TUI); for the person it is the same signal as permission_prompt.
@router.on("permission_prompt", "agent_needs_input")
def on_permission_prompt(ev: dict, sess: Session, ctx: Ctx) -> None:
    if sess.requests:
        return  # the dialog PermissionRequest already showed
    mode = text_field(ev, "permission_mode") or sess.permission_mode
    asks = text_field(ev, "notification_type") == "agent_needs_input"
    # Auto mode's dialogs offer choices the hook is never told, in an order of their own
    # (its Bash dialog lists "No" first): answering with Allow's key could pick something
    # else, so they are shown as answerable only in the terminal, which is true.
    auto = asks or mode == "auto"
    message = text_field(ev, "message") or (render.NEEDS_INPUT if asks else render.NEEDS_PERMISSION)
    agent = text_field(ev, "agent_id") or None
    # what it asks about: the requester's call that has not run yet (the Notification
    # names none); the request stays tool-less, closed by that requester's next result
    waiting = next((r for r in reversed(sess.rows)
                    if r.agent == agent and r.status == "running"), None)
    req = Request(key=f"n:{ctx.now():.6f}", kind="permission", tool="", opened_at=ctx.now(),
                  agent=agent, description=message, terminal_only=auto,
                  detail=waiting.summary if waiting is not None else "")
    requests.open_request(ctx, sess, req)
    _emit_permission(ctx, sess, req)


# worker_permission_prompt: Claude Code 2.1.328 sends it in the lead's session when a teammate
# running in its own tmux pane asks ("worker2 needs permission for Bash"); no hook of the lead
# can answer it (the lead's answers are signed), so the phone says where it can be answered
# and offers no button.
@router.on("worker_permission_prompt")
def on_worker_permission_prompt(ev: dict, sess: Session, ctx: Ctx) -> None:
    ctx.notice(sess, NoticeName.AT_COMPUTER,
               render.at_computer(sess.label, shorten(text_field(ev, "message"), 200)))


@router.on("idle_prompt")
def on_idle_prompt(ev: dict, sess: Session, ctx: Ctx) -> None:
    if sess.requests:
        if not sess.reminded:
            sess.reminded = True
            ctx.notice(sess, NoticeName.STILL_WAITING, render.still_waiting(sess.label))
        return
    if sess.state in (State.WORKING, State.UNKNOWN):
        # Claude is idle but its Stop never arrived: finish the task from the transcript.
        finish_task(ctx, sess, ev, ctx.read_answer(text_field(ev, "transcript_path") or sess.transcript_path))
