"""The session model: plain records, no behaviour beyond bookkeeping helpers.

Every timestamp is wall-clock seconds from the registry's injected clock, so
persisted records stay meaningful across a daemon restart.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class State(StrEnum):
    #: known from its dtach socket only; no event seen yet
    UNKNOWN = "unknown"
    #: at the prompt, nothing running in the main loop
    READY = "ready"
    #: a task runs in the main loop
    WORKING = "working"
    #: a permission request or question waits for the person
    WAITING = "waiting"
    #: ended (SessionEnd or its socket vanished); resumable, out of the status bar
    GONE = "gone"


@dataclass(slots=True)
class Row:
    """One tool call.  Main-loop rows show on the card; an agent's rows fold into its agent row."""

    id: str
    tool: str
    summary: str
    task: int
    started_at: float
    agent: str | None = None
    #: running | ok | failed | ended (its task ended first: denied, stopped, blocked)
    status: str = "running"
    ended_at: float | None = None
    error: str = ""


@dataclass(slots=True)
class Agent:
    """A subagent, keyed by Claude Code's agent_id."""

    id: str
    type: str
    task: int
    started_at: float
    last_seen: float
    description: str = ""
    activity: str = ""
    tool_count: int = 0
    #: running | paused (stopped while its own child runs) | done | lapsed | dropped
    status: str = "running"
    parent: str | None = None
    ended_at: float | None = None
    #: when the last child of a paused agent ended (the two-minute rule counts from here)
    children_done_at: float | None = None
    #: created by a SubagentStop whose SubagentStart never arrived
    from_stop: bool = False


@dataclass(slots=True)
class AgentCall:
    """An Agent/Task PreToolUse waiting for the SubagentStart it causes."""

    tool_use_id: str
    subagent_type: str
    description: str
    caller: str | None
    at: float
    claimed_by: str | None = None


@dataclass(slots=True)
class BgCommand:
    """A Bash call Claude Code sent to the background (main loop only)."""

    id: str
    command: str
    task: int
    started_at: float
    #: running | completed | failed | killed | stopped | ended (session end) | no_end
    status: str = "running"
    ended_at: float | None = None


@dataclass(slots=True)
class Request:
    """An open permission request, question or form (an MCP server's elicitation)."""

    key: str
    #: permission | question | form
    kind: str
    tool: str
    opened_at: float
    tool_use_id: str = ""
    agent: str | None = None
    #: who asks when it is not the lead: an agent-team teammate's name (``agent_type`` of its
    #: PermissionRequest), shown on the request; "" for the lead
    agent_name: str = ""
    input_digest: str = ""
    description: str = ""
    detail: str = ""
    options: list[str] = field(default_factory=list)
    always_available: bool = False
    request_id: str = ""
    reply_addr: str = ""
    #: shown as its own message under the card (another request was already open)
    separate: bool = False
    #: Claude Code's ``permission_suggestions`` (what "Allow always" remembers)
    suggestions: list = field(default_factory=list)
    #: the tap that answered it by keys (allow | allow_always | deny | stop): a later tap types nothing
    answered: str = ""
    #: who answered it by keys (``@alice``): named when it closes
    answered_by: str = ""
    #: when Claude Code put its dialog on screen (a question's PermissionRequest): keys
    #: typed before the TUI reads them are lost
    dialog_at: float = 0.0
    #: the folder a command would run in (shown with a Bash request)
    cwd: str = ""
    #: a question's questions (``questions_of``): what its answer keys are built from
    questions: list = field(default_factory=list)
    #: the tool input, kept when a person may correct it before allowing (``edits.keep``)
    tool_input: dict = field(default_factory=dict)
    #: what the policy reads of the call (its path, command or URL; ``edits.subject``):
    #: an approver's own rights are checked on it before their ✅ is taken
    subject: dict = field(default_factory=dict)
    #: a dialog whose choices only the terminal shows (auto mode's "needs your input"):
    #: the chat offers only ⏹ Stop, and says so
    terminal_only: bool = False
    #: a form's fields (``port.forms.Field.as_json``); its message is ``description``, the
    #: MCP server asking is ``detail``
    form: list = field(default_factory=list)


#: suggestion types "Allow always" passes on: a rule or a folder to remember, never a mode switch
ALWAYS_TYPES = ("addRules", "addDirectories")
#: what can be offered one by one: a mode switch too, but only when it is the one tapped
SCOPED_TYPES = ALWAYS_TYPES + ("setMode",)


def always_permissions(suggestions: Any, types: tuple[str, ...] = ALWAYS_TYPES) -> list[dict]:
    """The suggestions "Allow always" hands back as ``updatedPermissions`` (never a mode
    switch: that changes every later call); with ``SCOPED_TYPES``, those offered one by one."""
    if not isinstance(suggestions, list):
        return []
    return [s for s in suggestions if isinstance(s, dict) and s.get("type") in types]


#: the chat id the page's own messages carry (Telegram never uses 0): a task whose prompt came
#: from the page has no message of it in the chat (``events.prompts``: a ``Prompted``)
PAGE_CHAT_ID = 0


@dataclass(frozen=True)
class Author:
    """Who sent a held message, kept by the daemon with it: its release is typed with their
    role (the permission note the hook reads), whichever surface asks for the release and
    across a restart."""

    user_id: int | None = None
    label: str = ""
    role: str = "user"
    #: the message it replies to, shown to Claude (``{"text", "sent_at"}``)
    reply_to: dict[str, Any] | None = None

    @classmethod
    def read(cls, raw: Any) -> Author | None:
        """From the saved state (or a host's snapshot); None when it is not one."""
        if isinstance(raw, Author) or raw is None:
            return raw
        if not isinstance(raw, dict):
            return None
        user_id = raw.get("user_id")
        reply_to = raw.get("reply_to")
        return cls(user_id if isinstance(user_id, int) and not isinstance(user_id, bool) else None,
                   str(raw.get("label") or ""), str(raw.get("role") or "user"),
                   reply_to if isinstance(reply_to, dict) else None)


@dataclass(frozen=True)
class PromptNote:
    """The permission note of a message typed as a prompt (``policy.notes.write_note``
    writes it; the hook matches the prompt to it): who sent it, with which role, and
    exactly the text typed."""

    msg_id: int
    chat_id: int | str
    #: exactly what is typed (the encoded form, once ``encode`` made it)
    text: str
    #: the sender; None: nobody named, the note carries the floor only
    author_user_id: int | None = None
    author_label: str = ""
    role: str = "user"
    #: the reply style handed to Claude as extra context
    style: str | None = None
    #: the message it replies to (``{"text", "sent_at"}``)
    reply_to: dict[str, Any] | None = None

    def args(self) -> dict[str, Any]:
        """As ``policy.notes.write_note`` takes it."""
        return dataclasses.asdict(self)


@dataclass(slots=True)
class QueuedMessage:
    """A chat message typed into (or held for) the session, until Claude takes it."""

    msg_id: str
    text: str
    queued_at: float
    chat_id: str = ""
    sender: str = ""
    #: held (waits for the task to end) | typed (👀, waiting for the pick-up)
    status: str = "held"
    #: what a held message waits for: "task" (its end) or "dialog" (the open dialog to close)
    held_for: str = "task"
    #: who sent it (a held message is typed later with their rights); None: not known (a
    #: message an older version held): the floor's role applies
    author: Author | None = None

    def __post_init__(self) -> None:
        self.author = Author.read(self.author)


@dataclass(slots=True)
class Task:
    """One unit of work: a prompt until its Stop (continuations reopen it)."""

    seq: int
    started_at: float
    prompt: str = ""
    prompt_id: str = ""
    #: terminal | telegram | peer | continuation | unknown
    origin: str = "terminal"
    ended_at: float | None = None
    commentary: str = ""
    commentary_id: str = ""
    blocked: str = ""
    error: str = ""
    #: who asked for it, from the queue pick-up (user_id, msg_id, label when known);
    #: empty when typed at the terminal
    authors: list[dict] = field(default_factory=list)


_NESTED = {"rows": Row, "agents": Agent, "agent_calls": AgentCall, "bg": BgCommand,
           "requests": Request, "queue": QueuedMessage, "hook_answered": Request}
#: attribute → key in the saved state (the names `aipager status --json` shows)
_SAVED_AS = {"agents": "subagents", "bg": "background_commands", "queue": "queued_messages",
             "delivered": "delivered_answers"}


#: notices kept per session in its saved state
NOTICES_KEPT = 20
#: requests answered through the hook's reply socket, kept per session (see Session.hook_answered)
HOOK_ANSWERED_KEPT = 10


@dataclass(slots=True)
class Session:
    """Everything the daemon knows about one ``claude-<name>`` session."""

    name: str
    label: str
    registered_at: float
    state: State = State.UNKNOWN
    last_event_at: float = 0.0
    claude_session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    #: the coding agent it runs (``aipager.agents``: claude, codex), as started by aipager
    #: or read from its process; "" not known yet (treated as Claude Code)
    coding_agent: str = ""
    #: the kind of dialog (``screen.Kind``) its screen showed while it was starting, for an
    #: agent no hook of which says it started (Codex's folder trust); "" none seen
    start_dialog: str = ""
    permission_mode: str = ""
    model: str = ""
    context_pct: float | None = None
    cost_usd: float | None = None
    total_input: int | None = None
    total_output: int | None = None
    lines_added: int | None = None
    lines_removed: int | None = None
    task: Task | None = None
    task_seq: int = 0
    rows: deque[Row] = field(default_factory=deque)
    row_index: dict[str, Row] = field(default_factory=dict)
    agents: dict[str, Agent] = field(default_factory=dict)
    agent_calls: list[AgentCall] = field(default_factory=list)
    bg: dict[str, BgCommand] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    #: requests closed because their waiting hook was sent the tap (newest last, at most
    #: HOOK_ANSWERED_KEPT): a permission_reply_timeout for one of them means the hook gave
    #: up before reading it, and the request opens again (``replies.late``)
    hook_answered: list[Request] = field(default_factory=list)
    reminded: bool = False
    queue: list[QueuedMessage] = field(default_factory=list)
    #: authors of the chat messages the hook just picked up; the next prompt's task takes them
    pickup_authors: list[dict] = field(default_factory=list)
    #: when the hook last blocked a prompt (``prompt_blocked``, sent just before that
    #: prompt's UserPromptSubmit): Claude Code runs nothing for it and no Stop follows
    prompt_blocked_at: float | None = None
    delivered: deque[str] = field(default_factory=deque)
    #: the latest notices shown for the session (``name``, ``text``, ``at``), newest last,
    #: at most NOTICES_KEPT: what the chat showed, readable through ``aipager status``
    notices: list[dict] = field(default_factory=list)
    compacting: bool = False
    pre_compact_pct: float | None = None
    compact_notice_pending: bool = False
    #: when the compaction ended (PostCompact or SessionStart(compact)) while its line waits
    #: for a reading that shows the drop; None when nothing waits
    compacted_at: float | None = None
    context_warned: bool = False
    #: why the status-line helper cannot write the session's status file ("" when it can);
    #: the hook then sends no token counts.  Logged once when it changes, shown by ``status``
    status_file_error: str = ""
    socket_seen: bool = False
    #: a terminal is attached to its dtach session (seen at the last discovery): the person
    #: is at the computer, so the chat stays quiet (``quiet`` setting)
    attached: bool = False
    gone_at: float | None = None
    end_reason: str = ""

    # -- bookkeeping helpers ------------------------------------------------

    def add_row(self, row: Row, cap: int) -> None:
        """Append a row, shedding the oldest past ``cap`` (index kept in step)."""
        while len(self.rows) >= cap:
            old = self.rows.popleft()
            if self.row_index.get(old.id) is old:
                del self.row_index[old.id]
        self.rows.append(row)
        self.row_index[row.id] = row

    def running_agents(self) -> list[Agent]:
        """Agents that keep the work open: running, and paused ones waiting for a child."""
        return [a for a in self.agents.values() if a.status in ("running", "paused")]

    def running_bg(self) -> list[BgCommand]:
        return [b for b in self.bg.values() if b.status == "running"]

    def work_open(self) -> bool:
        return bool(self.running_agents() or self.running_bg())

    def waiting_for(self) -> str | None:
        """``permission`` or ``question`` when the first open request is one, else None."""
        return self.requests[0].kind if self.requests else None

    # -- persistence --------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The saved form: nested records stay dataclass instances (orjson writes them
        natively, far faster than ``dataclasses.asdict``); containers become lists."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "row_index":
                continue
            value = getattr(self, f.name)
            if isinstance(value, dict) and f.name in _NESTED:
                value = list(value.values())
            elif isinstance(value, deque):
                value = list(value)
            elif f.name == "state":
                value = str(value)
            out[_SAVED_AS.get(f.name, f.name)] = value
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Session:
        """Rebuild a session from ``to_dict`` output, ignoring unknown keys."""
        known = {f.name for f in dataclasses.fields(cls)} - {"row_index"}
        raw = {attr: raw[key] for attr, key in _SAVED_AS.items() if key in raw} | {
            k: v for k, v in raw.items() if k not in _SAVED_AS.values()}
        kw = {k: v for k, v in raw.items() if k in known}
        for name, kind in _NESTED.items():
            kw[name] = [_build(kind, item) for item in raw.get(name) or ()]
        sess = cls(**{k: v for k, v in kw.items() if k not in _NESTED and k != "task"})
        sess.state = State(raw.get("state") or State.UNKNOWN)
        sess.task = _build(Task, raw["task"]) if raw.get("task") else None
        for row in kw["rows"]:
            sess.rows.append(row)
            sess.row_index[row.id] = row
        sess.agents = {a.id: a for a in kw["agents"]}
        sess.bg = {b.id: b for b in kw["bg"]}
        sess.agent_calls = kw["agent_calls"]
        sess.requests = kw["requests"]
        sess.hook_answered = kw["hook_answered"]
        sess.queue = kw["queue"]
        sess.delivered = deque(raw.get("delivered") or ())
        return sess


def _build(kind: type, raw: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(kind)}
    return kind(**{k: v for k, v in raw.items() if k in names})


def task_authors(sess: Session) -> set[Any]:
    """Telegram ids of who asked for the session's running task (empty: the terminal)."""
    task = sess.task
    if task is None or task.ended_at is not None:
        return set()
    return {a.get("user_id") for a in task.authors if a.get("user_id") is not None}
