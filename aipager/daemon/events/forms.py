"""An MCP server's form (Claude Code's ``Elicitation`` hook) becomes a request on the phone.

The hook waits for the answer (``hookpy.reply``: up to 90 s) and hands Claude Code the
values, so its own form never shows.  The request is the server's tool call's: that call's
PostToolUse closes it (answered from the phone, or in the terminal after the hook gave up),
as does the end of its task.  A form the phone cannot ask (nested fields, a URL to open:
``forms.fields_of`` is None) is shown as waiting in the terminal, with nothing to tap.
"""

from __future__ import annotations

from aipager.daemon import requests
from aipager.texts import render
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.fields import text_field
from aipager.daemon.events.permissions import input_digest
from aipager.port.model import Request, Session
from aipager.port.outputs import Form
from aipager.texts.summaries import shorten
from aipager.port import forms

router = EventRouter("forms")

#: the longest message of a server shown
MESSAGE_MAX = 1000


@router.on("Elicitation")
def on_elicitation(ev: dict, sess: Session, ctx: Ctx) -> None:
    server = text_field(ev, "mcp_server_name")[:100]
    message = shorten(text_field(ev, "message"), MESSAGE_MAX)
    schema = ev.get("requested_schema")
    fields = forms.fields_of(schema) if text_field(ev, "mode") in ("", "form") else None
    request_id = text_field(ev, "aipager_request_id")
    digest = input_digest(f"elicitation:{server}", {"message": message, "schema": schema})
    if any(r.kind == "form" and r.input_digest == digest and not r.answered
           for r in sess.requests):
        return  # the same form again (a journal replay): shown once
    agent = text_field(ev, "agent_id") or None
    # the server's tool call that is waiting for this form: its result closes the request
    prefix = f"mcp__{server}__"
    call = next((r for r in reversed(sess.rows)
                 if r.status == "running" and r.tool.startswith(prefix)), None)
    req = Request(key=f"f:{request_id or digest}", kind="form",
                  tool=call.tool if call is not None else "", opened_at=ctx.now(),
                  tool_use_id=call.id if call is not None else "", agent=agent,
                  input_digest=digest, description=message, detail=server,
                  request_id=request_id,
                  reply_addr=text_field(ev, "aipager_reply_addr") if fields is not None else "",
                  form=[f.as_json() for f in fields or ()],
                  terminal_only=fields is None)
    requests.open_request(ctx, sess, req)
    show_form(ctx, sess, req)


def show_form(ctx: Ctx, sess: Session, req: Request) -> None:
    """The ``form`` output of ``req`` (again: its hook stopped waiting)."""
    text = render.form(sess.label, req.detail, req.description, bool(req.reply_addr))
    ctx.emit(Form, sess, text, key=req.key, server=req.detail, message=req.description,
             fields=list(req.form) if req.reply_addr else [], request_id=req.request_id,
             reply_addr=req.reply_addr, agent_id=req.agent or "", separate=req.separate)
