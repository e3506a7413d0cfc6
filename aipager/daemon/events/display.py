"""MessageDisplay: Claude's own words as they reach the screen."""

from __future__ import annotations

from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.port.model import Session
from aipager.texts.summaries import shorten

router = EventRouter("display")

#: commentary kept per task (the card shows its tail)
COMMENTARY_KEEP = 4000


@router.on("MessageDisplay")
def on_message_display(ev: dict, sess: Session, ctx: Ctx) -> None:
    delta = ev.get("delta")
    if not isinstance(delta, str) or not delta:
        return
    agent_id = ev.get("agent_id")
    if agent_id:
        # A subagent's text is never Claude's: it only becomes that agent's activity.
        agent = sess.agents.get(agent_id)
        if agent is not None and delta.strip():
            agent.activity = shorten(delta.strip().splitlines()[-1])
            ctx.registry.touch(sess)
        return
    task = sess.task
    if task is None or task.ended_at is not None:
        # Claude Code may send the answer's display after its Stop: the answer is out and
        # the card is final (quoting it there would say it twice).
        return
    message_id = ev.get("message_id")
    if not isinstance(message_id, str):
        message_id = ""
    if message_id != task.commentary_id:
        task.commentary_id = message_id
        task.commentary = delta
    else:
        task.commentary = (task.commentary + delta)[-COMMENTARY_KEEP:]
    ctx.registry.touch(sess)
