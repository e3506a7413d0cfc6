"""The daemon process: lock, socket, ingest thread, timers, graceful shutdown.

Lifecycle (aiogram ``start_polling`` style): SIGINT/SIGTERM set a stop event;
``asyncio.wait`` returns when it is set (or when the drain process dies, which
switches receiving to a thread); the timers are cancelled and awaited; in
``finally`` the drain hands over what it holds, the socket file is removed,
the last queued datagrams are handled and the state is saved with
``stopped_at`` (see ``Daemon.serve``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import sys
import time
from typing import Any, Awaitable, Callable, Coroutine, Mapping, Sequence

import orjson

from aipager import __version__, dtach
from aipager.proto import fsio, paths, trust
from aipager import claudefiles
from aipager.aio import cancel_and_wait, every
from aipager.daemon import (axstore, deepq, dialogkeys, edits, journal, lock, ordered, persist, render,
                            replies, requests, spool, tasks, transcript, worktree)
from aipager.daemon.audit import AuditFile
from aipager.daemon.core import DaemonCore
from aipager.daemon.events.session import end_session
from aipager.daemon.floorwatch import FloorPublisher
from aipager.daemon.ingest import DrainIngest, Ingest, bind_control_socket, recv_leftovers
from aipager.daemon.knobs import Knobs
from aipager.daemon.notifier import (FanoutNotifier, NoticeName, Notifier, Output,
                                     RecordingNotifier)
from aipager.daemon.model import Request, Session, State
from aipager.daemon.port import (Already, AnswerKind, ByHook, ByKeys, Gone, HostView, InTerminal,
                                 KeysFailed, Outcome, Refused, Who)
from aipager.daemon.registry import Registry
from aipager.daemon.terminal import ESCAPE, DtachIO, SessionIO, mark_discovered
from aipager.proto.errors import AipagerError, SessionNotFound, SettingsError
from aipager.policy import marker

log = logging.getLogger("aipager.daemon")

#: GIL switch interval while receiving on the fallback thread: the thread needs
#: the GIL for each recv, and the default 5 ms is 100 datagrams at 20,000/s
SWITCH_INTERVAL = 0.0005
#: seconds between dtach socket scans (a session's hooks name it at once; the scan finds
#: the ones that ended without a word, and who is attached)
DISCOVERY_SECONDS = 5.0
#: a received batch triggers a spool scan at most this often
SPOOL_MIN_GAP = 0.02
#: seconds between sweeps and time-based rules (a card changed by an event is flushed with
#: its batch; the tick redraws what only time changes: the elapsed seconds) and spool scans
#: (every received batch scans too: the tick catches what was spooled while nothing arrived)
TICK_SECONDS = 1.0
#: the state is written at most this often (immediately after a delivered answer)
SAVE_SECONDS = 1.0
#: a dialog reads keys this long after it is drawn (measured on 2.1.328: tui_keys.json)
DIALOG_SETTLE = 1.0
#: how long a question's answer waits for the dialog to be drawn
DIALOG_WAIT = 10.0
#: stops of one session this close together press Escape once
STOP_DEBOUNCE = 2.0
#: how long a model switch is watched for Claude Code saving it in its settings
MODEL_SAVE_WAIT = 10.0
#: a message typed into an idle session and not taken this long after its Enter was declined
#: by Claude Code (it submits at once; generous for a loaded machine)
DECLINE_SECONDS = 20.0


class LogNotifier:
    """Logs each output: the daemon's visible trace until the Telegram layer exists."""

    def emit(self, out: Output) -> None:
        if out.kind != "card":
            log.info("%s %s: %s", out.kind, out.session, out.text.replace("\n", " | ")[:300])


def _parses(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


class Daemon:
    """One running daemon.

    Args:
        env: where everything lives (``aipager.proto.paths``) and the knobs.
        notifier: where outputs go besides the log and the bounded in-memory record
            (the chat's ``ChatNotifier``).
        session_io: dtach access (default ``DtachIO``).
        services: extra long-running coroutines started with the daemon and
            cancelled at shutdown, each given the daemon (the Telegram bot's
            polling goes here next round).  One that fails is logged; the
            daemon keeps running.
    """

    def __init__(self, env: Mapping[str, str], *, notifier: Notifier | None = None,
                 session_io: SessionIO | None = None,
                 services: Sequence[Callable[[Daemon], Awaitable[None]]] = ()) -> None:
        self.env = dict(env)
        self.recorder = RecordingNotifier(maxlen=1000)
        self.notifier = FanoutNotifier([LogNotifier(), self.recorder, *([notifier] if notifier else [])])
        self.audit = AuditFile(paths.audit_log(self.env))
        #: every datagram accepted since the last save, so a hard kill loses none (``journal``)
        self.journal = journal.Journal(paths.journal_file(self.env))
        self.core = DaemonCore(self.notifier, knobs=Knobs.from_env(self.env), audit=self.audit,
                               read_ax_answer=lambda ident: axstore.last_answer(ident, self.env))
        self.session_io = session_io or DtachIO(self.env)
        self.socket_path = paths.socket_path(self.env)
        self.spool_dir = paths.spool_dir(self.env)
        #: datagrams the control socket queues when raised (``deepq``); None: the system's
        self.socket_queue: int | None = None
        self.started_at = time.time()
        self.stop_event = asyncio.Event()
        self._saved_version = -1
        self._saved_clients: dict[str, Any] = {}
        self._last_save = 0.0
        #: the last state-save failure logged (None: the last save worked)
        self._save_error: str | None = None
        self._last_spool = 0.0
        self._tasks: set[asyncio.Task] = set()
        self._services = tuple(services)
        #: the receiving thread, when the drain process could not run
        self.ingest_thread: Ingest | None = None
        #: more facts for the saved state, from services (the chat: its connection, unsent)
        self.facts: list[Callable[[], dict[str, Any]]] = []
        #: session → (mtime_ns, size) of its transcript when last read for an interruption
        self._transcripts: dict[str, tuple[int, int]] = {}
        #: publishes the owner's safety floor for the hook (at start, then on change)
        self.floor = FloorPublisher(self.env)
        #: what was wrong with the saved state at start (``persist.restore_saved``), or None
        self.state_error: str | None = None
        #: when Escape was last pressed per session (``stop_session``'s debounce)
        self._stopped: dict[str, float] = {}

    # -- state -------------------------------------------------------------

    def daemon_facts(self, stopped: bool = False) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": self.started_at,
            "stopped_at": time.time() if stopped else None,
            "socket": self.socket_path,
            "state_error": self.state_error,
            "policy_error": self.floor.problem or None,
            "journal_seq": self.journal.seq,
            "counters": {**self.core.counters, **self.core.ctx.counters,
                         "audit_failures": self.audit.failures,
                         # datagrams the receiving thread (drain fallback) had no room for
                         "ingest_overflow": self.ingest_thread.overflow
                         if self.ingest_thread is not None else 0},
            **self._client_facts(),
        }

    def _client_facts(self) -> dict[str, Any]:
        return {k: v for facts in self.facts for k, v in facts().items()}

    def save(self, *, force: bool = False, stopped: bool = False) -> None:
        reg = self.core.registry
        now = time.monotonic()
        # a client's facts changing is news too (the page's address once it listens, the
        # chat's connection): ``aipager status`` and ``aipager page`` read them there
        clients = self._client_facts()
        changed = reg.version != self._saved_version or clients != self._saved_clients
        due = reg.save_now or (changed and now - self._last_save >= SAVE_SECONDS)
        if not (force or due):
            return
        try:
            persist.save_state(self.env, reg, self.daemon_facts(stopped))
            # the state now holds every journaled datagram (nothing is fed in between)
            self.journal.saved()
        except OSError as exc:
            # retried every tick; logged once, then again only when the error changes (by
            # its kind and file: the temporary file's name differs each time)
            why = f"{exc.strerror or exc} ({paths.daemon_state_file(self.env)})"
            if why != self._save_error:
                log.error("cannot save the daemon state: %s", why)
                self._save_error = why
            return
        if self._save_error is not None:
            log.info("the daemon state is saved again")
            self._save_error = None
        reg.save_now = False
        self._saved_version = reg.version
        self._saved_clients = clients
        self._last_save = now

    # -- the port (``aipager.daemon.port``): what clients may ask -------------------------

    @property
    def sessions(self) -> Registry:
        return self.core.registry

    @property
    def remote(self) -> None:
        """Every session is this machine's own (a hub's port has hosts)."""
        return None

    async def answer_request(self, session: str, key: str, kind: AnswerKind, who: Who, *,
                             reason: str = "", suggestion: int | None = None,
                             edit: str | None = None) -> Outcome:
        """Answer permission request ``key`` of ``session`` (``replies.answer``): to the
        hook that waits, else with the terminal dialog's keys.

        Args:
            kind: ``allow``, ``allow_always``, ``deny`` or ``stop`` (deny and end the task).
            who: who answers (named by a deny's message, the verdict and the audit).
            reason: a deny's reason, handed to Claude (a reply to the request).
            suggestion: for ``allow_always``, which one of Claude Code's suggestions.
            edit: for ``allow``, the corrected command (Bash) or path: the call is
                allowed as edited, once the policy allows it (``edits``); else ``Refused``.

        Raises:
            ValueError: an unknown kind, or an edit with another kind than allow.
        """
        found = replies.find(self.core.ctx, session, key)
        sess, req = found if found is not None else (None, None)
        if req is not None and not req.answered and (
                (req.tool == "ExitPlanMode" and not req.reply_addr)
                or (req.terminal_only and kind != "stop")):
            # The plan dialog's keys differ with and without a plan file ("1" is auto mode
            # in one, "2" is No in the other), and auto mode's dialog has choices of its
            # own: only the waiting hook, or the terminal, answers those safely.
            return InTerminal()
        edited_input = None
        if edit is not None:
            if kind != "allow":
                msg = "only an allow takes an edit"
                raise ValueError(msg)
            if sess is None or req is None:
                return Gone()
            if req.answered:
                return Already()
            refused = self._refuse_edit(sess, req, who, edit)
            if isinstance(refused, Refused):
                return refused
            edited_input = refused
        try:
            result = replies.answer_found(self.core.ctx, found, kind, who.label,
                                          who_id=who.user_id, role=who.role, reason=reason,
                                          suggestion=suggestion, edited_input=edited_input)
        except ValueError as exc:
            if edited_input is None:
                raise
            return Refused(str(exc))
        self.save(force=True)
        if result == replies.NO_HOOK:
            return Refused("Claude Code no longer waits for this answer: an edited call "
                           "needs the waiting hook (answer it in the terminal)")
        if result == replies.ALREADY:
            return Already()
        if result == replies.GONE or sess is None or req is None:
            return Gone()
        if result == replies.VIA_KEYS:
            try:
                await self.session_io.press(session, dialogkeys.permission(kind))
            except AipagerError as exc:
                requests.unclaim(self.core.ctx, sess, req)
                return KeysFailed(str(exc))
            requests.keys_pressed(self.core.ctx, sess, req)
        if kind == "stop":
            try:
                await self.stop_session(session)
            except AipagerError as exc:
                log.warning("stop after deny failed: %s", exc)
        return ByHook() if result == replies.VIA_HOOK else ByKeys()

    def _refuse_edit(self, sess: Session, req: Request, who: Who, edit: str) -> dict | Refused:
        """The edited tool input, or why it may not run (audited as ``edit_refused``)."""
        if not req.reply_addr:
            return Refused("Claude Code no longer waits for this answer: an edited call "
                           "needs the waiting hook (answer it in the terminal)")
        try:
            edited_input = edits.edited(req.tool, req.tool_input, edit)
        except ValueError as exc:
            return Refused(str(exc))
        why = edits.refusal(self.env, sess.name, who.role, req.tool, edited_input,
                            req.cwd or sess.cwd or "")
        if why is None:
            return edited_input
        self.audit_action("edit_refused", who, session=sess.name, tool=req.tool,
                          edited_input=edited_input, reason=why)
        return Refused(f"the safety policy refuses the edited call: {why}")

    async def answer_question(self, session: str, key: str, who: Who,
                              answers: Sequence[dialogkeys.Answer] | None) -> Outcome:
        """Answer question ``key`` of ``session`` with ``answers`` (one per question), or
        decline it (None): its dialog's keys are pressed once it reads them."""
        sess = self.core.registry.get(session)
        req = next((r for r in sess.requests if r.key == key and r.kind == "question"),
                   None) if sess is not None else None
        if sess is None or req is None:
            return Gone()
        if req.answered:
            return Already()
        action = "question_decline" if answers is None else "question_answer"
        if answers is None:
            keys = dialogkeys.decline()
        else:
            asked = req.questions or [{"question": req.description, "options": req.options}]
            try:
                keys = dialogkeys.question_keys(asked, list(answers))
            except (ValueError, IndexError) as exc:
                msg = f"the answers do not fit the question: {exc}"
                raise ValueError(msg) from exc
        # claimed first: a second tap presses nothing, even while these keys go in
        requests.claim_for_keys(self.core.ctx, sess, req, action, who.label)
        await self._dialog_ready(req)
        try:
            await self.session_io.press(session, keys)
        except AipagerError as exc:
            requests.unclaim(self.core.ctx, sess, req)
            return KeysFailed(str(exc))
        requests.keys_pressed(self.core.ctx, sess, req)
        self.audit_action(action, who, session=session, tool="AskUserQuestion")
        return ByKeys()

    async def _dialog_ready(self, req: Request) -> None:
        """Wait until Claude Code shows the dialog and reads keys (``DIALOG_SETTLE`` after its
        PermissionRequest; at most ``DIALOG_WAIT`` when that event never comes)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DIALOG_WAIT
        while not req.dialog_at and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if req.dialog_at:
            left = req.dialog_at + DIALOG_SETTLE - self.core.registry.clock()
            if left > 0:
                await asyncio.sleep(min(left, DIALOG_SETTLE))

    async def start_session(self, label: str, *, resume_id: str = "", cwd: str = "",
                            mode: str = "") -> str:
        """Start session ``label`` in dtach in ``cwd`` (the same code as ``aipager session
        --detached``); returns its internal name.

        Raises:
            InvalidSessionName, SessionError: as ``dtach.create``.
        """
        bare = dtach.check_name(label)
        args = (("--resume", resume_id) if resume_id else ()) + (
            ("--permission-mode", mode) if mode else ())
        await asyncio.to_thread(dtach.create, self.env, bare, args=args, cwd=cwd or None)
        session = dtach.session_name(bare)
        reg = self.core.registry
        sess = reg.ensure(session)
        reg.revive(sess)  # a new process: whatever the registry knew of the name is over
        sess.socket_seen = True
        sess.cwd = sess.cwd or cwd
        reg.touch(sess)
        return session

    async def stop_session(self, session: str) -> bool:
        """Interrupt the running task: Escape, as Claude Code's TUI expects.  Stops within
        ``STOP_DEBOUNCE`` seconds press nothing (a burst of taps on ⏹ must not become a
        burst of keys); returns whether Escape was pressed."""
        now = time.monotonic()
        if now - self._stopped.get(session, -STOP_DEBOUNCE) < STOP_DEBOUNCE:
            return False
        self._stopped[session] = now
        await self.session_io.press(session, [ESCAPE])
        return True

    async def kill_session(self, label: str) -> bool:
        return await asyncio.to_thread(dtach.kill, self.env, label)

    async def session_changes(self, session: str, *, role: str,
                              user_id: int | None) -> worktree.Diff:
        sess = self.core.registry.get(session)
        if sess is None or not sess.cwd:
            raise SessionNotFound(f"session {session.removeprefix('claude-')} has no folder")
        from aipager.daemon import encode  # the policy's modules: loaded on first use

        allowed = encode.reads(self.env, role, user_id, cwd=sess.cwd)
        return await asyncio.to_thread(worktree.changes, sess.cwd, allowed)

    async def switch_model(self, session: str, model: str) -> None:
        """``/model NAME`` for this session alone: announced with aipager's marker (no
        "Switch model?" question), and Claude Code's user setting, which the switch
        rewrites, put back afterwards (``claudefiles.put_back_model``)."""
        sess = self.core.registry.get(session)
        if sess is not None and sess.claude_session_id:
            marker.write_modelswitch_marker(self.env, session, model, sess.claude_session_id)
        try:
            before = await asyncio.to_thread(claudefiles.model_setting, self.env)
        except SettingsError as exc:
            before = None
            log.warning("the model switch of %s may stay for later sessions: %s", session, exc)
        await self.session_io.type_text(session, f"/model {model}")
        if before is not None:
            self._spawn(self._put_back_model(before, model))

    async def _put_back_model(self, before: Any, model: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MODEL_SAVE_WAIT
        while loop.time() < deadline:
            await asyncio.sleep(0.2)
            try:
                if await asyncio.to_thread(claudefiles.put_back_model, self.env, before, model):
                    log.info("the model %s stays with its session: Claude Code's setting "
                             "put back", model)
                    return
            except SettingsError as exc:
                log.warning("cannot put Claude Code's model setting back: %s", exc)
                return

    async def type_prompt(self, session: str, text: str, *, note: Mapping[str, Any],
                          submitting: Callable[[], None] | None = None) -> None:
        """Type a person's message as a prompt with its permission note.

        The words cross into Claude Code in one encoded form (``policy.chatprompt``):
        a first line naming the sender, every ``@`` inert but the mentions this
        sender's rights allow as Reads (decided here, with this machine's policy and
        the session's folder).  ``DtachIO.type_prompt`` types nothing else;
        ``submitting`` runs right before its Enter.

        Raises:
            ValueError: nothing to send.
        """
        from aipager.daemon import encode

        sess = self.core.registry.get(session)
        encoded = encode.encode(self.env, text, note, cwd=sess.cwd if sess else "")
        await self.session_io.type_prompt(session, encoded.text,
                                          note={**note, "text": encoded.text},
                                          submitting=submitting)
        if sess is not None and sess.state == State.READY:
            # Claude was idle: Claude Code submits at once, or declined the text
            self._spawn(self._check_taken(session, note))

    async def _check_taken(self, session: str, note: Mapping[str, Any]) -> None:
        """A message typed into an idle session that Claude Code still has not taken after
        ``DECLINE_SECONDS`` was declined (it sits in the input box): the box is emptied, its
        note deleted (a late submission is then blocked by the hook as no message) and its
        author told on the message.  A busy session queues messages: not checked."""
        from aipager.policy import notes

        await asyncio.sleep(DECLINE_SECONDS)
        sess = self.core.registry.get(session)
        waiting = [n for n in notes.list_notes(self.env, session)
                   if isinstance(n.doc, dict) and n.doc.get("msg_id") == note.get("msg_id")
                   and n.doc.get("chat_id") == note.get("chat_id")]
        if not waiting or sess is None or sess.state != State.READY:
            return
        log.warning("Claude Code did not take a chat message in %s: cleared", session)
        for found in waiting:
            fsio.unlink_quiet(found.path)
        with contextlib.suppress(AipagerError, OSError):
            await self.session_io.press(session, [dtach.CLEAR_INPUT])
        self.drop_chat_message(session, note.get("msg_id", ""))
        self.core.ctx.notice(sess, NoticeName.NOT_TAKEN, render.not_taken(sess.label),
                             chat_id=note.get("chat_id"), msg_id=note.get("msg_id"))

    async def type_text(self, session: str, text: str) -> None:
        await self.session_io.type_text(session, text)

    def audit_action(self, action: str, who: Who, **fields: Any) -> None:
        """One audit record for something a client did, naming who (id, label, role)."""
        self.audit_chat(action, who=who.label, who_id=who.user_id, role=who.role, **fields)

    def set_previews(self, on: bool) -> None:
        """Make diff previews (a chat shows them only where they are turned on)."""
        reg = self.core.registry
        reg.knobs = dataclasses.replace(reg.knobs, diff_previews=on)

    def add_facts(self, facts: Callable[[], dict[str, Any]]) -> None:
        """More facts for the saved state (``aipager status``): a client's health."""
        self.facts.append(facts)

    def hosts(self) -> Sequence[HostView]:
        return ()  # one machine: its sessions need no host

    def queue_chat_message(self, session: str, msg_id: int | str, text: str, *,
                           chat_id: int | str = "", sender: str = "", held: bool = False,
                           held_for: str = "task") -> None:
        """A chat message for ``session``: typed now (👀 until Claude takes it) or, with
        ``held``, waiting for the task to end or (``held_for="dialog"``) for the open dialog
        to close (a ``release`` output says when)."""
        self.core.registry.queue_message(session, str(msg_id), text, chat_id=str(chat_id),
                                         sender=sender, held=held, held_for=held_for)
        self.save(force=True)

    def audit_chat(self, action: str, **fields: Any) -> None:
        """One audit record for something done from the chat (prompts, management)."""
        from aipager.daemon.audit import iso_seconds

        self.audit.write({"ts": iso_seconds(time.time()), "action": action, **fields})

    def drop_chat_message(self, session: str, msg_id: int | str) -> None:
        """Forget a queued chat message that could not be typed after all."""
        sess = self.core.registry.get(session)
        if sess is not None:
            sess.queue[:] = [m for m in sess.queue if m.msg_id != str(msg_id)]
            self.core.registry.touch(sess)

    # -- datagrams -----------------------------------------------------------

    def deliver(self, batch: list[bytes]) -> None:
        # journaled before handling: a hard kill from here on loses nothing
        first = self.journal.append(batch)
        feed = self.core.feed_bytes
        for seq, data in enumerate(batch, first):
            feed(data, seq)
        now = time.monotonic()
        if now - self._last_spool >= SPOOL_MIN_GAP:
            # A datagram arriving means hooks are firing: spooled ones may be waiting too.
            self.replay_spool()
        reg = self.core.registry
        if reg.flush_now:
            reg.flush_now = False
            self.core.flush_cards()
        elif reg.dirty:
            # a card already shown changes with its batch: the chat's outbox (which coalesces
            # the edits) and the page see it at once, not at the next tick
            self.core.flush_cards(shown_only=True)
        if reg.save_now or self.journal.due:
            self.save(force=self.journal.due)

    def replay_spool(self) -> int:
        """Feed spooled events (oldest first) and remove their files.

        Files older than ``spool.MAX_AGE`` (a daemon down for a long time) are
        removed unreplayed, counted as ``spool_stale`` and logged.
        """
        self._last_spool = time.monotonic()
        done = stale = 0
        now = time.time()
        for name in spool.pending(self.spool_dir):
            if spool.is_stale(name, now):
                stale += spool.discard(self.spool_dir, name)
                continue
            data = spool.take(self.spool_dir, name, _parses, keep=self._journal_one)
            if data is None:
                continue
            self.core.counters["spool_replayed"] += 1
            self.core.feed_bytes(data, self.journal.seq)  # journaled by ``take`` just now
            done += 1
        if stale:
            self.core.counters["spool_stale"] += stale
            log.warning("dropped %d spooled event(s) older than %d h without replaying them",
                        stale, spool.MAX_AGE // 3600)
        return done

    def _journal_one(self, data: bytes) -> None:
        self.journal.append([data])

    def replay_journal(self, after: int) -> int:
        """At start: feed what the last run accepted past its saved state (a hard kill)."""
        batch, top = journal.read(self.journal.path, after)
        self.journal.seq = max(self.journal.seq, top)
        for seq, data in batch:
            self.core.feed_bytes(data, seq, replayed=True)
        if batch:
            self.core.counters["journal_replayed"] += len(batch)
            log.warning("the last run ended without saving its state: %d accepted event(s) "
                        "replayed from the journal", len(batch))
        return len(batch)

    # -- loops ---------------------------------------------------------------

    async def _every(self, seconds: float, fn: Callable[[], Any]) -> None:
        await every(seconds, fn, log)

    async def _guard(self, service: Callable[[Daemon], Awaitable[None]]) -> None:
        try:
            await service(self)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a failing service must not stop ingest
            log.exception("daemon service %s failed", getattr(service, "__name__", service))

    async def discover(self) -> None:
        def look() -> tuple[dict[str, str], dict[str, bool]]:
            # one trip to a thread for both (each trip wakes two threads: it matters idle)
            live = self.session_io.discover()
            return live, self.session_io.attached(live)

        live, attached_now = await asyncio.to_thread(look)
        ctx = self.core.ctx
        reg = self.core.registry
        mark_discovered(reg, live, lambda sess, why: end_session(ctx, sess, why))
        for name in live:
            sess = reg.get(name)
            attached = attached_now.get(name, False)
            if sess is not None and sess.attached != attached:
                sess.attached = attached
                reg.touch(sess)

    async def recover_typing(self) -> None:
        """A crash while a chat message was pasted left it in an input box: it is
        cleared (the next message must not be glued on), its note deleted, and its
        author told, on the message itself."""
        for mark in await self.session_io.recover_typing():
            sess = self.core.registry.get(mark["session"])
            msg_id = mark.get("msg_id")
            log.warning("a half-typed chat message was cleared from %s", mark["session"])
            if sess is None or msg_id is None:
                continue
            self.drop_chat_message(sess.name, msg_id)
            self.core.ctx.notice(sess, NoticeName.TYPING_CUT, render.typing_cut(sess.label),
                                 chat_id=mark.get("chat_id"), msg_id=msg_id)

    def tick(self) -> None:
        self.replay_spool()
        for name in tasks.catch_interrupts(self.core.ctx, transcript.interrupted_at,
                                           self._transcript_changed):
            log.info("task of %s interrupted (seen in its transcript)", name)
        problem = self.floor.problem
        self.floor.check()
        self.core.tick()
        if len(self._transcripts) > len(self.core.registry.sessions):
            # stamps of forgotten sessions (``limits``): never more than one tick's worth
            self._transcripts = {k: v for k, v in self._transcripts.items()
                                 if k in self.core.registry.sessions}
        # a policy file that became unusable (or usable again) shows in `aipager status` at once
        self.save(force=self.floor.problem != problem)

    def _transcript_changed(self, sess: Any) -> bool:
        try:
            st = os.stat(sess.transcript_path)
        except OSError:
            return False
        stamp = (st.st_mtime_ns, st.st_size)
        if self._transcripts.get(sess.name) == stamp:
            return False
        self._transcripts[sess.name] = stamp
        return True

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _task_still_open(self, session: str) -> bool:
        try:
            from aipager.policy.snapshot import open_task
        except ImportError:
            return True  # cannot tell: leave the task to its own events
        return open_task(self.env, session)

    def _thread_ingest(self, sock: Any, loop: asyncio.AbstractEventLoop) -> Ingest:
        sys.setswitchinterval(SWITCH_INTERVAL)
        ingest = Ingest(sock, loop, self.deliver)
        ingest.start()
        self.ingest_thread = ingest
        return ingest

    async def serve(self) -> int:
        """Run until SIGINT/SIGTERM; returns the exit status (0).

        Shutdown order: timers stop, the drain hands over what it holds, the
        socket file is removed, then the datagrams the kernel still queues are
        taken and handled, the spool is replayed once more and the state saved.
        Removing the socket before that last read (not after) is what makes it
        the last read: nothing can be queued after it.
        """
        loop = asyncio.get_running_loop()
        # The control folder (the private one is made 0700, or refused as
        # another user's: UnsafePath), then the spool in it, which is only
        # used when it is ours: a foreign or symlinked one is logged, never chmod'ed.
        trust.make_folder(os.path.dirname(self.socket_path) or ".")
        refused = spool.prepare_folder(self.spool_dir)
        strangers = [] if refused else spool.foreign(self.spool_dir)
        if refused:
            log.error("spool not used, nothing replayed from it: %s", refused)
        elif strangers:
            log.error("spool %s holds %d file(s) that are not ours; they are never replayed",
                      self.spool_dir, len(strangers))
        restored = persist.restore_saved(self.env, self.core.registry)
        self.state_error = restored.problem
        self.journal.seq = restored.journal_seq
        self.floor.check()
        # What the last run accepted but never saved (killed hard) comes before the spool.
        self.replay_journal(restored.journal_seq)
        # What the hooks spooled while we were down comes first, in order; the
        # hooks keep spooling until the socket is bound, and the replay after
        # binding takes those.
        self.replay_spool()
        # Stops that still went missing (no spool folder then, or a full disk):
        # the saved conversations say which tasks ended; deliver those answers now.
        tasks.catch_up(self.core.ctx, transcript.finished_answer, self._task_still_open)
        # From here on an edit's diff is made in a thread, not on the loop (``ordered``).
        self.core.outputs.runner = ordered.thread_runner(loop, self._tasks)
        deep = self.env.get("AIPAGER_DEEP_QUEUE", "1") != "0"
        sock = bind_control_socket(self.socket_path, deepq.QUEUE_LEN if deep else None)
        self.socket_queue = deepq.QUEUE_LEN if deep and deepq.is_deep(sock) else None
        bound_ino = os.stat(self.socket_path).st_ino
        started = DrainIngest(
            sock, self.deliver, spool_dir=None if refused else self.spool_dir,
            sock_path=self.socket_path, executable=self.env.get("AIPAGER_DRAIN_EXE", "1") != "0")
        drain: DrainIngest | None = started
        thread: Ingest | None = None
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop_event.set)
        try:
            try:
                await started.start()
            except OSError as exc:
                log.error("cannot start the ingest drain (%s); receiving on a thread", exc)
                drain = None
                thread = self._thread_ingest(sock, loop)
            self.replay_spool()
            self.save(force=True)
            log.info("aipager daemon %s listening on %s", __version__, self.socket_path)
            stop = self._spawn(self.stop_event.wait())
            self._spawn(self._every(TICK_SECONDS, self.tick))
            self._spawn(self._every(DISCOVERY_SECONDS, self.discover))
            # Before the services: the chat types again what a kill cut off before its Enter,
            # and must not find the last run's mark (or be told the message was cut off).
            await self._guard(Daemon.recover_typing)
            for service in self._services:
                self._spawn(self._guard(service))
            failed = self._spawn(drain.failed.wait()) if drain else None
            while True:
                waiting = {stop} | ({failed} if failed else set())
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if stop in done:
                    break
                # The drain died: keep receiving on a thread instead.
                failed = None
                thread = self._thread_ingest(sock, loop)
        finally:
            # what is still being diffed goes out without its diff, in its place
            self.core.outputs.runner = None
            await cancel_and_wait(self._tasks)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            if drain is not None:
                await drain.stop()
            if thread is not None:
                thread.stop()
                thread.flush()
            with contextlib.suppress(OSError):
                if os.stat(self.socket_path).st_ino == bound_ino:
                    os.unlink(self.socket_path)
            self.deliver(recv_leftovers(sock))
            self.replay_spool()
            sock.close()
            self.core.flush_cards()
            self.save(force=True, stopped=True)
            self.journal.close()
            log.info("aipager daemon stopped")
        return 0


def _setup_logging(env: Mapping[str, str], verbose: bool) -> None:
    if logging.getLogger().handlers:
        return  # the caller (`aipager start`) configured logging already
    from aipager import logsetup

    logsetup.setup(env, verbose, stderr=verbose)


def run_daemon(env: Mapping[str, str], *, verbose: bool = False,
               compose: Callable[[Mapping[str, str]], Daemon] | None = None) -> int:
    """Run the daemon in the foreground until SIGINT/SIGTERM.

    Args:
        env: the environment deciding every path (``aipager.proto.paths``) and knob.
        verbose: also log to stderr, at debug level.
        compose: builds the daemon with its clients, inside the event loop (the
            composition root, ``aipager.main``); None runs it without any (tests, tools).

    Returns:
        The exit status (0 after a clean shutdown).

    Raises:
        DaemonAlreadyRunning: another daemon holds the lock or answers on the socket.
        DaemonError: the socket or the lock cannot be set up.
    """
    _setup_logging(env, verbose)
    fd = lock.acquire(paths.lock_file(env))
    try:
        return asyncio.run(_serve(env, compose or Daemon))
    finally:
        lock.release(fd)


async def _serve(env: Mapping[str, str], compose: Callable[[Mapping[str, str]], Daemon]) -> int:
    return await compose(env).serve()
