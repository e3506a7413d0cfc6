"""SubagentStart / SubagentStop, Agent calls, nesting, pauses and continuations.

Claude Code does not say which call started an agent.  A SubagentStart is
paired with the waiting Agent/Task calls of its type: when they all came from
one caller (the main loop or one agent) the new agent is attached to it at
once; when they came from different agents nothing is attached until the
caller's own PostToolUse names the started agent.  A call's description is
used only when exactly one call of that type waits.
"""

from __future__ import annotations

from aipager.daemon import requests
from aipager.daemon.dispatch import Ctx, EventRouter
from aipager.daemon.fields import text_field
from aipager.port.model import Agent, AgentCall, Session
from aipager.texts.summaries import shorten

router = EventRouter("subagents")

AGENT_TOOLS = ("Agent", "Task")
#: Claude Code's default when an Agent call names no subagent_type
DEFAULT_TYPE = "general-purpose"
#: waiting calls kept per session (oldest dropped)
CALLS_CAP = 100


def _task_seq(sess: Session, parent: Agent | None) -> int:
    if parent is not None:
        return parent.task
    return sess.task.seq if sess.task else 0


def _new_agent(ctx: Ctx, sess: Session, agent_id: str, agent_type: str, **kw) -> Agent:
    now = ctx.now()
    parent = sess.agents.get(kw.get("parent") or "")
    agent = Agent(id=agent_id, type=agent_type or DEFAULT_TYPE, task=_task_seq(sess, parent),
                  started_at=now, last_seen=now, **kw)
    sess.agents[agent_id] = agent
    cap = ctx.registry.knobs.agents_cap
    if len(sess.agents) > cap:
        # Shed the oldest finished agents first; running ones only if nothing else is left.
        finished = [a for a in sess.agents.values() if a.status not in ("running", "paused")]
        for old in (finished or list(sess.agents.values()))[: len(sess.agents) - cap]:
            del sess.agents[old.id]
    return agent


def _pair(sess: Session, agent_id: str, agent_type: str) -> tuple[str | None, str]:
    """(parent agent id, description) for a new agent; claims the call it consumed."""
    for call in sess.agent_calls:
        if call.claimed_by == agent_id:
            return call.caller, call.description
    cands = [c for c in sess.agent_calls if c.claimed_by is None and c.subagent_type == agent_type]
    if not cands:
        return None, ""
    description = cands[0].description if len(cands) == 1 else ""
    callers = {c.caller for c in cands}
    if len(callers) == 1:
        cands[0].claimed_by = agent_id
        return cands[0].caller, description
    return None, description  # deferred to the caller's PostToolUse


def continue_agent(ctx: Ctx, sess: Session, agent: Agent) -> None:
    if agent.status in ("paused", "lapsed"):
        agent.status = "running"
        agent.children_done_at = None
        ctx.registry.touch(sess)


def finish_agent(ctx: Ctx, sess: Session, agent: Agent) -> None:
    """The agent is done; a paused parent whose children are all done starts its grace clock."""
    now = ctx.now()
    agent.status, agent.ended_at = "done", now
    _close_agent_requests(ctx, sess, agent.id)
    parent = sess.agents.get(agent.parent) if agent.parent else None
    if parent is not None and parent.status == "paused" and not _running_children(sess, parent.id):
        parent.children_done_at = now
    ctx.registry.touch(sess)


def _close_agent_requests(ctx: Ctx, sess: Session, agent_id: str) -> None:
    # A finished agent's dialogs can no longer be answered.
    requests.close_where(ctx, sess, lambda r: r.agent == agent_id)


def _running_children(sess: Session, agent_id: str) -> list[Agent]:
    return [a for a in sess.agents.values()
            if a.parent == agent_id and a.status in ("running", "paused")]


@router.on("SubagentStart")
def on_subagent_start(ev: dict, sess: Session, ctx: Ctx) -> None:
    agent_id = text_field(ev, "agent_id")
    if not agent_id:
        return
    agent_type = text_field(ev, "agent_type") or DEFAULT_TYPE
    agent = sess.agents.get(agent_id)
    if agent is not None:
        if agent.from_stop:
            return  # its Stop overtook it; the row is already final
        # Same id again: the continuation of a paused (or resumed) agent, not a second row.
        if agent.status in ("done", "dropped"):
            agent.status, agent.ended_at = "running", None
        continue_agent(ctx, sess, agent)
        ctx.registry.touch(sess)
        return
    parent, description = _pair(sess, agent_id, agent_type)
    _new_agent(ctx, sess, agent_id, agent_type, parent=parent, description=description)
    ctx.registry.touch(sess)


@router.on("SubagentStop")
def on_subagent_stop(ev: dict, sess: Session, ctx: Ctx) -> None:
    agent_id = text_field(ev, "agent_id")
    agent = sess.agents.get(agent_id)
    if agent is None:
        agent_type = text_field(ev, "agent_type")
        if not agent_id or not agent_type:
            ctx.count("untyped_stop_ignored")  # frequent and meaningless
            return
        # Its SubagentStart was lost (or is still on its way): record it finished.
        agent = _new_agent(ctx, sess, agent_id, agent_type, from_stop=True)
        agent.status, agent.ended_at = "done", agent.started_at
        ctx.registry.touch(sess)
        return
    if agent.status in ("done", "dropped"):
        return
    if _running_children(sess, agent.id):
        # Stopped to wait for its own agent: a pause, not an end.
        agent.status = "paused"
        agent.children_done_at = None
        ctx.registry.touch(sess)
        return
    finish_agent(ctx, sess, agent)


@router.on("PreToolUse")
def on_pre_tool(ev: dict, sess: Session, ctx: Ctx) -> None:
    agent_id = text_field(ev, "agent_id")
    if agent_id:
        agent = sess.agents.get(agent_id)
        if agent is None:
            # SubagentStart lost: the event carries the type, so the row can still appear.
            agent = _new_agent(ctx, sess, agent_id, text_field(ev, "agent_type"))
        elif agent.from_stop:
            pass
        else:
            # A tool call made by a paused agent itself means it continued.
            continue_agent(ctx, sess, agent)
    if text_field(ev, "tool_name") not in AGENT_TOOLS:
        return
    tool_input = ev.get("tool_input")
    if not isinstance(tool_input, dict):
        tool_input = {}
    tool_use_id = text_field(ev, "tool_use_id")
    if tool_use_id and any(c.tool_use_id == tool_use_id for c in sess.agent_calls):
        return
    sess.agent_calls.append(AgentCall(
        tool_use_id=tool_use_id,
        subagent_type=str(tool_input.get("subagent_type") or DEFAULT_TYPE),
        description=shorten(str(tool_input.get("description") or "")),
        caller=agent_id or None,
        at=ctx.now(),
    ))
    del sess.agent_calls[:-CALLS_CAP]


def _started_agent_id(response: object) -> str:
    if isinstance(response, dict):
        for key in ("agentId", "agent_id"):
            value = response.get(key)
            if isinstance(value, str) and value:
                return value
    return ""


@router.on("PostToolUse")
def on_post_tool(ev: dict, sess: Session, ctx: Ctx) -> None:
    if text_field(ev, "tool_name") not in AGENT_TOOLS:
        return
    child_id = _started_agent_id(ev.get("tool_response"))
    if not child_id:
        return
    caller = text_field(ev, "agent_id") or None
    tool_use_id = text_field(ev, "tool_use_id")
    call = next((c for c in sess.agent_calls if tool_use_id and c.tool_use_id == tool_use_id), None)
    child = sess.agents.get(child_id)
    if call is not None:
        # A previous tentative claim by another agent of this type was a guess; this is the fact.
        for other in sess.agent_calls:
            if other is not call and other.claimed_by == child_id:
                other.claimed_by = None
        call.claimed_by = child_id
    if child is None:
        return  # SubagentStart still to come; _pair finds the claimed call
    child.parent = caller if caller != child_id else None
    if call is not None and not child.description:
        child.description = call.description
    ctx.registry.touch(sess)
