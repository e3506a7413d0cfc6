"""A tap on a permission request, sent back to the hook that waits for it.

The daemon's side of the hook's reply wait (``aipager.hookpy.reply`` has the
protocol): a PermissionRequest event carries ``aipager_reply_addr`` and
``aipager_request_id`` while its hook waits; one datagram
``{"v":1,"request_id":..,"decision":{..}}`` on that address becomes Claude
Code's decision, so its dialog never shows.

- ``decision_for`` builds the decision for a tap (pure).
- ``send_reply`` sends it (one non-blocking datagram; False when nobody waits).
- ``answer`` applies a tap to the registry: sent to the hook (the request is
  closed at once: a deny has no PostToolUse to close it), or the caller must
  type keys into the terminal dialog (the hook timed out or is gone), or
  nothing at all (already answered, or no such open request).
- ``late`` handles the one race: the tap was sent just as the hook gave up
  (its ``permission_reply_timeout`` names a request closed by ``answer``):
  the dialog is in the terminal after all, so the request opens again.
"""

from __future__ import annotations

import socket
from typing import Callable

import orjson

from aipager.proto import wire
from aipager.daemon import edits, requests, tasks
from aipager.texts import render
from aipager.daemon.audit import iso_seconds
from aipager.daemon.dispatch import Ctx
from aipager.daemon.events.forms import show_form
from aipager.daemon.events.permissions import reopen
from aipager.port.model import (HOOK_ANSWERED_KEPT, SCOPED_TYPES, Request, Row, Session,
                                  always_permissions)
from aipager.port.outputs import NoticeName
from aipager.texts.summaries import tool_summary

#: the taps a permission request takes
KINDS = ("allow", "allow_always", "deny", "stop")

#: ``answer`` results
#: the hook got the decision: Claude Code goes on without its dialog
VIA_HOOK = "hook_decision"
#: nobody waits on the reply socket: the caller types the keys into the dialog
VIA_KEYS = "keystroke_fallback"
#: the request was already answered (a second tap): type nothing
ALREADY = "already_answered"
#: no such open request (answered in the terminal, task over): type nothing
GONE = "gone"
#: an edited call and no hook waits to take it (keys cannot carry an edit): nothing done
NO_HOOK = "no_hook"


def reply_datagram(request_id: str, decision: dict) -> bytes:
    return orjson.dumps({"v": 1, "request_id": request_id, "decision": decision})


def _fits(request_id: str, decision: dict) -> bool:
    return _fits_data(reply_datagram(request_id, decision))


def _fits_data(data: bytes) -> bool:
    # the hook ignores bigger or more nested replies (hookpy/reply.py)
    return len(data) <= wire.REPLY_MAX and data.count(b"{") + data.count(b"[") <= wire.MAX_BRACKETS


#: the longest deny reason handed to Claude (a reply datagram must fit; a sentence is enough)
REASON_MAX = 1000


def decision_for(kind: str, request: Request, who_label: str, reason: str = "",
                 suggestion: int | None = None, edited_input: dict | None = None) -> dict:
    """Claude Code's PermissionRequest decision for one tap.

    Args:
        kind: ``allow``, ``allow_always``, ``deny`` or ``stop``.
        request: the open request (its ``suggestions`` feed "Allow always").
        who_label: who tapped, as the deny message names them (e.g. ``@alice``).
        reason: a deny's reason in the person's words (a reply to the request).
        suggestion: for ``allow_always``, the index of the one suggestion to take
            (in ``always_permissions(…, SCOPED_TYPES)`` order); None takes them all
            but a mode switch.
        edited_input: for ``allow``, the tool input as a person corrected it (checked
            by the policy before: ``edits.refusal``): ``updatedInput``.

    Returns:
        ``{"behavior": "allow"}``; for ``allow_always`` plus
        ``updatedPermissions`` (the request's addRules/addDirectories
        suggestions; plain allow when there are none or they would not fit a
        reply); for ``deny`` a ``message`` naming who and ``interrupt`` false; for
        ``stop`` the same with ``interrupt`` true (the task ends).

    Raises:
        ValueError: an unknown kind, or an edited input with another kind or too big for
            a reply (never sent as a plain allow: that would run the call unedited).
    """
    if edited_input is not None:
        decision = {"behavior": "allow", "updatedInput": edited_input}
        if kind != "allow":
            msg = "only an allow takes an edited input"
            raise ValueError(msg)
        if not _fits(request.request_id, decision):
            msg = "the edited call is too big to send to Claude Code"
            raise ValueError(msg)
        return decision
    if kind == "allow":
        return {"behavior": "allow"}
    if kind == "allow_always":
        perms = always_permissions(request.suggestions)
        if suggestion is not None:
            # one of Claude Code's suggestions, with the destination it names
            offered = always_permissions(request.suggestions, SCOPED_TYPES)
            perms = offered[suggestion:suggestion + 1] if 0 <= suggestion < len(offered) else []
        decision = {"behavior": "allow", "updatedPermissions": perms}
        if perms and _fits(request.request_id, decision):
            return decision
        return {"behavior": "allow"}
    if kind == "deny":
        message = f"Denied via aipager by {who_label}"
        if reason.strip():
            # Claude reads why, and can adapt instead of guessing
            message += f": {reason.strip()[:REASON_MAX]}"
        return {"behavior": "deny", "message": message, "interrupt": False}
    if kind == "stop":
        # interrupt: Claude Code ends the turn, with no further model call (a plain deny
        # lets Claude read the refusal and carry on)
        return {"behavior": "deny", "message": f"Stopped via aipager by {who_label}",
                "interrupt": True}
    msg = f"unknown answer {kind!r}: expected one of {', '.join(KINDS)}"
    raise ValueError(msg)


def remembered(decision: dict, suggestion: int | None) -> dict:
    """The one suggestion a scoped answer's ``decision`` hands Claude Code to remember
    (``suggestion``: which button), else {} (another answer, or it did not fit a reply)."""
    chosen = decision.get("updatedPermissions") if suggestion is not None else None
    return dict(chosen[0]) if isinstance(chosen, list) and len(chosen) == 1 \
        and isinstance(chosen[0], dict) else {}


def send_reply(reply_addr: str, request_id: str, decision: dict) -> bool:
    """Send the decision to the hook waiting on ``reply_addr``; never blocks.

    Returns:
        True when the datagram was queued on the hook's socket; False when
        nobody waits there any more (timed out, gone) or it cannot be sent.
    """
    if not reply_addr or not request_id:
        return False
    return _send_raw(reply_addr, reply_datagram(request_id, decision))


Sender = Callable[[str, str, dict], bool]


def find(ctx: Ctx, session: str, key: str) -> tuple[Session, Request] | None:
    """Permission request ``key`` of ``session`` with its session, or None."""
    sess = ctx.registry.get(session)
    if sess is None:
        return None
    req = next((r for r in sess.requests if r.key == key and r.kind == "permission"), None)
    return None if req is None else (sess, req)


def answer(ctx: Ctx, session: str, key: str, kind: str, who: str,
           send: Sender = send_reply, *, who_id: int | None = None, role: str = "",
           reason: str = "", suggestion: int | None = None,
           edited_input: dict | None = None) -> str:
    """Apply one tap on permission request ``key`` of ``session`` (``answer_found``)."""
    return answer_found(ctx, find(ctx, session, key), kind, who, send, who_id=who_id, role=role,
                        reason=reason, suggestion=suggestion, edited_input=edited_input)


def answer_found(ctx: Ctx, found: tuple[Session, Request] | None, kind: str, who: str,
                 send: Sender = send_reply, *, who_id: int | None = None, role: str = "",
                 reason: str = "", suggestion: int | None = None,
                 edited_input: dict | None = None) -> str:
    """Apply one tap on a permission request ``find`` returned (None: gone).

    Returns:
        ``VIA_HOOK``: the waiting hook took the decision; the request is closed
        (``request_closed`` output with ``via``/``answer``/``who``).
        ``VIA_KEYS``: no hook waits; the caller must answer the terminal dialog
        with keys.  The request stays open (its PostToolUse closes it) but is
        marked, so a later tap gets ``ALREADY``.
        ``ALREADY`` / ``GONE``: type nothing.
        ``NO_HOOK``: an edited input and no hook took it: nothing done, nothing claimed.
        Both VIA_* results write an audit record (``permission_answer``).

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in KINDS:
        msg = f"unknown answer {kind!r}: expected one of {', '.join(KINDS)}"
        raise ValueError(msg)
    if found is None:
        return GONE
    sess, req = found
    if req.answered:
        return ALREADY
    decision = decision_for(kind, req, who, reason, suggestion, edited_input)
    if req.reply_addr and send(req.reply_addr, req.request_id, decision):
        via = VIA_HOOK
        req.answered = kind
        sess.hook_answered.append(req)
        del sess.hook_answered[:-HOOK_ANSWERED_KEPT]
        ran_with = _edited_text(req, edited_input)
        if ran_with:
            _show_edit(sess, req, edited_input, who)
        # a scoped button's verdict names what it remembered, not a bare "Always allowed"
        requests.close(ctx, sess, [req], via=via, answer=kind, who=who,
                       scope=remembered(decision, suggestion) or None, edited=ran_with)
        task = sess.task
        if kind == "stop" and req.agent is None and task is not None and task.ended_at is None:
            # a deny with interrupt ends the turn, and Claude Code says so by no hook (no
            # Stop follows; a message held for the dialog, typed next, hides the
            # interruption in the transcript): the task ends here, interrupted
            tasks.finish_task(ctx, sess, {}, None, error=render.INTERRUPTED)
    elif edited_input is not None:
        return NO_HOOK  # keys would allow the call as Claude asked it, not as edited
    else:
        # The daemon presses the dialog's keys next (``Daemon.answer_request``).
        via = VIA_KEYS
        requests.claim_for_keys(ctx, sess, req, kind, who)
    ctx.audit.write({"ts": iso_seconds(ctx.now()), "session": sess.name, "action": "permission_answer",
                     "label": sess.label, "tool": req.tool, "answer": kind, "via": via, "who": who,
                     **({"who_id": who_id, "role": role} if who_id is not None else {}),
                     **({"reason": reason.strip()[:REASON_MAX]} if reason.strip() else {}),
                     **({"scope": decision.get("updatedPermissions")}
                        if suggestion is not None else {}),
                     **({"edited_input": edited_input} if edited_input is not None else {}),
                     "task": sess.task.seq if sess.task else None})
    ctx.registry.touch(sess)
    return via


def _edited_text(req: Request, edited_input: dict | None) -> str:
    """The corrected command or path an edited allow runs with ("" for any other answer)."""
    if edited_input is None:
        return ""
    value = edited_input.get(edits.EDIT_FIELDS.get(req.tool, ""))
    return value if isinstance(value, str) else ""


#: what an edited call's row on the card ends with: who corrected it
EDITED_MARK = " · ✏️ "


def _show_edit(sess: Session, req: Request, edited_input: dict | None, who: str) -> None:
    """The call's row on the card names what runs, as corrected, and who corrected it; with
    no ``edited_input``, as Claude asked it again (a tap the hook never read)."""
    asked = tool_summary(req.tool, req.tool_input)
    if edited_input is None:
        def shows(row: Row) -> bool:
            return EDITED_MARK in row.summary
    else:
        def shows(row: Row) -> bool:
            return row.summary == asked
    # Claude Code's PermissionRequest names no tool_use_id: the call's row is the running
    # one of the same requester and tool that shows it
    row = sess.row_index.get(req.tool_use_id) if req.tool_use_id else next(
        (r for r in reversed(sess.rows) if r.status == "running" and r.agent == req.agent
         and r.tool == req.tool and shows(r)), None)
    if row is None:
        return
    row.summary = asked if edited_input is None else \
        f"{tool_summary(req.tool, edited_input)}{EDITED_MARK}{who}"


def form_datagram(request_id: str, action: str, content: dict | None) -> bytes:
    """An elicitation's answer, as the waiting hook reads it (``hookpy.reply``): the
    action, and the checked values only with accept."""
    answer: dict = {"action": action}
    if action == "accept" and content is not None:
        answer["content"] = content
    return orjson.dumps({"v": 1, "request_id": request_id, "elicitation": answer})


def answer_form(ctx: Ctx, sess: Session, req: Request, action: str, content: dict | None,
                who: str, *, who_id: int | None = None, role: str = "") -> str:
    """Send a form's answer to the hook that waits for it (an MCP elicitation).

    Returns:
        ``VIA_HOOK`` (the request is closed), ``ALREADY``, or ``NO_HOOK``: nobody waits any
        more, the form is in the terminal (keys cannot fill it in: nothing is done).

    Raises:
        ValueError: the answer does not fit one reply datagram.
    """
    if req.answered:
        return ALREADY
    data = form_datagram(req.request_id, action, content)
    if not _fits_data(data):
        msg = "the answer is too long to send to Claude Code"
        raise ValueError(msg)
    if not req.reply_addr or not _send_raw(req.reply_addr, data):
        return NO_HOOK
    req.answered = f"form_{action}"
    sess.hook_answered.append(req)
    del sess.hook_answered[:-HOOK_ANSWERED_KEPT]
    requests.close(ctx, sess, [req], via=VIA_HOOK, answer=req.answered, who=who)
    # the values stay out of the audit (a form may ask for anything): which fields were
    # answered is enough to say who told the server what kind of thing
    ctx.audit.write({"ts": iso_seconds(ctx.now()), "session": sess.name, "action": "form_answer",
                     "label": sess.label, "server": req.detail, "answer": action,
                     "fields": sorted(content or {}) if action == "accept" else [],
                     "via": VIA_HOOK, "who": who,
                     **({"who_id": who_id, "role": role} if who_id is not None else {}),
                     "task": sess.task.seq if sess.task else None})
    ctx.registry.touch(sess)
    return VIA_HOOK


def _send_raw(reply_addr: str, data: bytes) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.sendto(data, socket.MSG_DONTWAIT, reply_addr)
        except OSError:
            return False
    return True


def late(ctx: Ctx, sess: Session, request_id: str) -> bool:
    """A ``permission_reply_timeout`` for a request ``answer`` closed: the hook never read the tap.

    The request opens again, unanswered and without a reply address (a tap now
    means keys), and is shown again: the ``permission`` output carries
    ``late_answer`` (the tap that got lost) and a ``late_tap`` notice says so.

    Returns:
        Whether ``request_id`` was such a request.
    """
    req = next((r for r in sess.hook_answered if r.request_id == request_id), None)
    if req is None:
        return False
    sess.hook_answered.remove(req)
    lost, req.answered, req.reply_addr = req.answered, "", ""
    if req.kind == "permission" and req.tool_input:
        _show_edit(sess, req, None, "")  # an edit it carried was never read either
    if req.kind == "form":
        # the form is in the terminal now: shown again, answerable there only
        requests.open_request(ctx, sess, req)
        show_form(ctx, sess, req)
    else:
        reopen(ctx, sess, req, late_answer=lost)
    ctx.notice(sess, NoticeName.LATE_TAP, render.late_tap(sess.label, lost), lost=lost)
    return True
