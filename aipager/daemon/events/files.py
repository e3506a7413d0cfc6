"""Files Claude sends to the chat: a SendUserFile that ran (its PostToolUse; the hook
refused the others) becomes a ``files`` output.  Its files are checked again and copied
at once off the event loop (``Ctx.take_files``), and the output carries the copies and
the refusals; the surfaces send the copies after the task's answer."""

from __future__ import annotations

import os

from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.port.model import Session
from aipager.port.outputs import Files

router = EventRouter("files")

SEND_TOOL = "SendUserFile"


def named_files(tool_input: object, cwd: str) -> list[str]:
    """The absolute paths a SendUserFile names (relative ones against ``cwd``)."""
    from aipager.policy import _match_py, sendfile

    try:
        names = sendfile.requested_files(tool_input)
    except _match_py.BadInput:
        return []
    out = []
    for name in names:
        if not isinstance(name, str) or not name:
            continue
        if not os.path.isabs(name):
            if not cwd:
                continue
            name = os.path.join(cwd, name)
        out.append(os.path.normpath(name))
    return out


@router.on("PostToolUse")
def on_sent_files(ev: dict, sess: Session, ctx: Ctx) -> None:
    if ev.get("tool_name") != SEND_TOOL:
        return
    tool_input = ev.get("tool_input")
    cwd = ev.get("cwd")
    if not isinstance(cwd, str):
        cwd = sess.cwd
    files = named_files(tool_input, cwd)
    if not files:
        return
    caption = tool_input.get("caption") if isinstance(tool_input, dict) else ""
    out = ctx.output(Files, sess, caption if isinstance(caption, str) else "", files=files,
                     cwd=cwd, task=sess.task.seq if sess.task else 0,
                     tool_use_id=ev.get("tool_use_id"))
    take, name = ctx.take_files, sess.name
    ctx.emit_completed(out, lambda: take(name, files, cwd))
