"""Card and notice text: pure functions of session state (no I/O, no clock of their own).

The strings are the ones the issue names; the Telegram layer only formats them.  A card's
words are marked for translation (``locales.tr``): rendered here they are English, and the
chat renders a card again in its own language (``locales.rendering``).
"""

from __future__ import annotations

from typing import Sequence

from aipager.port.model import (SCOPED_TYPES, Agent, BgCommand, Request, Row, Session, State,
                                  always_permissions)
from aipager.port.outputs import NoticeName
from aipager.texts import danger
from aipager.texts.summaries import shorten
from aipager.locales import N_
from aipager.locales import ntr as ngettext
from aipager.locales import tr as _

#: rows of the current task shown on a card; older ones fold into one line
CARD_ROWS = 40
#: characters of Claude's running commentary shown on a card
COMMENTARY_CHARS = 300
#: a card never grows past this (a Telegram message holds 4096 characters)
CARD_CHARS = 3500

_ROW_ICON = {"running": "⏳", "ok": "✓", "failed": "✗", "ended": "⏹"}
#: Task.error of a turn AX Code reported as interrupted (events/prompts.on_interrupt)
INTERRUPTED = "interrupted"


def elapsed(seconds: float) -> str:
    """``12s``, ``3m 05s``, ``1h 02m``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def compacted(label: str, before: float, after: float) -> str:
    return _("📦 {session} · Conversation compacted: {before}% → {after}%").format(
        session=label, before=f"{before:.0f}", after=f"{after:.0f}")


def compacted_plain(label: str) -> str:
    return _("📦 {session} · Conversation compacted").format(session=label)


def compacting(label: str) -> str:
    return _("🔄 {session} · Compacting the conversation").format(session=label)


def context_warning(label: str, pct: float) -> str:
    return _("⚠️ {session} · Context at {percent}% - will compact soon").format(
        session=label, percent=f"{pct:.0f}")


#: known API failures (a StopFailure's error type) in plain words: the daemon says them in
#: English, the chat and the page again in their language (``notice``, from the key the
#: notice carries); events/prompts matches an error to its key
API_ERRORS = {
    "overloaded": N_("Anthropic's servers are overloaded right now; try again in a moment"),
    "rate_limit": N_("Rate limit reached; wait a little before the next message"),
    "authentication_failed": N_("Claude Code is not logged in (authentication failed)"),
    "billing_error": N_("The account has a billing problem"),
    "invalid_request": N_("Claude Code sent a request the API refused"),
    "server_error": N_("The API had an internal error; try again"),
    "max_output_tokens": N_("The answer hit the output length limit"),
    "prompt_too_long": N_("The conversation is too long for the model; compact or clear it"),
}
_API_ERROR_WORDS = frozenset(API_ERRORS.values())


def api_error_words(words: str) -> str:
    """A failed turn's error in the caller's language when it is one of ``API_ERRORS``; any
    other (the API's own text) as it came."""
    return _(words) if words in _API_ERROR_WORDS else words


def api_error(label: str, words: str) -> str:
    """A failed turn's notice (``api_error_words``)."""
    return f"⚠️ {label} · {api_error_words(words)}"


def files_refused(label: str, files: list[dict]) -> str:
    refused = _("refused")
    reasons = "; ".join(f"{f.get('path', '?')}: {f.get('reason') or f.get('code') or refused}"
                        for f in files)
    n = len(files)
    return ngettext("📎 {session} · {n} file not sent: {reasons}",
                    "📎 {session} · {n} files not sent: {reasons}", n).format(
                        session=label, n=n, reasons=reasons)


def files_on_host(label: str, host: str, kept: Sequence[str],
                  refused: Sequence[dict]) -> str:
    """Files Claude sent on hub host ``host``: the ones kept there (names), and the ones its
    own check refused (``{path, reason}``), each said as such."""
    lines = []
    if kept:
        lines.append(ngettext("📎 {session} sent {n} file that stays on {host}: {names}",
                              "📎 {session} sent {n} files that stay on {host}: {names}",
                              len(kept)).format(session=label, n=len(kept), host=host,
                                                names=", ".join(kept[:5])))
    if refused:
        lines.append(files_refused(label, list(refused)))
    return "\n".join(lines)


def memory_cap(label: str, hook: str, tool: object = None) -> str:
    """A hook stopped at its memory cap: which hook, and for which tool."""
    where = f"{hook} ({tool})" if tool else hook
    return _("🧠 {session} · {where} hit its 1 GB memory limit").format(session=label, where=where)


#: a tap's button, as the chat labels it (``late_tap`` names the one that got lost)
TAPS = {"allow": N_("✅ Allow"), "allow_always": N_("🟢 Always allow"), "deny": N_("❌ Deny"),
        "stop": N_("⏹ Stop")}


def late_tap(label: str, lost: str) -> str:
    tap = _(TAPS[lost]) if lost in TAPS else lost.replace("_", " ")
    return _("⌛ {session} · the {tap} tap came as the wait ended: Claude Code asks in the "
             "terminal, tap again").format(session=label, tap=tap)


def hub_bad_record(host: str, reason: str, held_back: int = 0) -> str:
    text = _("⚠️ {host} sent a record the hub cannot read ({reason}); it was set aside. "
             "More within the hour are only kept with it in the hub's dead letters.").format(
        host=host, reason=reason)
    if held_back:
        text += " " + ngettext("({count} more since the last message)",
                               "({count} more since the last message)",
                               held_back).format(count=held_back)
    return text


def hub_link_lost(reason: str) -> str:
    return _("🔌 The hub's link to its hosts failed ({reason}); retrying").format(reason=reason)


def hub_link_back() -> str:
    return _("🔌 The hub's link to its hosts is back")


def host_offline(host: str, since: str) -> str:
    return _("📴 {host} is offline (last heard from at {time}): its sessions cannot be reached "
             "until it is back").format(host=host, time=since)


def host_back(host: str) -> str:
    return _("🖥 {host} is back online").format(host=host)


def question(label: str, text: str) -> str:
    return f"❓ {label} · {text}"


def form(label: str, server: str, message: str, answerable: bool) -> str:
    """An MCP server's form: what it asks; when the phone cannot answer it (the hook no
    longer waits, or the form asks for more than plain fields), where it can be."""
    text = _("📋 {session} · {server} asks: {message}").format(
        session=label, server=server or "MCP", message=message or _("(no message)"))
    if not answerable:
        text += "\n" + _("⌨️ Its form is in the terminal: answer it at the computer.")
    return text


def at_computer(label: str, message: str) -> str:
    """A dialog no button can answer: a teammate in its own terminal pane asks (Claude Code's
    words, ``message``, say who and for what)."""
    return _("🖥 {session} · {message}: answer it at the computer (a teammate in its own "
             "terminal pane asks; nothing sent from here can answer it)").format(
        session=label, message=message.rstrip(".") or _("a teammate needs permission"))


def start_dialog(label: str, agent: str, title: str, options: Sequence[str]) -> str:
    """A dialog the program draws before it starts, read off its screen (no hook says it):
    its question and choices, answered at the computer."""
    return _("🖥 {session} · before it starts, {agent} asks on its screen: “{question}” "
             "({choices}). Answer it at the computer (aipager session {session}); messages "
             "sent meanwhile wait for it.").format(
        session=label, agent=agent, question=shorten(title, 120),
        choices=" / ".join(shorten(o, 60) for o in options[:4]))


def still_waiting(label: str) -> str:
    return _("⬆️ {session} · still waiting for your answer above").format(session=label)


def waiting_words(kind: str | None) -> str:
    """What a session waits for, in words: Claude's question wants an answer."""
    return _("waiting for your answer") if kind == "question" else _("waiting for your permission")


def safety_blocked(label: str, reason: str, tool: str = "") -> str:
    """A tool call the safety policy refused.  Only that call was refused: Claude Code hands
    the refusal to the model, which often goes on (and answers) without it, so the notice
    never says the task stopped."""
    return _("🛑 {session} · a safety rule refused {tool}: {reason}. Claude was told and may go "
             "on without it.").format(session=label, reason=reason, tool=tool or _("a tool"))


def done_after_refusal(label: str, reason: str, took: str) -> str:
    """The card of a finished task one of whose tool calls the safety policy refused."""
    return _("🛑 {session} · done; a safety rule refused a tool: {reason} · {took}").format(
        session=label, reason=reason, took=took)


#: how much of a prompt typed at the computer the chat shows
TYPED_SHOWN = 600


def _shown_prompt(prompt: str) -> str:
    text = prompt.strip()
    return text[:TYPED_SHOWN] + "…" if len(text) > TYPED_SHOWN else text


def typed_at_computer(label: str, prompt: str) -> str:
    return _("⌨️ {session} · typed at the computer:").format(session=label) + "\n" + \
        _shown_prompt(prompt)


def sent_from_page(label: str, who: str, prompt: str) -> str:
    """A prompt sent from the page (``who``: its sender, ``@web`` at the machine), as the
    chat shows it: the page's messages are not in the chat, and the answer replies to this."""
    return _("🌐 {session} · {who} on the page:").format(session=label, who=who) + "\n" + \
        _shown_prompt(prompt)


def typing_cut(label: str) -> str:
    return _("✂️ {session} · a restart cut this message off while it was typed: it was cleared "
             "from Claude Code's input, not sent. Send it again.").format(session=label)


def not_taken(label: str) -> str:
    return _("🤷 {session} · this message was not taken as it was typed (other text was joined "
             "to it in Claude Code's input, or Claude Code declined it). Nothing of it ran; "
             "it was cleared. Send it again.").format(session=label)


#: the tool whose permission request is Claude asking to leave plan mode
PLAN_TOOL = "ExitPlanMode"


def permission(label: str, tool: str, description: str, detail: str, cwd: str = "") -> str:
    """A permission request: what Claude wants to do, then the real command, path or plan,
    and for a command the folder it would run in."""
    if tool == PLAN_TOOL:
        head = _("📋 {session} · Approve plan?").format(session=label)
    else:
        head = f"🔐 {label} · " + (tool or _("Permission"))
        if description:
            head += f": {description}"
    text = f"{head}\n{detail}" if detail else head
    return text + "\n" + _("📁 in {folder}").format(folder=cwd) if cwd else text


#: what a request says when Claude Code's Notification said nothing (kept in English on the
#: request, like Claude Code's own words, and translated when rendered)
NEEDS_INPUT = N_("Claude needs your input")
NEEDS_PERMISSION = N_("Claude needs your permission")


def request(label: str, req: Request) -> str:
    """A permission request's message (``permission``), saying so when its choices show only
    in the terminal."""
    said = req.description
    if said in (NEEDS_INPUT, NEEDS_PERMISSION):
        said = _(said)
    if req.agent_name:  # a teammate's (or a background agent's) request: whose it is
        label = f"{label} · {req.agent_name}"
    text = permission(label, req.tool, shorten(said, 200) if said else "", req.detail, req.cwd)
    # a dialog known only from a Notification names its call as its card row does
    command = req.detail if req.tool == "Bash" else (
        req.detail.removeprefix("Bash: ") if not req.tool and req.detail.startswith("Bash: ")
        else "")
    damage = danger.destructive(command) if command else ""
    if damage:
        text += "\n" + _("⚠️ This deletes or overwrites work ({what}) and cannot be undone: "
                         "read the command before you allow it.").format(what=damage)
    if req.terminal_only:
        text += "\n" + _("⌨️ Its choices show only in the terminal: answer it there (⏹ Stop "
                         "ends the task).")
    return text


#: where Claude Code keeps what a suggestion remembers, in the person's words
DESTINATIONS = {"session": N_("this session"), "localSettings": N_("this project, for you"),
                "projectSettings": N_("this project, for everyone"),
                "userSettings": N_("all your projects"), "cliArg": N_("this run")}
#: what a setMode suggestion switches to
MODES = {"acceptEdits": N_("✏️ Accept edits in its folders"), "plan": N_("📋 Plan first"),
         "bypassPermissions": N_("⚠️ Ask nothing"), "default": N_("Ask again"),
         "auto": N_("Auto mode")}
#: a button's label is cut to this many characters
SCOPE_LABEL_MAX = 60
#: per-suggestion buttons at most (Claude Code offers one to three)
SCOPES_SHOWN = 3


def _rules(suggestion: dict) -> str:
    """An addRules suggestion's rules as Claude Code writes them: ``Bash(npm test:*)``."""
    rules = []
    for rule in suggestion.get("rules") or []:
        if isinstance(rule, dict) and rule.get("toolName"):
            content = rule.get("ruleContent")
            rules.append(f"{rule['toolName']}({content})" if content else str(rule["toolName"]))
    return ", ".join(rules)


def suggestion_label(suggestion: dict) -> str:
    """One of Claude Code's permission suggestions as a button: what, then where."""
    kind = suggestion.get("type")
    destination = str(suggestion.get("destination"))
    where = f" · {_(DESTINATIONS[destination])}" if destination in DESTINATIONS else ""
    if kind == "setMode":
        mode = str(suggestion.get("mode"))
        words, named = (MODES[mode], "") if mode in MODES else (N_("Mode {mode}"), mode)
    elif kind == "addDirectories":
        # Claude Code 2.1.328 makes the folder one of the session's working folders: reads
        # there stop asking, but a command or an edit that changes a file there still asks
        # (the next `touch` in it does): the button says no more than that
        named = ", ".join(str(d) for d in suggestion.get("directories") or [])
        words = N_("📁 Allow, and reads in {folders}") if named else N_(
            "📁 Allow, and reads in the folder")
    else:
        named = _rules(suggestion)
        words = N_("🟢 Always {rules}") if named else N_("🟢 Always allow")
    said = _(words)
    if not named:
        return said + where
    # the scope is what the button decides, and the words what it grants: a long rule or
    # path gives way, in its middle (its start says what, its end which file), never those
    room = SCOPE_LABEL_MAX - len(where) - len(said.format(mode="", folders="", rules=""))
    return said.format(mode=named, folders=cut_middle(named, max(room, 12)),
                       rules=cut_middle(named, max(room, 12))) + where


def cut_middle(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters: its middle replaced by "…" when longer."""
    if len(text) <= most:
        return text
    head = (most - 1 + 1) // 2
    tail = most - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def lone_rule(req: Request) -> bool:
    """Claude Code suggests one rule and nothing else: the plain "Always allow" remembers it."""
    offered = always_permissions(req.suggestions, SCOPED_TYPES)
    return len(offered) == 1 and offered[0].get("type") == "addRules"


def scope_labels(req: Request) -> list[str]:
    """The labels of a request's per-suggestion buttons (``s0``…), in the order a tap names
    them: each rule, folder or mode Claude Code offers, with the destination it names (none
    for a lone rule, or a dialog only the terminal answers)."""
    if req.terminal_only or lone_rule(req):
        return []
    offered = always_permissions(req.suggestions, SCOPED_TYPES)
    return [suggestion_label(s) for s in offered[:SCOPES_SHOWN]]


def session_ended(label: str, reason: str) -> str:
    words = {
        "clear": N_("Session cleared"),
        "logout": N_("Logged out"),
        "prompt_input_exit": N_("Session exited"),
        "resume": N_("Session switched by /resume"),
        "vanished": N_("Session gone (its terminal closed or was killed)"),
    }
    ended = words.get(reason) or N_("Session ended")
    return f"🔴 {label} · {_(ended)}"


def notice(name: str, label: str, extra: dict) -> str | None:
    """A notice rendered again from what its output carries (``Notice.notice``, ``extra``), in
    the caller's language; None when it carries too little, or its words are not aipager's
    (an API error aipager has no words for): the text the daemon rendered stands."""
    match name:
        case NoticeName.COMPACTING:
            return compacting(label)
        case NoticeName.COMPACTED if isinstance(extra.get("after"), (int, float)):
            return compacted(label, extra["before"], extra["after"])
        case NoticeName.COMPACTED:
            return compacted_plain(label)
        case NoticeName.CONTEXT_WARNING if isinstance(extra.get("pct"), (int, float)):
            return context_warning(label, extra["pct"])
        case NoticeName.API_ERROR if isinstance(extra.get("error"), str) \
                and extra["error"] in API_ERRORS:
            return api_error(label, API_ERRORS[extra["error"]])
        case NoticeName.STILL_WAITING:
            return still_waiting(label)
        case NoticeName.TYPING_CUT:
            return typing_cut(label)
        case NoticeName.NOT_TAKEN:
            return not_taken(label)
        case NoticeName.SESSION_END if isinstance(extra.get("reason"), str):
            return session_ended(label, extra["reason"])
        case NoticeName.FILES_REFUSED if isinstance(extra.get("files"), list) \
                and all(isinstance(f, dict) for f in extra["files"]):
            return files_refused(label, extra["files"])
        case NoticeName.FILES_ON_HOST if isinstance(extra.get("kept"), list) \
                and isinstance(extra.get("refused"), list):
            return files_on_host(label, str(extra.get("host", "")),
                                 [str(k) for k in extra["kept"]],
                                 [f for f in extra["refused"] if isinstance(f, dict)])
        case NoticeName.SAFETY_BLOCKED if isinstance(extra.get("reason"), str):
            return safety_blocked(label, extra["reason"], str(extra.get("tool") or ""))
        case NoticeName.MEMORY_CAP if isinstance(extra.get("hook"), str):
            return memory_cap(label, extra["hook"], extra.get("tool"))
        case NoticeName.LATE_TAP if isinstance(extra.get("lost"), str):
            return late_tap(label, extra["lost"])
        case NoticeName.HUB_BAD_RECORD if isinstance(extra.get("host"), str):
            return hub_bad_record(extra["host"], str(extra.get("reason", "")),
                                  int(extra.get("held_back") or 0))
        case NoticeName.HUB_LINK if extra.get("state") == "lost":
            return hub_link_lost(str(extra.get("reason", "")))
        case NoticeName.HUB_LINK if extra.get("state") == "back":
            return hub_link_back()
        case NoticeName.HOST_STATE if extra.get("state") == "offline":
            return host_offline(str(extra.get("host", "")), str(extra.get("since", "")))
        case NoticeName.HOST_STATE if extra.get("state") == "back":
            return host_back(str(extra.get("host", "")))
    return None


def agent_name(sess: Session, agent: Agent) -> str:
    """``type`` or ``parent-type › type`` when the agent was started by another agent."""
    parent = sess.agents.get(agent.parent) if agent.parent else None
    return f"{parent.type} › {agent.type}" if parent else agent.type


def agent_row(sess: Session, agent: Agent, now: float) -> str:
    """``🤖 <type> · <activity> · <elapsed>``, or ``✅ 🤖 <type> · N tools used · <elapsed>`` when done."""
    name = agent_name(sess, agent)
    if agent.status == "done":
        took = elapsed((agent.ended_at or now) - agent.started_at)
        return ngettext("✅ 🤖 {agent} · {n} tool used · {took}",
                        "✅ 🤖 {agent} · {n} tools used · {took}", agent.tool_count).format(
                            agent=name, n=agent.tool_count, took=took)
    if agent.status == "dropped":
        return _("⏹ 🤖 {agent} · no end seen · {took}").format(
            agent=name, took=elapsed((agent.ended_at or now) - agent.started_at))
    if agent.status == "paused":
        activity = _("waiting for its agents")
    else:
        activity = agent.activity or agent.description or _("starting")
    return f"🤖 {name} · {activity} · {elapsed(now - agent.started_at)}"


def bg_row(cmd: BgCommand, now: float) -> str:
    words = {"running": N_("running"), "completed": N_("done"), "failed": N_("failed"),
             "killed": N_("stopped"), "stopped": N_("stopped"), "ended": N_("session ended"),
             "no_end": N_("no end seen")}
    took = elapsed((cmd.ended_at or now) - cmd.started_at)
    status = _(words[cmd.status]) if cmd.status in words else cmd.status
    return _("⚙️ shell: {command} · {status} · {took}").format(command=cmd.command, status=status,
                                                             took=took)


def tool_row(row: Row) -> str:
    line = f"{_ROW_ICON.get(row.status, '·')} {row.summary}"
    if row.status == "failed" and row.error:
        line += f" — {row.error.splitlines()[0][:80]}"
    return line


def live_status(sess: Session) -> str:
    """What still runs after a Stop: ``🔄 name · 2 agents still working (Explore) · 1 background command``."""
    agents = sess.running_agents()
    cmds = sess.running_bg()
    if not agents and not cmds:
        return ""
    parts = []
    if agents:
        kinds = sorted({a.type for a in agents})
        n = len(agents)
        parts.append(ngettext("{n} agent still working ({kinds})",
                              "{n} agents still working ({kinds})", n).format(
                                  n=n, kinds=", ".join(kinds)))
    if cmds:
        n = len(cmds)
        parts.append(ngettext("{n} background command", "{n} background commands", n).format(n=n))
    lines = [f"🔄 {sess.label} · " + " · ".join(parts)]
    for agent in agents:
        if agent.status == "paused":
            doing = _("waiting for its agents")
        else:
            doing = agent.activity or agent.description or _("working")
        lines.append(f"  🤖 {agent_name(sess, agent)} · {doing}")
    return "\n".join(lines)


def _header(sess: Session, now: float) -> str:
    task = sess.task
    took = elapsed(((task.ended_at if task and task.ended_at else now) - task.started_at)) if task else ""
    if sess.state == State.GONE:
        return session_ended(sess.label, sess.end_reason)
    if sess.state == State.WAITING:
        return f"🔐 {sess.label} · {waiting_words(sess.waiting_for())} · {took}"
    if sess.state == State.WORKING:
        return _("⏳ {session} · working · {took}").format(session=sess.label, took=took)
    if sess.work_open():
        return live_status(sess).split("\n", 1)[0]
    if task and task.error == INTERRUPTED:
        return _("⏹ {session} · interrupted · {took}").format(session=sess.label, took=took)
    if task and task.error:
        return f"⚠️ {sess.label} · {api_error_words(task.error)} · {took}"
    if task and task.blocked:
        return done_after_refusal(sess.label, task.blocked, took)
    return _("✅ {session} · done · {took}").format(session=sess.label, took=took)


def card(sess: Session, now: float) -> str:
    """The activity card of the session's current task.

    Layout: header line, Claude's latest commentary (quoted), the task's tool rows
    and agent rows in start order (oldest folded when many), background commands,
    and the compacting line.  Pure: the same state and ``now`` give the same text.
    """
    task = sess.task
    lines = [_header(sess, now)]
    if task is None:
        if sess.compacting:
            lines.append(compacting(sess.label))
        return "\n".join(lines)
    if task.commentary:
        text = task.commentary.strip()
        if len(text) > COMMENTARY_CHARS:
            text = "…" + text[-COMMENTARY_CHARS:]
        lines.extend("> " + part for part in text.splitlines() if part.strip())
    items: list[tuple[float, str]] = []
    for row in sess.rows:
        if row.task == task.seq and row.agent is None:
            items.append((row.started_at, tool_row(row)))
    for agent in sess.agents.values():
        if agent.task == task.seq or agent.status in ("running", "paused"):
            items.append((agent.started_at, agent_row(sess, agent, now)))
    for cmd in sess.bg.values():
        if cmd.task == task.seq or cmd.status == "running":
            items.append((cmd.started_at, bg_row(cmd, now)))
    items.sort(key=lambda item: item[0])
    if len(items) > CARD_ROWS:
        hidden = len(items) - CARD_ROWS
        lines.append(ngettext("▸ {n} earlier tool call", "▸ {n} earlier tool calls",
                              hidden).format(n=hidden))
        items = items[-CARD_ROWS:]
    lines.extend(text for _at, text in items)
    if sess.compacting and task.ended_at is None:
        # An ended task's card is left as it ended: the compacting line is then a message
        # of its own (``events.compaction``), not an edit of an old card up the chat.
        lines.append(compacting(sess.label))
    out = "\n".join(lines)
    if len(out) > CARD_CHARS:
        # Keep the header and the newest lines: they are what a person acts on.
        head, _sep, rest = out.partition("\n")
        out = head + "\n…" + rest[-(CARD_CHARS - len(head) - 2):]
    return out


#: what a session's task author is called when the task was typed at the computer
AT_THE_COMPUTER = N_("the terminal")


def author_label(sess: Session) -> str:
    task = sess.task
    if task is None or not task.authors:
        return AT_THE_COMPUTER
    first = task.authors[0]
    return str(first.get("label") or first.get("user_id") or N_("someone"))
