"""Routing decoded datagrams to the event families, aiogram-router style.

Each family module in ``aipager.daemon.events`` exports ``router =
EventRouter("name")`` and registers handlers with ``@router.on("Key")``.  A
``Dispatcher`` includes the routers; for one datagram every family that
subscribed to its key runs, in inclusion order (``tools`` adds the row before
``permissions`` turns an AskUserQuestion into a question, for instance).  A
key nobody handles returns the ``UNHANDLED`` sentinel: it is counted and
logged by the caller, never fatal.

A handler is ``handler(ev, sess, ctx) -> None``: ``ev`` the datagram dict,
``sess`` the registered ``Session`` it names, ``ctx`` the ``Ctx`` below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from aipager.proto import wire
from aipager.daemon.audit import AuditSink, RecordingAudit
from aipager.daemon.fields import FieldCheck
from aipager.port.model import NOTICES_KEPT, Session, State
from aipager.port.outputs import Notice, NoticeName, Notifier, Output
from aipager.daemon.ordered import OrderedOutputs
from aipager.daemon.registry import Registry

Handler = Callable[[dict, Session, "Ctx"], None]
OutputT = TypeVar("OutputT", bound=Output)


class _Sentinel:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: no family handles this dispatch key
UNHANDLED = _Sentinel("UNHANDLED")
#: the datagram names no session (Claude Code sessions aipager did not start)
IGNORED = _Sentinel("IGNORED")
#: at least one handler ran
HANDLED = _Sentinel("HANDLED")

#: keys handled even without a ``session`` field
SESSIONLESS = (wire.REPORT_ERROR,)
#: keys that bring an ended (GONE) session back; other late events of it are dropped
REVIVING = ("SessionStart", "UserPromptSubmit")


class EventRouter:
    """A named set of handlers, one per dispatch key."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.handlers: dict[str, Handler] = {}

    def on(self, *keys: str) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            for key in keys:
                if key in self.handlers:
                    msg = f"router {self.name!r} already handles {key!r}"
                    raise ValueError(msg)
                self.handlers[key] = fn
            return fn

        return register


def _read_no_answer(path: str) -> str | None:
    return None


@dataclass
class Ctx:
    """What handlers get besides the event: the registry, the output seam, the answer source."""

    registry: Registry
    notifier: Notifier
    #: transcript path → Claude's last answer text (injectable; see ``transcript.last_answer``)
    read_answer: Callable[[str], str | None] = _read_no_answer
    #: AX Code session id → its last answer (AX Code has no transcript; ``axstore.last_answer``)
    read_ax_answer: Callable[[str], str | None] = _read_no_answer
    #: transcript path → ``<task-notification>`` texts in it (see ``transcript.task_notifications``)
    read_notifications: Callable[[str], list[str]] = lambda path: []
    #: file path → its text ("" absent, None unusable): what an edit's diff is made against
    #: (``diffs.read_text`` in the daemon; nothing is read in unit tests)
    read_text: Callable[[str], str | None] = lambda path: None
    #: (session, paths, cwd) → a ``Files`` output's ``copies`` and ``refused``: the files
    #: Claude sends, checked and copied (``sendfiles.take`` in the daemon; none in unit tests)
    take_files: Callable[[str, list[str], str], dict[str, Any]] = lambda s, p, c: {}
    #: diagnostics the daemon reports in its state (counts per own datagram, errors seen)
    counters: dict[str, int] = field(default_factory=dict)
    #: where safety events are recorded (``audit.AuditFile`` in the daemon)
    audit: AuditSink = field(default_factory=RecordingAudit)
    #: the journal number of the datagram being handled (0: none), stamped on its outputs
    origin: int = 0
    #: the datagram being handled is replayed from the journal (``Output.replayed``)
    replaying: bool = False

    def now(self) -> float:
        return self.registry.clock()

    def emit(self, kind: type[Output], sess: Session, text: str = "", **fields: Any) -> None:
        """One output of ``kind`` (a ``notifier`` class) about ``sess``; ``fields`` are its own."""
        self.notifier.emit(self.output(kind, sess, text, **fields))

    def output(self, kind: type[OutputT], sess: Session, text: str = "", **fields: Any) -> OutputT:
        """The output ``emit`` would emit."""
        return kind(session=sess.name, text=text, origin=self.origin, replayed=self.replaying,
                    **fields)

    def emit_completed(self, out: Output, complete: Callable[[], dict[str, Any]]) -> None:
        """Emit ``out`` with the fields ``complete()`` gives, which may be made off the event
        loop (``ordered.OrderedOutputs``); the outputs that follow keep their place."""
        notifier = self.notifier
        ordered = notifier if isinstance(notifier, OrderedOutputs) else OrderedOutputs(notifier)
        ordered.emit_completed(out, complete)

    def notice(self, sess: Session, name: NoticeName, text: str, **extra: Any) -> None:
        """A notice: kept in the session's latest notices (``aipager status``) and emitted."""
        notices = sess.notices
        notices.append({"name": str(name), "text": text, "at": self.now()})
        del notices[:-NOTICES_KEPT]
        self.registry.touch(sess)
        self.emit(Notice, sess, text, notice=name, extra=extra)

    def count(self, key: str) -> None:
        self.counters[key] = self.counters.get(key, 0) + 1


def _merge_sl_tokens(sess: Session, tokens: Any) -> None:
    # The hook reads the session's status file for these; they are newer than
    # the last statusline datagram whenever present.
    if not isinstance(tokens, dict):
        return
    pct = tokens.get("context_pct")
    if pct.__class__ in (int, float):
        sess.context_pct = float(pct)
    # Hot path: direct attribute writes instead of a setattr loop.
    get = tokens.get
    value = get("total_input")
    if value.__class__ is int:
        sess.total_input = value
    value = get("total_output")
    if value.__class__ is int:
        sess.total_output = value
    value = get("lines_added")
    if value.__class__ is int:
        sess.lines_added = value
    value = get("lines_removed")
    if value.__class__ is int:
        sess.lines_removed = value


class Dispatcher:
    """Feeds datagrams to the included routers.

    Args:
        ctx: shared by every handler.
        routers: families, in the order they see an event.
    """

    def __init__(self, ctx: Ctx, *routers: EventRouter) -> None:
        self.ctx = ctx
        self._chains: dict[str, list[Handler]] = {}
        self._fields = FieldCheck(ctx.counters)
        for router in routers:
            self.include(router)

    def include(self, router: EventRouter) -> None:
        for key, fn in router.handlers.items():
            self._chains.setdefault(key, []).append(fn)

    def keys(self) -> set[str]:
        return set(self._chains)

    def feed(self, ev: dict) -> _Sentinel:
        """Route one decoded datagram; handler exceptions propagate to the ingest boundary.

        Text fields of another type are removed first (``fields``).
        """
        self._fields.clean(ev)
        key = wire.dispatch_key(ev)
        chain = self._chains.get(key) if isinstance(key, str) else None
        name = ev.get("session")
        if not isinstance(name, str) or not name:
            if chain and key in SESSIONLESS:
                for fn in chain:
                    fn(ev, None, self.ctx)  # type: ignore[arg-type]
                return HANDLED
            return IGNORED
        if not chain:
            return UNHANDLED
        registry = self.ctx.registry
        sess = registry.ensure(name)
        if sess.state is State.GONE and key not in REVIVING:
            if sess.end_reason != "vanished" or key == "SessionEnd":
                # (its own SessionEnd after its socket was seen gone: the same end, said
                # once; reviving it to end it again said it twice, a killed session's too)
                # A late event of a session that ended (events can be reordered):
                # it must not bring back agents or rows.
                return IGNORED
            # Its socket looked gone, but it is clearly alive: known again.
            registry.revive(sess)
        now = registry.clock()
        sess.last_event_at = now
        tokens = ev.get("sl_tokens")
        if tokens:
            _merge_sl_tokens(sess, tokens)
        path = ev.get("transcript_path")
        if path and isinstance(path, str):
            # Every Claude Code event names the main conversation's file (subagent
            # events too); the answer fallback reads the latest one.
            sess.transcript_path = path
        agent_id = ev.get("agent_id")
        if agent_id:
            agent = sess.agents.get(agent_id)
            if agent is not None:
                # Any event carrying an agent's id proves it is alive (silence timeout).
                agent.last_seen = now
        for fn in chain:
            fn(ev, sess, self.ctx)
        return HANDLED
