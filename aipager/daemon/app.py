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
import logging
import os
import signal
import sys
import time
from typing import Any, Awaitable, Callable, Coroutine, Mapping, Sequence

import orjson

from aipager import __version__, dtach
from aipager.agents import Agent
from aipager.proto import paths, trust
from aipager.aio import cancel_and_wait, every
from aipager.daemon import axstore, deepq, journal, lock, ordered, persist, sendfiles, spool, tasks, transcript
from aipager.texts import render
from aipager.port.model import State
from aipager.daemon.audit import AuditFile
from aipager.daemon.calls import PortCalls
from aipager.daemon.core import DaemonCore
from aipager.daemon.events.session import end_session
from aipager.daemon.floorwatch import FloorPublisher
from aipager.daemon.ingest import DrainIngest, Ingest, bind_control_socket, recv_leftovers
from aipager.daemon.knobs import Knobs
from aipager.port.outputs import (FanoutNotifier, NoticeName, Notifier, Output,
                                     RecordingNotifier)
from aipager.daemon.terminal import DtachIO, SessionIO, mark_discovered

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


class LogNotifier:
    """Logs each output but cards: the daemon's own trace, beside the chat and the page."""

    def emit(self, out: Output) -> None:
        if out.kind != "card":
            log.info("%s %s: %s", out.kind, out.session, out.text.replace("\n", " | ")[:300])


def _parses(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


class Daemon(PortCalls):
    """One running daemon: the process (its port's calls: ``calls.PortCalls``).

    Args:
        env: where everything lives (``aipager.proto.paths``) and the knobs.
        notifier: where outputs go besides the log and the bounded in-memory record
            (``main.compose``'s fan-out to the chat and the page; a joined host's link).
        session_io: dtach access (default ``DtachIO``).
        services: extra long-running coroutines started with the daemon and
            cancelled at shutdown, each given the daemon (the chat's polling, the
            page's server, a hub's link).  One that fails is logged; the
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
                               read_ax_answer=lambda ident: axstore.last_answer(ident, self.env),
                               take_files=lambda *args: sendfiles.take(self.env, *args))
        self.core.outputs.after = sendfiles.drop
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
        #: session → the title of the start dialog its chat was told of (``read_start``)
        self._start_dialogs: dict[str, str] = {}
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
        reg = self.core.registry
        # the sessions already seen with a socket, read on the loop before the trip
        seen = frozenset(s.name for s in reg if s.socket_seen)

        def look() -> tuple[dict[str, str], dict[str, bool], dict[str, Agent | None]]:
            # one trip to a thread for all three (each trip wakes two threads: it matters
            # idle); which agent runs behind a new socket is a walk of /proc, so off the loop
            live = self.session_io.discover()
            found = {sock: dtach.agent_of(sock) for name, sock in live.items()
                     if name not in seen}
            return live, self.session_io.attached(live), found

        live, attached_now, found = await asyncio.to_thread(look)
        ctx = self.core.ctx
        mark_discovered(reg, live, lambda sess, why: end_session(ctx, sess, why), found)
        for name in live:
            sess = reg.get(name)
            attached = attached_now.get(name, False)
            if sess is not None and sess.attached != attached:
                sess.attached = attached
                reg.touch(sess)
        for sess in [s for s in reg if s.name in live and s.state != State.GONE]:
            await self.read_start(sess.name)

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
        if len(self._start_dialogs) > len(self.core.registry.sessions):
            self._start_dialogs = {k: v for k, v in self._start_dialogs.items()
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
