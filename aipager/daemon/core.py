"""The sans-I/O daemon: bytes in, registry changes and outputs out.

``DaemonCore`` decodes a datagram, drops byte-identical repeats, routes it
through the event families and counts what happened.  The asyncio shell
(``app``) feeds it from the socket and the spool; tests feed it directly.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import orjson

from aipager.proto import wire
from aipager.daemon import axstore, diffs
from aipager.texts import render
from aipager.daemon.audit import AuditSink, RecordingAudit
from aipager.daemon.dispatch import HANDLED, IGNORED, UNHANDLED, Ctx, Dispatcher
from aipager.daemon.events import ROUTERS, compaction
from aipager.daemon.knobs import Knobs
from aipager.port.model import Session
from aipager.port.outputs import Card, Notifier, StateChanged
from aipager.daemon.ordered import OrderedOutputs
from aipager.daemon.registry import Registry
from aipager.daemon.transcript import last_answer, task_notifications

log = logging.getLogger("aipager.daemon")

#: each safety block is audited and told, even one byte-identical to the last (the hook
#: sends one per blocked tool call: parallel calls of a halted task look alike)
_SAFETY_BLOCKED = wire.SAFETY_BLOCKED.encode()

#: counter names reported in the saved state
COUNTERS = ("received", "handled", "ignored", "unhandled", "malformed", "errors", "repeats",
            "spool_replayed", "spool_stale", "journal_replayed")


class DaemonCore:
    """Registry + dispatcher + card tracking, with no sockets, files or event loop.

    Args:
        notifier: where outputs go.
        knobs: limits and timeouts.
        clock: wall-clock seconds (injectable).
        read_answer: transcript path → last answer (injectable for tests).
        read_notifications: transcript path → task-notification texts (injectable).
        read_ax_answer: AX Code session id → its last answer (``axstore.last_answer``).
        read_text: file path → its text, for an edit's diff (``diffs.read_text``).
        take_files: checks and copies the files Claude sends (``sendfiles.take``; none
            copied without it).
        monotonic: for the repeat window only.
        audit: where safety events are recorded (default: kept in memory).
    """

    def __init__(self, notifier: Notifier, *, knobs: Knobs | None = None,
                 clock: Callable[[], float] = time.time,
                 read_answer: Callable[[str], str | None] = last_answer,
                 read_notifications: Callable[[str], list[str]] = task_notifications,
                 monotonic: Callable[[], float] = time.monotonic,
                 audit: AuditSink | None = None,
                 read_text: Callable[[str], str | None] = diffs.read_text,
                 read_ax_answer: Callable[[str], str | None] = axstore.last_answer,
                 take_files: Callable[[str, list[str], str], dict[str, Any]] | None = None) -> None:
        self.registry = Registry(clock=clock, knobs=knobs)
        self.notifier = notifier
        #: what handlers and cards emit through: in order, even when an output waits for
        #: work off the loop (the daemon sets its ``runner``)
        self.outputs = OrderedOutputs(notifier)
        self.ctx = Ctx(registry=self.registry, notifier=self.outputs, read_answer=read_answer,
                       read_notifications=read_notifications, audit=audit or RecordingAudit(),
                       read_text=read_text, read_ax_answer=read_ax_answer)
        if take_files is not None:
            self.ctx.take_files = take_files
        self.dispatcher = Dispatcher(self.ctx, *ROUTERS)
        self.counters = dict.fromkeys(COUNTERS, 0)
        self._monotonic = monotonic
        self._window = self.registry.knobs.dedup_window
        self._current: set[int] = set()
        self._previous: set[int] = set()
        self._gen_start = monotonic()
        self._cards: dict[str, tuple[int, str]] = {}
        #: session → the state its last card or ``StateChanged`` showed
        self._states: dict[str, str] = {}
        #: optional observer called with each decoded event after handling (bench, tests)
        self.on_handled: Callable[[dict], None] | None = None

    def feed_bytes(self, data: bytes, origin: int = 0, replayed: bool = False) -> None:
        """Handle one datagram; never raises (errors are logged and counted).

        Args:
            origin: its journal number, stamped on the outputs it makes (``Output.origin``).
            replayed: it is replayed from the journal (``Output.replayed``).
        """
        ctx = self.ctx
        ctx.origin, ctx.replaying = origin, replayed
        try:
            self._feed_bytes(data)
        finally:
            ctx.origin, ctx.replaying = 0, False  # taps and timers make outputs of no datagram

    def _feed_bytes(self, data: bytes) -> None:
        c = self.counters
        c["received"] += 1
        repeat = self._is_repeat(data)
        if repeat and _SAFETY_BLOCKED not in data:
            c["repeats"] += 1
            return
        try:
            ev = orjson.loads(data)
        except orjson.JSONDecodeError:
            c["malformed"] += 1
            log.warning("malformed datagram (%d bytes) dropped", len(data))
            return
        if not isinstance(ev, dict):
            c["malformed"] += 1
            log.warning("datagram is not a JSON object; dropped")
            return
        if repeat and ev.get("hook_event_name") != wire.SAFETY_BLOCKED:
            c["repeats"] += 1
            return
        self.feed(ev)

    def feed(self, ev: dict) -> None:
        """Handle one decoded event (the test entry point); never raises."""
        c = self.counters
        try:
            result = self.dispatcher.feed(ev)
        except Exception:  # noqa: BLE001 - one bad event must never stop the daemon
            c["errors"] += 1
            log.exception("handler failed for %r", ev.get("hook_event_name") or ev.get("type"))
            return
        if result is HANDLED:
            c["handled"] += 1
        elif result is IGNORED:
            c["ignored"] += 1
        elif result is UNHANDLED:
            c["unhandled"] += 1
            log.info("unknown event %r counted",
                     ev.get("notification_type") or ev.get("hook_event_name") or ev.get("type"))
        if self.on_handled is not None:
            self.on_handled(ev)

    def _is_repeat(self, data: bytes) -> bool:
        # Two generations of hashes, rotated every window: O(1) per datagram and
        # memory bounded by what arrives in two windows.  hash() of bytes is a
        # keyed 64-bit SipHash: cheap, and collisions are negligible here.
        window = self._window
        if window <= 0:
            return False
        now = self._monotonic()
        if now - self._gen_start > window or len(self._current) > 100_000:
            # After a long quiet spell both generations are stale.
            stale = now - self._gen_start > 2 * window
            self._previous, self._current = (set() if stale else self._current), set()
            self._gen_start = now
        key = hash(data)
        if key in self._current or key in self._previous:
            return True
        self._current.add(key)
        return False

    def flush_cards(self, shown_only: bool = False) -> int:
        """Emit a ``card`` output for every changed session whose card text changed, and a
        ``StateChanged`` for one whose state changed with no card to show it (a session
        that started has no task: nothing else would tell the page it is ready).

        Args:
            shown_only: only cards already shown for their task (an event's batch: a task's
                first card waits for the tick, so a task that ends within it shows its
                answer alone, and a card shown changes at once).

        Returns:
            How many cards were emitted.
        """
        reg = self.registry
        now = reg.clock()
        sent = 0
        left: set[str] = set()
        for name in sorted(reg.dirty):
            sess = reg.get(name)
            if sess is None:
                continue
            if sess.task is None:
                self._state_changed(sess)
                continue
            shown = self._cards.get(name)
            if shown_only and (shown is None or shown[0] != sess.task.seq):
                left.add(name)
                continue
            text = render.card(sess, now)
            key = (sess.task.seq, text)
            if shown == key:
                self._state_changed(sess)
                continue
            self._cards[name] = key
            self._states[name] = str(sess.state)
            final = sess.task.ended_at is not None and not sess.work_open()
            self.outputs.emit(Card(name, text, task=sess.task.seq, final=final))
            sent += 1
        reg.dirty.clear()
        reg.dirty.update(left)
        return sent

    def _state_changed(self, sess: Session) -> None:
        state = str(sess.state)
        if self._states.get(sess.name) != state:
            self._states[sess.name] = state
            self.outputs.emit(StateChanged(sess.name, state, state=state))

    def tick(self) -> None:
        """Time-based rules, then cards (called every second or so by the daemon)."""
        reg = self.registry
        reg.sweep()
        now = self.ctx.now()
        for sess in reg:
            if sess.compact_notice_pending:
                compaction.report_overdue(self.ctx, sess, now)
        if reg.forgotten:
            self.ctx.counters["sessions_forgotten"] = reg.forgotten
        if len(self._cards) > len(reg.sessions):
            # cards of forgotten sessions (the difference bounds what stays stale)
            self._cards = {k: v for k, v in self._cards.items() if k in reg.sessions}
        if len(self._states) > len(reg.sessions):
            self._states = {k: v for k, v in self._states.items() if k in reg.sessions}
        self.flush_cards()
