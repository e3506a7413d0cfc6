"""The ``statusline`` datagram: model, context %, cost, tokens, lines; context warning.

Accepts the flat figures the status-line helper sends (``context_pct``,
``cost_usd``, ``model_name`` …) and, as a fallback, Claude Code's own nested
status JSON (``model.display_name``, ``context_window.used_percentage`` …).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from aipager.proto import wire
from aipager.texts import render
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.events import compaction
from aipager.port.model import Session
from aipager.port.outputs import NoticeName

router = EventRouter("statusline")
log = logging.getLogger("aipager.daemon")

#: the context warning threshold, percent
WARN_AT = 80.0


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _dig(ev: dict, *path: str) -> Any:
    cur: Any = ev
    for key in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


#: a cost is kept to a millionth of a dollar: Claude Code sums floats (0.14839999999999992),
#: and what ``aipager status --json`` shows should read as the amount it is
COST_PLACES = 6


def _cost(value: Any) -> float | None:
    number = _num(value)
    return round(number, COST_PLACES) if number is not None else None


_FLAT = ("context_pct", "cost_usd", "total_input", "total_output", "lines_added", "lines_removed")


def figures(ev: dict) -> dict[str, Any]:
    """The figures of a statusline datagram, whichever shape it has."""
    if "model_name" in ev or "context_pct" in ev:
        # The status-line helper's flat datagram: the common (hot) case.
        out = {key: ev.get(key) for key in _FLAT}
        out["model"] = ev.get("model_name") if isinstance(ev.get("model_name"), str) else None
        out["context_pct"] = _num(out["context_pct"])
        out["cost_usd"] = _cost(out["cost_usd"])
        return out
    model = ev.get("model_name") or _dig(ev, "model", "display_name") or _dig(ev, "model", "id")
    out = {
        "model": model if isinstance(model, str) else None,
        "context_pct": _num(ev.get("context_pct")) if "context_pct" in ev
        else _num(_dig(ev, "context_window", "used_percentage")),
        "cost_usd": _cost(ev.get("cost_usd")) if "cost_usd" in ev
        else _cost(_dig(ev, "cost", "total_cost_usd")),
        "total_input": ev.get("total_input", _dig(ev, "context_window", "total_input_tokens")),
        "total_output": ev.get("total_output", _dig(ev, "context_window", "total_output_tokens")),
        "lines_added": ev.get("lines_added", _dig(ev, "cost", "total_lines_added")),
        "lines_removed": ev.get("lines_removed", _dig(ev, "cost", "total_lines_removed")),
    }
    return out


def _status_file_problem(ev: dict, sess: Session, ctx: Ctx) -> None:
    # The helper adds the errno only when the write failed: say it once, not every redraw.
    code = ev.get("status_file_errno")
    problem = ""
    if code.__class__ is int and 0 < code < 4096:
        problem = f"cannot write the status file ({os.strerror(code)})"
    if problem == sess.status_file_error:
        return
    if problem:
        log.warning("%s: the status-line helper %s (no token counts until it can)",
                    sess.name, problem)
    else:
        log.info("%s: the status file is written again", sess.name)
    sess.status_file_error = problem
    ctx.registry.touch(sess)


@router.on(wire.STATUSLINE)
def on_statusline(ev: dict, sess: Session, ctx: Ctx) -> None:
    _status_file_problem(ev, sess, ctx)
    got = figures(ev)
    before = (sess.model, sess.context_pct, sess.cost_usd)
    if got["model"]:
        sess.model = got["model"]
    if got["context_pct"] is not None:
        sess.context_pct = got["context_pct"]
    if got["cost_usd"] is not None:
        sess.cost_usd = got["cost_usd"]
    for key in ("total_input", "total_output", "lines_added", "lines_removed"):
        if got[key].__class__ is int:  # not a bool
            setattr(sess, key, got[key])
    if not sess.claude_session_id and isinstance(ev.get("session_id"), str):
        sess.claude_session_id = ev["session_id"]
    pct = sess.context_pct
    if pct is not None:
        # The compacted line when SessionStart(compact) was lost or read a stale figure.
        compaction.report_if_dropped(ctx, sess)
        if pct >= WARN_AT and not sess.context_warned and not sess.compacting:
            sess.context_warned = True
            ctx.notice(sess, NoticeName.CONTEXT_WARNING, render.context_warning(sess.label, pct), pct=pct)
    if (sess.model, sess.context_pct, sess.cost_usd) != before:
        ctx.registry.touch(sess)
